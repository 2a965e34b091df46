// The backend-neutral array interface the dataset layer reads from. Zarr arrays implement it,
// and so does the GDAL backend (src/netcdf/gdal_array.hpp).
#pragma once
#include <atomic>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "lazycube/chunk_grid.hpp"
#include "lazycube/dtype.hpp"
#include "lazycube/ndarray.hpp"
#include "lazycube/util/buffer.hpp"

namespace lazycube {

class ChunkCache;

// Indices start, start+step, ..., count of them, along one dim. step may be negative; every
// index lies inside [0, dim size).
struct IndexRange {
  std::uint64_t start = 0;
  std::uint64_t count = 0;
  std::int64_t step = 1;

  static IndexRange all(std::uint64_t n) { return {0, n, 1}; }
  std::uint64_t at(std::uint64_t k) const {
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(start) +
                                      static_cast<std::int64_t>(k) * step);
  }
};
using ArraySelection = std::vector<IndexRange>;

// A per-element conversion a read applies as it copies elements out of each decoded chunk (CF
// decoding): the worker that decodes a chunk writes the converted values straight into the
// caller's output, so a converted read costs one pass and no second full-size buffer.
class ElementConversion {
 public:
  virtual ~ElementConversion() = default;
  virtual const DataType& input_dtype() const = 0;
  virtual const DataType& output_dtype() const = 0;
  // Converts `count` contiguous input elements at `src` into `count` output elements at `dst`.
  virtual void convert(const std::byte* src, std::uint64_t count, std::byte* dst) const = 0;
};

class Array {
 public:
  virtual ~Array() = default;

  // Path of the array inside its store ("" for a root array), for messages.
  virtual std::string path() const = 0;
  // Where it lives, for messages: "<store url>/<path>".
  virtual std::string describe() const = 0;
  virtual const Shape& shape() const = 0;
  virtual const DataType& dtype() const = 0;
  // The chunk shape as stored (outer shard shape for sharded Zarr v3 arrays). On a rectilinear
  // grid, per dim the largest chunk: chunk_grid() has the real boundaries.
  virtual const Shape& chunk_shape() const = 0;
  // The unit of independent decoding (inner chunk shape for sharded arrays); on a rectilinear
  // grid the largest, as chunk_shape().
  virtual const Shape& read_chunk_shape() const { return chunk_shape(); }
  // The grids of stored chunks and of read units (which differ for sharded arrays). Regular over
  // chunk_shape() and read_chunk_shape() unless the format says otherwise (Zarr's rectilinear
  // grids). Cheap to copy (shared).
  virtual ChunkGrid chunk_grid() const;
  virtual ChunkGrid read_grid() const;
  // Where a chunk starts along `dim`: 0, then each boundary, ascending (chunk_grid()'s, or the
  // parts' where the array joins parts with their own grids).
  virtual std::vector<std::uint64_t> chunk_starts(std::size_t dim) const;
  // Dimension names from metadata (_ARRAY_DIMENSIONS / dimension_names); empty entries when
  // unnamed, or an empty vector when the metadata has none.
  virtual const std::vector<std::string>& dimension_names() const = 0;
  virtual const nlohmann::json& attrs() const = 0;
  // The fill value as the dtype's native bytes (itemsize bytes; empty for vlen types).
  virtual const Buffer& fill_value_bytes() const = 0;
  // For variable-length types, the fill value as a string.
  virtual const std::string& fill_value_string() const = 0;
  // Whether the metadata set a fill value (Zarr v2 `null` does not: xarray then has no
  // _FillValue).
  virtual bool has_fill_value() const = 0;
  // Codec chain for display: a list of {"name", "configuration"} objects.
  virtual nlohmann::json codecs_json() const = 0;
  // The stored element type when reads widen it to dtype() (Zarr v3 bfloat16 / float8_* /
  // float6_* / float4_e2m1fn read as float32): its data_type name; "" when dtype() is what is
  // stored.
  virtual std::string stored_dtype() const { return {}; }

