// A Zarr v2/v3 array: metadata plus the chunked read path.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>
#include <nlohmann/json.hpp>

#include "array_metadata.hpp"
#include "util/chunk_copy.hpp"
#include "lazycube/cache/chunked_array.hpp"
#include "lazycube/store/store.hpp"
#include "sharding_codec.hpp"

namespace lazycube::zarr {

// The element-grid copies of the read paths (lazycube/util/chunk_copy.hpp, shared with the
// GDAL backend and batch assembly).
using grid::block_region;
using grid::c_strides;
using grid::convert_region;
using grid::copy_region;
using grid::copy_region_strings;
using grid::DimIndex;
using grid::for_each_row;
using grid::Region;
using grid::UnitPieces;

class ZarrArray final : public ChunkedArray {
 public:
  // `missing_chunks_error`: an absent chunk is a MissingDataError instead of the fill value
  // (ZarrOptions::missing_chunks_error).
  ZarrArray(std::shared_ptr<Store> store, std::string path, ArrayMetadata metadata, bool missing_chunks_error = false);

  std::string path() const override { return path_; }
  std::string describe() const override;
  const Shape& shape() const override { return meta_.shape; }
  const DataType& dtype() const override { return meta_.dtype; }
  const Shape& chunk_shape() const override { return meta_.chunk_shape; }
  const Shape& read_chunk_shape() const override { return unit_shape_; }
  ChunkGrid chunk_grid() const override { return grid_; }
  ChunkGrid read_grid() const override { return unit_grid_; }
  const std::vector<std::string>& dimension_names() const override { return meta_.dimension_names; }
  const nlohmann::json& attrs() const override { return meta_.attrs; }
  const Buffer& fill_value_bytes() const override { return meta_.fill.bytes; }
  const std::string& fill_value_string() const override { return meta_.fill.string; }
  bool has_fill_value() const override { return meta_.fill.specified; }
  // Zarr v2: {"compressor", "filters"} as `.zarray` spells them; v3: the codec list.
  std::string stored_dtype() const override { return meta_.stored_dtype; }
  nlohmann::json codecs_json() const override {
    return meta_.v2_codecs.is_null() ? meta_.codecs.to_json() : meta_.v2_codecs;
  }
  const ArrayMetadata& metadata() const { return meta_; }

  void read(const ArraySelection& selection, MutableByteView dest) const override;
  void read_converted(const ArraySelection& selection, MutableByteView dest,
                      const ElementConversion& conversion) const override;
  void read_strings(const ArraySelection& selection, std::vector<std::string>& dest) const override;
  // describe(), except for memory stores, which all share one URL: their store id is added.
  std::string cache_id() const override;
  std::string data_version() const override;

  // Reads the encoded bytes of one read unit (a chunk, or an inner chunk of a shard) into `out`;
  // false when it is absent (read as fill). `what` receives a description for messages.
  bool fetch_unit(const std::vector<std::uint64_t>& unit, std::string& what, Buffer& out) const;
  const codec::CodecPipeline& unit_codecs() const { return *unit_codecs_; }

 private:
  struct ShardIndex {
    bool missing = false;  // the shard object does not exist
    std::vector<std::optional<ShardEntry>> entries;
  };
  // The sharding codec of `level` for the shard holding `unit`: the outer level's depends on
  // the shard's shape on a rectilinear grid (its index has one entry per inner chunk).
  const ShardingCodec& level_codec(std::size_t level, const std::vector<std::uint64_t>& unit) const;
  std::shared_ptr<const ShardIndex> shard_index(const ShardingCodec& codec, std::size_t level, const std::string& key,
                                                std::uint64_t offset, std::uint64_t length) const;
  std::shared_ptr<const ShardIndex> cache_shard_index(const ShardingCodec& codec, std::size_t level,
                                                     const std::string& key, std::uint64_t offset,
                                                     std::uint64_t length, std::optional<Buffer> bytes) const;
  ByteRange shard_index_range(const ShardingCodec& codec, std::size_t level, std::uint64_t offset,
                              std::uint64_t length) const;
  // The outer chunk (shard) grid index holding read unit `unit`.
  std::vector<std::uint64_t> shard_of(const std::vector<std::uint64_t>& unit) const;
  // The decoded chunk spec of read unit `unit`.
  codec::ChunkSpec unit_spec(const DimIndex& unit) const;
  // Where the encoded bytes of a read unit are (key and range), or nullopt when absent.
  std::optional<ByteRequest> locate_unit(const std::vector<std::uint64_t>& unit, std::string& what) const;
  std::string shard_key(const std::vector<std::uint64_t>& unit) const;
  void check_unit_bytes(const ByteRequest& where, const std::string& what, const Buffer& bytes) const;
  // Every read of a unit the store does not hold passes here: MissingDataError naming it when
  // missing_chunks is "error".
  void on_absent(const std::string& what) const;
  // Calls decode(encoded or nullptr when absent, what, unit, region) for every unit of a selection:
  // per worker for local stores, in get_each batches for stores that prefer batches.
  template <class Decode>
  void for_each_unit(const ArraySelection& selection, Decode&& decode) const;
  // Fetches the encoded bytes of units[i] for every i and calls sink(i, encoded or nullptr
  // when absent, what) on the thread pool: per unit for local stores; for stores that prefer
  // batches, in get_each batches, each unit as soon as its bytes arrive.
  using EncodedSink = std::function<void(std::size_t, const Buffer*, const std::string&)>;
  void fetch_encoded(std::span<const Unit> units, const EncodedSink& sink) const;
  // The planner's hook (ChunkedArray): fetch_encoded, each unit decoded by the sink's caller.
  void fetch_units(std::span<const Unit> units, const UnitSink& sink) const override;
  // Decodes one unit's encoded bytes (nullptr: absent, filled with the fill value) into `out`
  // (one whole unit); CodecError naming the unit and the array.
  void decode_unit(const Buffer* encoded, const std::string& what, const codec::ChunkSpec& spec,
                   MutableByteView out) const;
  // read() and read_converted() (conv null: elements copied as stored); dest already checked.
  void read_selection(const ArraySelection& selection, MutableByteView dest, const ElementConversion* conv) const;
  std::string chunk_key(const std::vector<std::uint64_t>& unit) const;
  void check_selection(const ArraySelection& selection) const override;
  template <class Task>
  void run_units(const ArraySelection& selection, Task&& task, bool parallel = true) const;

  std::shared_ptr<Store> store_;
  std::string path_;
  ArrayMetadata meta_;
  ChunkGrid grid_;       // stored chunks (shards when sharded)
  ChunkGrid unit_grid_;  // read units
  Shape unit_shape_;
  std::vector<const ShardingCodec*> shard_levels_;  // outermost first
  const codec::CodecPipeline* unit_codecs_;
  // The most bytes a stored read unit may hold (codec::CodecPipeline::max_encoded_size of the
  // unit's decoded size); 0: unknown (variable-length types). Bounds every unit's read.
  std::uint64_t unit_max_bytes_ = 0;
  bool missing_chunks_error_ = false;
  mutable std::mutex index_mutex_;
  mutable std::unordered_map<std::string, std::shared_ptr<const ShardIndex>> index_cache_;
  // Rectilinear shards: the outer sharding codec per shard shape (index_mutex_).
  mutable std::map<Shape, std::shared_ptr<const ShardingCodec>> shard_codecs_;
};

}  // namespace lazycube::zarr
