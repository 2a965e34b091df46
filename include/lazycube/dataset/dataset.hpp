// Dataset: named variables sharing dims, with coordinates and attributes (xarray.Dataset).
// Opening reads metadata only; values are read by Variable::read().
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "lazycube/dataset/selection.hpp"
#include "lazycube/dataset/variable.hpp"
#include "lazycube/store/store.hpp"
#include "lazycube/unreadable_array.hpp"

namespace lazycube {

struct OpenOptions {
  StoreOptions storage_options;
  bool decode_cf = true;
  // A registered format's engine name ("zarr", "icechunk", "kerchunk", "gdal": NetCDF/HDF5/GRIB
  // through GDAL's multidimensional API), or "" to let the format registry recognise it
  // (lazycube/format/registry.hpp). Anything else is a UsageError listing the engines.
  std::string engine;
  // The formats' own options, one JSON object (docs/formats.md): Zarr's "consolidated" (null:
  // use consolidated metadata when present; true: require it; false: ignore it), Icechunk's
  // "branch" / "tag" / "snapshot" (the version read; at most one; default branch main) and
  // "virtual_chunk_containers" ({URL prefix: {storage option: value}}, the containers the user
  // authorises), Zarr's "missing_chunks" ("fill", the default, or "error": an absent chunk is a
  // MissingDataError naming it). A key no format takes, or one the format read does not take (a tag for a store
  // that holds no Icechunk repository), is a UsageError naming it.
  nlohmann::json format_options = nlohmann::json::object();
  // Opt-in CF valid range (netCDF4-python's rule, never xarray's): with decode_cf, stored values
  // outside valid_range / valid_min / valid_max become NaN and those attributes move to the
  // encoding. Off: they stay attributes and nothing is masked.
  bool mask_valid_range = false;
  // With decode_cf, as xarray's open_dataset: 'S1' character arrays read as strings along their
  // last dim (concat_characters), and which CF attributes make coordinates (decode_coords:
  // "coordinates" = xarray's True, "all" adds bounds, grid_mapping, formula_terms, ...; "" off).
  bool concat_characters = true;
  std::string decode_coords = "coordinates";
  // The node opened instead of the root: a group ("group1", "a/b/c") or an array path inside the
  // hierarchy, as xarray's `group=`. Formats with hierarchies (Zarr, Icechunk, kerchunk); with
  // the gdal engine a UsageError.
  std::string group;
  // Arrays of records (Zarr v3 `struct`): false (the default, as xarray's zarr engine shows a
  // structured dtype) reads each as one variable of whole records (NumPy structured dtype);
  // true replaces it by one variable per leaf field, named "<array>.<field>" ("rec.point.x" for
  // nested records), with the array's dims and attributes: what numeric consumers (CF decoding
  // of a field, batches, torch) need.
  bool struct_fields = false;
  // Variables left out, by name, as xarray's drop_variables: readable arrays and arrays
  // lazycube cannot read alike (Dataset::unreadable()).
  std::vector<std::string> drop_variables;
  // The unpacked type of scale_factor/add_offset variables (CF decoding, cf.hpp): "attributes"
  // (the default: xarray >= 2024.02, the type of the attributes) or "stored" (xarray < 2024.02:
  // the stored type alone; the xarray engine passes what the running xarray does).
  std::string scale_dtype_rule = "attributes";
};

class Dataset {
 public:
  Dataset() = default;
  // Builds a dataset from variables (in display order). Dims must agree in size across
  // variables (MetadataError naming the dim and both variables otherwise). Coordinates are
  // 1-D variables named like their dim plus names listed in a `coordinates` attribute.
  Dataset(std::vector<Variable> variables, nlohmann::json attrs);
  // The same, with `coords` (names of variables it holds) made coordinates too.
  Dataset(std::vector<Variable> variables, nlohmann::json attrs, const std::vector<std::string>& coords);

  // Dims in order of first appearance, with sizes.
  const std::vector<std::pair<std::string, std::uint64_t>>& dims() const { return dims_; }
  std::optional<std::uint64_t> dim_size(const std::string& dim) const;
  const nlohmann::json& attrs() const { return attrs_; }

