// NetCDF4/HDF5 → kerchunk references through the HDF5 C library: chunk addresses from
// H5Dget_chunk_info_by_coord (contiguous datasets are one chunk at H5Dget_offset), filters
// from the dataset creation property list, dims from the netCDF-4 dimension scales.
#include "lazycube/refs/hdf5_refs.hpp"

#include <hdf5.h>
#include <hdf5_hl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hdf5_chunk_layout.hpp"
#include "hdf5_handle.hpp"
#include "lazycube/error.hpp"
#include "util/text.hpp"
#include "util/hdf5_quiet.hpp"

namespace lazycube::refs {

namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view kPhonyDimension = "This is a netCDF dimension but not a netCDF variable";

// Attributes HDF5 and netCDF-4 use for their own bookkeeping (not user attributes).
bool is_internal_attribute(std::string_view name) {
  return name == "DIMENSION_LIST" || name == "REFERENCE_LIST" || name == "CLASS" || name == "NAME" ||
         name == "_Netcdf4Dimid" || name == "_Netcdf4Coordinates" || name == "_nc3_strict" ||
         name == "_NCProperties" || name == "_SuperblockVersion" || name == "_IsNetcdf4";
}

json number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

std::string basename_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string object_name(hid_t id) {
  const ssize_t n = H5Iget_name(id, nullptr, 0);
  if (n <= 0) return "";
  std::string name(static_cast<std::size_t>(n) + 1, '\0');
  H5Iget_name(id, name.data(), name.size());
  name.resize(static_cast<std::size_t>(n));
  return name;
}

// An attribute's value as JSON (one element → scalar); nullopt when its type is not numeric or
// text.
std::optional<json> attribute_value(hid_t obj, const char* name) {
  H5Attribute a(H5Aopen(obj, name, H5P_DEFAULT));
  if (!a.valid()) return std::nullopt;
  H5Type type(H5Aget_type(a.get()));
  H5Space space(H5Aget_space(a.get()));
  const hssize_t npoints = H5Sget_simple_extent_npoints(space.get());
  if (npoints < 0) return std::nullopt;
  const auto n = static_cast<std::size_t>(npoints);
  json values = json::array();
  switch (H5Tget_class(type.get())) {
    case H5T_FLOAT: {
      std::vector<double> v(n);
      if (n > 0 && H5Aread(a.get(), H5T_NATIVE_DOUBLE, v.data()) < 0) return std::nullopt;
      for (double x : v) values.push_back(number(x));
      break;
    }
    case H5T_INTEGER: {
      if (H5Tget_sign(type.get()) == H5T_SGN_NONE) {
        std::vector<unsigned long long> v(n);
        if (n > 0 && H5Aread(a.get(), H5T_NATIVE_ULLONG, v.data()) < 0) return std::nullopt;
        for (auto x : v) values.push_back(x);
      } else {
        std::vector<long long> v(n);
        if (n > 0 && H5Aread(a.get(), H5T_NATIVE_LLONG, v.data()) < 0) return std::nullopt;
        for (auto x : v) values.push_back(x);
      }
      break;
    }
    case H5T_STRING: {
      if (H5Tis_variable_str(type.get()) > 0) {
        std::vector<char*> v(n, nullptr);
        if (n > 0 && H5Aread(a.get(), type.get(), v.data()) < 0) return std::nullopt;
        for (char* s : v) values.push_back(s != nullptr ? std::string(s) : std::string());
        H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, v.data());
      } else {
        const std::size_t size = H5Tget_size(type.get());
        std::string buf(size * n, '\0');
        if (n > 0 && H5Aread(a.get(), type.get(), buf.data()) < 0) return std::nullopt;
        for (std::size_t i = 0; i < n; ++i) {
          std::string s = buf.substr(i * size, size);
          s.resize(std::strlen(s.c_str()));
          values.push_back(s);
        }
      }
      break;
    }
    default: return std::nullopt;
  }
  if (values.size() == 1) return values[0];
  return values;
}

struct AttrCollector {
  json attrs = json::object();
  std::vector<std::string> names;
};

herr_t collect_attribute_name(hid_t, const char* name, const H5A_info_t*, void* data) {
  static_cast<AttrCollector*>(data)->names.emplace_back(name);
  return 0;
}

