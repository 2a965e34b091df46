// The v3 `sharding_indexed` codec. Full-shard encode/decode lives here; the array read path
// uses the index helpers to fetch only the inner chunks a selection needs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lazycube/codec/codec.hpp"
#include "lazycube/ndarray.hpp"

namespace lazycube::zarr {

struct NarrowFloatFormat;

// One index entry: where an inner chunk's bytes lie inside the shard (nullopt: empty chunk).
struct ShardEntry {
  std::uint64_t offset;
  std::uint64_t nbytes;
};

class ShardingCodec final : public codec::ArrayToBytesCodec {
 public:
  // `shard` is the spec of a whole shard (the outer chunk).
  // `narrow`: the inner chunks' elements are stored in that format (see parse_v3_codecs).
  // `optional_inner`: the array has the optional data type of that inner type.
  ShardingCodec(const nlohmann::json& config, const codec::ChunkSpec& shard, const std::string& where,
                const NarrowFloatFormat* narrow = nullptr, const DataType* optional_inner = nullptr);

  std::string name() const override { return "sharding_indexed"; }
  void decode(ByteView in, const codec::ChunkSpec& spec, codec::ChunkData& out) const override;
  Buffer encode(const codec::ChunkData& in, const codec::ChunkSpec& spec) const override;
  // encode(), leaving out the inner chunks for which `skip` (given an inner chunk's first
  // element within the shard and its decoded data) is true: their index entries mark them
  // empty, as zarr-python does for chunks that hold only the fill value or lie past the array's
  // end. nullopt when every inner chunk was left out (no shard to store).
  using InnerSkip = std::function<bool(const Shape& origin, const codec::ChunkData& inner)>;
  std::optional<Buffer> encode_skipping(const codec::ChunkData& in, const codec::ChunkSpec& spec,
                                        const InnerSkip& skip) const;
  // The same for a fixed-size shard held in the caller's memory (exactly spec.nbytes() bytes):
  // no copy of the shard is made.
  std::optional<Buffer> encode_skipping(ByteView fixed, const codec::ChunkSpec& spec, const InnerSkip& skip) const;
  // The same for a fixed-size shard never held whole: `fill(origin, block)` writes the inner
  // chunk whose first element within the shard is `origin` into `block` (its bytes, C order),
  // called on the CPU pool (several at once); each is encoded and appended to `out` in order.
  // `out` (resized to the encoded shard) keeps its memory across calls: a caller writing many
  // shards reuses one. false when every inner chunk was left out (`out` is then empty).
  using InnerFill = std::function<void(const Shape& origin, MutableByteView block)>;
  bool encode_filled(const InnerFill& fill, const codec::ChunkSpec& spec, const InnerSkip& skip, Buffer& out) const;
  std::optional<std::uint64_t> encoded_size(const codec::ChunkSpec&) const override {
    return std::nullopt;
  }
  // Every inner chunk at its bound, and the index.
  std::optional<std::uint64_t> max_encoded_size(const codec::ChunkSpec& spec) const override;
  nlohmann::json to_json() const override;

 private:
  // encode_skipping over `fixed` (fixed-size types) or `in` (variable-length).
  std::optional<Buffer> encode_inner(ByteView fixed, const codec::ChunkData* in, const codec::ChunkSpec& spec,
                                     const InnerSkip& skip) const;
  // The shard assembly under both: `block_of(origin, block)` sets `block` to one inner chunk
  // (on the CPU pool); the encoded inner chunks are appended to `out` in index order, the index
  // placed last (or first). false when every inner chunk was left out.
  using BlockOf = std::function<void(const Shape& origin, codec::ChunkData& block)>;
  bool assemble(const BlockOf& block_of, bool vlen, const codec::ChunkSpec& spec, const InnerSkip& skip,
                Buffer& out) const;

 public:
  // The same codec for shards of another shape (a rectilinear grid's shards differ in shape,
  // and with it the index). MetadataError when the inner chunks do not divide `shard_shape`.
  std::shared_ptr<const ShardingCodec> for_shard_shape(const Shape& shard_shape) const;
  const Shape& shard_shape() const { return shard_.shape; }
  const Shape& inner_chunk_shape() const { return inner_shape_; }
  // Inner chunks per shard along each dim.
  const Shape& chunks_per_shard() const { return per_shard_; }
  std::uint64_t num_inner_chunks() const { return num_inner_; }
  const codec::CodecPipeline& inner_codecs() const { return inner_; }
  bool index_at_end() const { return index_at_end_; }
  // Encoded byte size of the index.
  std::uint64_t index_size() const { return index_size_; }
  // Decodes and checks an encoded index against a shard (or sub-range) of `shard_size` bytes;
  // one entry per inner chunk in C order. Throws CodecError on a bad checksum or an entry
  // that points outside the shard.
  std::vector<std::optional<ShardEntry>> decode_index(ByteView encoded, std::uint64_t shard_size) const;

 private:
  codec::ChunkSpec shard_;
  std::string where_;
  const NarrowFloatFormat* narrow_ = nullptr;
  std::optional<DataType> optional_inner_;
  Shape inner_shape_;
  Shape per_shard_;
  std::uint64_t num_inner_ = 0;
  codec::CodecPipeline inner_;
  codec::CodecPipeline index_codecs_;
  codec::ChunkSpec index_spec_;
  bool index_at_end_ = true;
  std::uint64_t index_size_ = 0;
  nlohmann::json config_;
};

}  // namespace lazycube::zarr