  // Reads `selection` (one IndexRange per dim) into `dest`, C order of the selection counts,
  // native endian; dest.size() must equal the element count times dtype().itemsize.
  virtual void read(const ArraySelection& selection, MutableByteView dest) const = 0;
  // read(), each element converted by `conversion` (input: dtype(); dest holds the selection in
  // conversion.output_dtype()). The default reads into a temporary and converts it in parallel;
  // chunked backends convert chunk by chunk on the decoding threads.
  virtual void read_converted(const ArraySelection& selection, MutableByteView dest,
                              const ElementConversion& conversion) const;
  // Variable-length types: one string per selected element, C order.
  virtual void read_strings(const ArraySelection& selection,
                            std::vector<std::string>& dest) const = 0;

  // Reads selections[i] into dests[i] for every i (each as read() would) through `cache`:
  // every chunk the selections touch is taken from the cache or fetched and decoded once
  // (network stores fetch all the missing ones in one batch), then each selection is copied
  // out of the decoded chunks. The default, for backends without chunk access, calls read().
  // With a disabled cache (budget 0) this reads each selection directly.
  virtual void read_cached(std::span<const ArraySelection> selections,
                           std::span<const MutableByteView> dests, ChunkCache& cache) const;
  // Fetch-ahead (BatchOptions::fetch_ahead_bytes). The distinct read units (chunk grid
  // indices) the selections touch, in the order they first touch them; none for backends
  // without chunk access, which then are not fetched ahead.
  virtual std::vector<std::vector<std::uint64_t>> read_units(std::span<const ArraySelection> selections) const;
  // Decoded bytes of the largest read unit, and of read unit `unit` (0 without chunk access).
  std::uint64_t read_unit_bytes() const;
  std::uint64_t read_unit_bytes(const std::vector<std::uint64_t>& unit) const;
  // Brings `units` into `cache` as read_cached would (network stores: one batch of requests,
  // each decoded on the pool as it arrives; units already cached or in flight are joined) and
  // returns their handles: holding them keeps the units pinned. Loads count as fetched ahead.
  // Once `*cancel` is true the loads not yet delivered are given up and this throws Cancelled
  // (readers that joined them load those units themselves).
  virtual std::vector<std::shared_ptr<const Buffer>> load_units(const std::vector<std::vector<std::uint64_t>>& units,
                                                                ChunkCache& cache,
                                                                const std::atomic<bool>* cancel = nullptr) const;
  // Fetch-ahead's look before it loads: the handles of those of `units` that `cache` holds now
  // (pinned while held, as load_units' are; nothing loaded, claimed or waited on, no hit
  // counted), and the others appended to `missing`, for load_units. The default, for backends
  // without chunk access: every unit missing.
  virtual std::vector<std::shared_ptr<const Buffer>> pin_cached(const std::vector<std::vector<std::uint64_t>>& units,
                                                                ChunkCache& cache,
                                                                std::vector<std::vector<std::uint64_t>>& missing) const;
  // Identity of the array's data for cache keys: the store's URL and the array path.
  virtual std::string cache_id() const { return describe(); }
  // The version of the array's data, for caches of what is computed from it (the forecast
  // validity index): it changes when the metadata or, as far as the store can tell, any chunk
  // changes (a local store: every file's version; a remote object store: the metadata's ETag;
  // Icechunk: the snapshot). "" when the store cannot tell, which such caches read as "do not
  // cache".
  virtual std::string data_version() const { return {}; }
  // Convenience: the selection into a fresh NDArray (either kind of dtype).
  NDArray read(const ArraySelection& selection) const;
  NDArray read_all() const;

 protected:
  // For read_converted implementations: checks the conversion's types and the destination's
  // size (UsageError naming the array) and returns the selection's element count.
  std::uint64_t converted_count(const ArraySelection& selection, MutableByteView dest,
                                const ElementConversion& conversion) const;
};

using ArrayPtr = std::shared_ptr<const Array>;

}  // namespace lazycube