// User attributes of `obj` (internal netCDF/HDF5 ones left out), in creation order when tracked.
json user_attributes(hid_t obj, const std::string& where, std::vector<std::string>& warnings) {
  AttrCollector c;
  hsize_t idx = 0;
  if (H5Aiterate2(obj, H5_INDEX_CRT_ORDER, H5_ITER_INC, &idx, collect_attribute_name, &c) < 0) {
    c.names.clear();
    idx = 0;
    H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_attribute_name, &c);
  }
  for (const auto& name : c.names) {
    if (is_internal_attribute(name)) continue;
    auto v = attribute_value(obj, name.c_str());
    if (!v) {
      warnings.push_back(where + ": attribute '" + name + "' left out (its type is neither numeric nor text)");
      continue;
    }
    c.attrs[name] = std::move(*v);
  }
  return c.attrs;
}

json fill_value(hid_t dcpl, hid_t type) {
  H5D_fill_value_t status{};
  if (H5Pfill_value_defined(dcpl, &status) < 0 || status == H5D_FILL_VALUE_UNDEFINED) return nullptr;
  switch (H5Tget_class(type)) {
    case H5T_FLOAT: {
      double v = 0;
      if (H5Pget_fill_value(dcpl, H5T_NATIVE_DOUBLE, &v) < 0) return nullptr;
      return number(v);
    }
    case H5T_INTEGER: {
      if (H5Tget_sign(type) == H5T_SGN_NONE) {
        unsigned long long v = 0;
        if (H5Pget_fill_value(dcpl, H5T_NATIVE_ULLONG, &v) < 0) return nullptr;
        return v;
      }
      long long v = 0;
      if (H5Pget_fill_value(dcpl, H5T_NATIVE_LLONG, &v) < 0) return nullptr;
      return v;
    }
    default: return nullptr;
  }
}

struct Scan {
  std::string target;
  json refs = json::object();
  std::vector<std::string> warnings;
};

// Dimension names from the attached netCDF-4 dimension scales ("phony_dim_K" when none).
herr_t scale_name(hid_t, unsigned, hid_t scale, void* data) {
  *static_cast<std::string*>(data) = basename_of(object_name(scale));
  return 1;  // the first scale is enough
}

json dimension_names(hid_t dset, int ndims, const std::string& own_name) {
  json dims = json::array();
  if (ndims == 1 && H5DSis_scale(dset) > 0) return json::array({own_name});
  for (int k = 0; k < ndims; ++k) {
    std::string name;
    if (H5DSget_num_scales(dset, static_cast<unsigned>(k)) > 0)
      H5DSiterate_scales(dset, static_cast<unsigned>(k), nullptr, scale_name, &name);
    dims.push_back(name.empty() ? "phony_dim_" + std::to_string(k) : name);
  }
  return dims;
}

std::string chunk_key(const std::string& var_key, std::span<const std::uint64_t> index) {
  return var_key + "/" + chunk_index_text(index);
}