  // All variable names (display order), coordinate names and data variable names.
  std::vector<std::string> variable_names() const;
  std::vector<std::string> coord_names() const;
  std::vector<std::string> data_var_names() const;
  bool contains(const std::string& name) const;
  bool is_coord(const std::string& name) const;
  // The variable (NotFound naming it and listing the available ones otherwise), with the
  // dataset's index coordinates attached for sel().
  const Variable& operator[](const std::string& name) const { return variable(name); }
  const Variable& variable(const std::string& name) const;

  // The named variables with the coordinates that go with them, as xarray's ds[[names]]: every
  // coordinate whose dims are all dims of the named variables. NotFound for an unknown name.
  Dataset subset(const std::vector<std::string>& names) const;
  // Applies to every variable having the dim; an unknown dim is a SelectionError.
  Dataset isel(const Indexers& indexers) const;
  Dataset sel(const LabelIndexers& labels, const SelOptions& options = {}) const;

  // The arrays of the store that lazycube cannot read (lazycube/unreadable_array.hpp), not
  // variables of the dataset: variable() of one throws its error naming it. Kept by isel/sel.
  const std::vector<UnreadableArray>& unreadable() const { return unreadable_; }
  void set_unreadable(std::vector<UnreadableArray> unreadable) { unreadable_ = std::move(unreadable); }
  // Throws the first unreadable array's error (its type; the message names every unreadable
  // array and its reason, then `advice`) when there is one.
  void require_readable(const std::string& advice = {}) const;

  // What xarray's decode_cf would warn about this dataset, in its words (decode_coords "all":
  // CF references naming variables the dataset lacks, malformed role lists); the xarray engine
  // gives them as UserWarnings.
  const std::vector<std::string>& cf_warnings() const { return cf_warnings_; }
  void set_cf_warnings(std::vector<std::string> warnings) { cf_warnings_ = std::move(warnings); }

 private:
  std::vector<std::string> order_;
  std::map<std::string, Variable> variables_;
  std::vector<std::string> coord_names_;
  std::vector<std::pair<std::string, std::uint64_t>> dims_;
  nlohmann::json attrs_ = nlohmann::json::object();
  std::vector<UnreadableArray> unreadable_;
  std::vector<std::string> cf_warnings_;

  void build();
};

// Opens what the format registry recognises at `url`: a Zarr group (each array a variable) or a
// single array (one variable named after the last path component), `options.group` below it;
// an Icechunk repository at the version the format options choose (branch main by default); a
// kerchunk reference set; or a NetCDF/HDF5/GRIB file through GDAL (each array of the file a
// variable, "group/var" for arrays in subgroups).
Dataset open(std::string_view url, const OpenOptions& options = {});
// The same over an already opened location (keeps the store at hand, e.g. for its stats());
// `options.storage_options` are not used. Formats recognised inside a store only (not gdal).
Dataset open(const Location& location, const OpenOptions& options = {});

// A variable over a whole array: dims from the metadata, _ARRAY_DIMENSIONS dropped from the
// attributes, CF decoding planned when `decode_cf` (the fill value acts as _FillValue for
// Zarr v2 only, as in xarray's zarr backend), valid range masking too when `mask_valid_range`
// (OpenOptions::mask_valid_range).
Variable variable_from_array(std::string name, ArrayPtr array, bool decode_cf, int zarr_format,
                             bool mask_valid_range = false);

// The variables of a dataset from its named arrays, decoded together as xarray's decode_cf does
// (`options`: decode_cf, mask_valid_range, concat_characters, decode_coords): character arrays,
// CF coordinate attributes, time bounds' units, and a coarser datetime64 unit for times that
// datetime64[ns] cannot hold. `attrs`: the dataset's attributes (loses `coordinates` when decoded).
Dataset decode_dataset(const std::vector<std::pair<std::string, ArrayPtr>>& arrays, nlohmann::json attrs,
                       int zarr_format, const OpenOptions& options);

// Dim names for an array: metadata names, falling back to dim_0, dim_1, ...
std::vector<std::string> dims_of(const Array& array);

}  // namespace lazycube
