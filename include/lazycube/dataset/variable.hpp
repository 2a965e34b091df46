// Variable: a named, dimensioned, lazily selected view of an Array (xarray.Variable /
// DataArray without the dataset around it). A cheap value type: copies share the immutable
// array and metadata, so Variables may be used from several threads at once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "lazycube/array.hpp"
#include "lazycube/dataset/cf.hpp"
#include "lazycube/dataset/selection.hpp"
#include "lazycube/ndarray.hpp"

namespace lazycube {

class Variable {
 public:
  Variable() = default;
  // A variable over the whole of `array`. `dims` has one name per array dimension; `cf` is
  // the decoding plan (CfDecoding::identity for raw access).
  Variable(std::string name, ArrayPtr array, std::vector<std::string> dims, CfDecoding cf);

  const std::string& name() const;
  // Dims and shape of the current selection (integer-selected dims are gone).
  const std::vector<std::string>& dims() const { return dims_; }
  Shape shape() const;
  std::size_t ndim() const { return dims_.size(); }
  std::uint64_t size() const { return shape_size(shape()); }
  // Size of dim `dim` in the selection; SelectionError when the variable lacks it.
  std::uint64_t dim_size(const std::string& dim) const;
  bool has_dim(const std::string& dim) const;

  // The dtype read() returns (CF-decoded when decoding is on) and the stored dtype.
  const DataType& dtype() const;
  const DataType& stored_dtype() const;
  // Visible attributes (CF attributes moved out when decoding) and the encoding
  // (scale_factor, add_offset, _FillValue, missing_value, units/calendar of decoded times,
  // dtype, chunks).
  const nlohmann::json& attrs() const;
  const nlohmann::json& encoding() const;
  const CfDecoding& cf() const;
  // Chunk shape per selected dim: the stored chunk size, in elements of the selection
  // (divided by |step|, at most the selected size).
  Shape chunks() const;
  // Where a stored chunk starts along the variable's dim `d` (its own indices, after any
  // selection): 0, then each index whose element lies in another chunk than the one before.
  std::vector<std::uint64_t> chunk_starts(std::size_t d) const;
  const ArrayPtr& array() const;
  // The selection handed to the array for read(): one IndexRange per array dim.
  ArraySelection array_selection() const;

  // Positional selection; composes with earlier selections; reads nothing.
  Variable isel(const Indexers& indexers) const;
  // Label selection through the 1-D index coordinates of the dims (attached by Dataset, or
  // the variable itself when it is a dimension coordinate). Reads the coordinate values.
  Variable sel(const LabelIndexers& labels, const SelOptions& options = {}) const;

  // The same selection read as stored: no CF decoding, the array's own attributes (what a copy
  // of the data writes, so that it decodes as this one does).
  Variable as_stored() const;
  // Reads the selection, CF-decoded (unless opened raw).
  NDArray read() const;
  // Reads the selection as stored: stored dtype, no masking or scaling.
  NDArray read_raw() const;
  // Reads the decoded selection into `dest` (size() * dtype().itemsize bytes; fixed-size
  // dtypes only).
  void read_into(MutableByteView dest) const;

  // Reads several windows of this variable, decoded, into dests[i] (each window's element
  // count times dtype().itemsize bytes): windows[i] holds one IndexRange per dim of the
  // selection (dims() order), relative to the selection. Through `cache` when given (the
  // chunks the windows share are fetched and decoded once), else directly.
  void read_windows_into(std::span<const ArraySelection> windows,
                         std::span<const MutableByteView> dests, ChunkCache* cache) const;
  // The array selection a window (as read_windows_into takes it) reads: which chunks a window
  // needs, for fetch-ahead.
  ArraySelection array_selection_of(const ArraySelection& window) const { return window_selection(window); }
  // The 1-D coordinate variables used by sel(), keyed by dim (set by Dataset).
  using IndexCoords = std::map<std::string, Variable>;
  Variable with_index_coords(std::shared_ptr<const IndexCoords> coords) const;
  // The index coordinate of `dim` restricted to this variable's selection of that dim, or
  // nullopt when there is none.
  std::optional<Variable> index_coord(const std::string& dim) const;

 private:
  struct Source;
  struct Axis {
    IndexRange range;
    bool dropped = false;
    std::string dim;
  };
  std::shared_ptr<const Source> source_;
  std::vector<Axis> axes_;         // one per array dimension
  std::vector<std::string> dims_;  // names of the kept axes
  std::shared_ptr<const IndexCoords> index_coords_;

  void refresh_dims();
  // The array selection of a window given relative to this selection (read_windows_into).
  ArraySelection window_selection(const ArraySelection& window) const;
  Axis* find_axis(const std::string& dim);
  const Axis* find_axis(const std::string& dim) const;
};

// The Indexer that a label selection means on a 1-D coordinate (values read from `coord`).
// SelectionError naming `dim` and the label when not found / not monotonic.
Indexer label_to_indexer(const Variable& coord, const std::string& dim, const LabelIndexer& label,
                         const SelOptions& options = {});

}  // namespace lazycube