void add_dataset(Scan& scan, hid_t dset, const std::string& key_prefix, const std::string& name) {
  const std::string var = key_prefix + name;
  if (auto n = attribute_value(dset, "NAME"); n && n->is_string() && n->get<std::string>().rfind(kPhonyDimension, 0) == 0)
    return;  // a dimension without a coordinate variable
  const Hdf5ChunkLayout layout = chunk_layout(dset, var);
  if (layout.dtype.empty()) {
    scan.warnings.push_back("variable '" + var + "' left out: its HDF5 type (variable-length, compound, enum...) has no Zarr v2 dtype here");
    return;
  }
  if (layout.layout == H5D_VIRTUAL || layout.layout == H5D_LAYOUT_ERROR) {
    scan.warnings.push_back("variable '" + var + "' left out: virtual datasets are not supported");
    return;
  }
  json codecs = layout.codecs;
  json compressor = nullptr;
  if (!codecs.empty() && codecs.back()["id"] == "zlib") {
    compressor = codecs.back();
    codecs.erase(codecs.size() - 1);
  }
  json zattrs = user_attributes(dset, "variable '" + var + "'", scan.warnings);
  H5Type type(H5Dget_type(dset));
  H5Plist dcpl(H5Dget_create_plist(dset));
  json fill = fill_value(dcpl.get(), type.get());
  // Without a _FillValue attribute the HDF5 fill is netCDF's "no fill" zero, not a missing-value
  // marker: read directly, zeros are data, but a Zarr v2 fill_value masks like _FillValue (in
  // xarray and here). null keeps them data; absent chunks still read as zero.
  if (!zattrs.contains("_FillValue") && fill.is_number() && fill.get<double>() == 0) fill = nullptr;
  json zarray = {{"chunks", layout.chunks},
                 {"compressor", compressor},
                 {"dtype", layout.dtype},
                 {"fill_value", fill},
                 {"filters", codecs.empty() ? json(nullptr) : codecs},
                 {"order", "C"},
                 {"shape", layout.shape},
                 {"zarr_format", 2}};
  zattrs["_ARRAY_DIMENSIONS"] = dimension_names(dset, static_cast<int>(layout.shape.size()), name);
  scan.refs[var + "/.zarray"] = zarray.dump();
  scan.refs[var + "/.zattrs"] = zattrs.dump();

  if (layout.layout == H5D_COMPACT) {  // the data lives in the object header: inline it
    H5Space space(H5Dget_space(dset));
    std::string raw(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space.get())) * layout.type_size, '\0');
    if (!raw.empty() && H5Dread(dset, type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()) < 0)
      throw MetadataError("variable '" + var + "': cannot read its compact data");
    scan.refs[chunk_key(var, std::vector<std::uint64_t>(layout.shape.size(), 0))] = "base64:" + base64_encode(raw);
    return;
  }
  for_each_stored_chunk(dset, layout, var, [&](const Hdf5StoredChunk& chunk) {
    if (chunk.filter_mask != 0)
      throw MetadataError("variable '" + var + "': chunk " + chunk_index_text(chunk.index) +
                          " skips some filters of the pipeline (filter mask " + std::to_string(chunk.filter_mask) +
                          "), which Zarr cannot express");
    scan.refs[chunk_key(var, chunk.index)] = json::array({scan.target, chunk.offset, chunk.size});
  });
}

herr_t collect_link_name(hid_t, const char* name, const H5L_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}

void add_group(Scan& scan, hid_t group, const std::string& key_prefix) {
  scan.refs[key_prefix + ".zgroup"] = json({{"zarr_format", 2}}).dump();
  const json attrs = user_attributes(group, key_prefix.empty() ? "the root group" : "group '" + key_prefix + "'",
                                     scan.warnings);
  scan.refs[key_prefix + ".zattrs"] = attrs.dump();
  std::vector<std::string> names;
  hsize_t idx = 0;
  H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_link_name, &names);
  for (const auto& name : names) {
    H5Object obj(H5Oopen(group, name.c_str(), H5P_DEFAULT));
    if (!obj.valid()) continue;  // a dangling link
    const H5I_type_t kind = H5Iget_type(obj.get());
    if (kind == H5I_GROUP) add_group(scan, obj.get(), key_prefix + name + "/");
    else if (kind == H5I_DATASET) add_dataset(scan, obj.get(), key_prefix, name);
  }
}

}  // namespace

Hdf5RefsResult make_hdf5_references(const std::string& path, const std::string& target) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NotFound("cannot open '" + path + "'");
  char magic[4] = {};
  in.read(magic, 4);
  if (in.gcount() == 4 && magic[0] == 'C' && magic[1] == 'D' && magic[2] == 'F' &&
      (magic[3] == 1 || magic[3] == 2 || magic[3] == 5))
    throw MetadataError("'" + path + "' is a classic netCDF file (CDF-" + std::to_string(static_cast<int>(magic[3])) +
                        "): classic netCDF is not supported by refs yet (only NetCDF4/HDF5)");
  quiet_hdf5_on_this_thread();  // errors become exceptions, not stderr noise
  if (H5Fis_hdf5(path.c_str()) <= 0)
    throw MetadataError("'" + path + "' is not a NetCDF4/HDF5 file");
  H5File file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file.valid()) throw MetadataError("cannot open '" + path + "' with HDF5");
  H5Object root(H5Oopen(file.get(), "/", H5P_DEFAULT));
  Scan scan;
  scan.target = target;
  add_group(scan, root.get(), "");
  const json out = {{"version", 1}, {"refs", std::move(scan.refs)}};
  return {out.dump(), std::move(scan.warnings)};
}

}  // namespace lazycube::refs
