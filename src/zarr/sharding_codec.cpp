#include "sharding_codec.hpp"

#include <condition_variable>
#include <cstring>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>

#include "array_metadata.hpp"
#include "util/chunk_copy.hpp"
#include "lazycube/error.hpp"
#include "util/thread_pool.hpp"

namespace lazycube::zarr {

using grid::copy_block;
using grid::copy_block_strings;
using grid::unravel;

using nlohmann::json;

namespace {
constexpr std::uint64_t kEmpty = std::numeric_limits<std::uint64_t>::max();
}

ShardingCodec::ShardingCodec(const json& config, const codec::ChunkSpec& shard,
                             const std::string& where, const NarrowFloatFormat* narrow, const DataType* optional_inner)
    : shard_(shard), where_(where), narrow_(narrow), config_(config) {
  if (optional_inner != nullptr) optional_inner_ = *optional_inner;
  const std::string ctx = where + " (sharding_indexed)";
  inner_shape_ = parse_shape(require(config, "chunk_shape", ctx), "chunk_shape", ctx, false);
  if (inner_shape_.size() != shard.shape.size())
    throw MetadataError(ctx + ": chunk_shape has " + std::to_string(inner_shape_.size()) +
                        " dims, the shard has " + std::to_string(shard.shape.size()));
  num_inner_ = 1;
  for (std::size_t d = 0; d < inner_shape_.size(); ++d) {
    if (shard.shape[d] % inner_shape_[d] != 0)
      throw MetadataError(ctx + ": inner chunk_shape " + json(inner_shape_).dump() +
                          " does not divide the shard shape " + json(shard.shape).dump());
    per_shard_.push_back(shard.shape[d] / inner_shape_[d]);
    num_inner_ *= per_shard_.back();
  }
  inner_ = parse_v3_codecs(require(config, "codecs", ctx), {shard.dtype, inner_shape_}, ctx, narrow, optional_inner);

  index_spec_ = {DataType::uint(8), per_shard_};
  index_spec_.shape.push_back(2);
  json index_codecs = config.contains("index_codecs")
                          ? config["index_codecs"]
                          : json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}},
                                         {{"name", "crc32c"}}});
  index_codecs_ = parse_v3_codecs(index_codecs, index_spec_, ctx + " index");
  std::string loc = string_member(config, "index_location", ctx, "end");
  if (loc != "start" && loc != "end")
    throw MetadataError(ctx + ": index_location must be \"start\" or \"end\", got \"" + loc + "\"");
  index_at_end_ = loc == "end";
  // The index has a fixed encoded size (the spec requires fixed-size index codecs): measure it.
  codec::ChunkData empty;
  empty.bytes.resize(index_spec_.nbytes());
  std::memset(empty.bytes.data(), 0xff, empty.bytes.size());
  index_size_ = index_codecs_.encode(empty, index_spec_).size();
}

std::shared_ptr<const ShardingCodec> ShardingCodec::for_shard_shape(const Shape& shard_shape) const {
  return std::make_shared<ShardingCodec>(config_, codec::ChunkSpec{shard_.dtype, shard_shape}, where_, narrow_,
                                         optional_inner_ ? &*optional_inner_ : nullptr);
}

std::vector<std::optional<ShardEntry>> ShardingCodec::decode_index(ByteView encoded,
                                                                   std::uint64_t shard_size) const {
  Buffer raw(index_spec_.nbytes());
  index_codecs_.decode_into(encoded, index_spec_, raw.span());
  std::vector<std::optional<ShardEntry>> entries(num_inner_);
  for (std::uint64_t i = 0; i < num_inner_; ++i) {
    std::uint64_t off, n;
    std::memcpy(&off, raw.data() + 16 * i, 8);
    std::memcpy(&n, raw.data() + 16 * i + 8, 8);
    if (off == kEmpty && n == kEmpty) continue;
    if (off > shard_size || n > shard_size - off)
      throw CodecError("shard index entry " + std::to_string(i) + " (offset " + std::to_string(off) +
                       ", " + std::to_string(n) + " bytes) lies outside the shard of " +
                       std::to_string(shard_size) + " bytes");
    entries[i] = ShardEntry{off, n};
  }
  return entries;
}

void ShardingCodec::decode(ByteView in, const codec::ChunkSpec& spec, codec::ChunkData& out) const {
  if (in.size() < index_size_)
    throw CodecError("shard of " + std::to_string(in.size()) + " bytes is smaller than its index (" +
                     std::to_string(index_size_) + " bytes)");
  ByteView index_bytes = index_at_end_ ? in.subspan(in.size() - index_size_) : in.subspan(0, index_size_);
  auto entries = decode_index(index_bytes, in.size());
  const codec::ChunkSpec inner_spec{spec.dtype, inner_shape_};
  const bool vlen = spec.dtype.is_variable_length();
  if (vlen) out.strings.assign(spec.num_elements(), std::string());
  else {
    // Without a fill value at this level, empty inner chunks of a nested shard read as zero;
    // the array read path handles empty chunks at the top level with the array's fill value.
    out.bytes.resize(spec.nbytes());
    std::memset(out.bytes.data(), 0, out.bytes.size());
  }
  codec::ChunkData inner;
  for (std::uint64_t i = 0; i < num_inner_; ++i) {
    if (!entries[i]) continue;
    inner_.decode(in.subspan(entries[i]->offset, entries[i]->nbytes), inner_spec, inner);
    auto origin = unravel(i, per_shard_);
    for (std::size_t d = 0; d < origin.size(); ++d) origin[d] *= inner_shape_[d];
    if (vlen) copy_block_strings(inner.strings, inner_shape_, out.strings, spec.shape, origin, false);
    else copy_block(inner.bytes.view(), inner_shape_, out.bytes.span(), spec.shape, origin,
                    spec.dtype.itemsize, false);
  }
}

Buffer ShardingCodec::encode(const codec::ChunkData& in, const codec::ChunkSpec& spec) const {
  return *encode_skipping(in, spec, {});
}

std::optional<Buffer> ShardingCodec::encode_skipping(const codec::ChunkData& in, const codec::ChunkSpec& spec,
                                                     const InnerSkip& skip) const {
  if (spec.dtype.is_variable_length()) return encode_inner({}, &in, spec, skip);
  if (in.bytes.size() != spec.nbytes())
    throw CodecError("sharding_indexed: shard data holds " + std::to_string(in.bytes.size()) + " bytes, expected " +
                     std::to_string(spec.nbytes()));
  return encode_inner(in.bytes.view(), nullptr, spec, skip);
}

std::optional<Buffer> ShardingCodec::encode_skipping(ByteView fixed, const codec::ChunkSpec& spec,
                                                     const InnerSkip& skip) const {
  if (spec.dtype.is_variable_length() || fixed.size() != spec.nbytes())
    throw CodecError("sharding_indexed: shard data holds " + std::to_string(fixed.size()) + " bytes, expected " +
                     std::to_string(spec.nbytes()) + " of " + spec.dtype.name());
  return encode_inner(fixed, nullptr, spec, skip);
}

std::optional<Buffer> ShardingCodec::encode_inner(ByteView fixed, const codec::ChunkData* in,
                                                  const codec::ChunkSpec& spec, const InnerSkip& skip) const {
  const bool vlen = in != nullptr;
  Buffer out;
  const bool stored = assemble(
      [&](const Shape& origin, codec::ChunkData& block) {
        if (vlen) {
          block.strings.assign(shape_size(inner_shape_), std::string());
          copy_block_strings(in->strings, spec.shape, block.strings, inner_shape_,
                             grid::DimIndex(origin.begin(), origin.end()), true);
        } else {
          block.bytes.resize(shape_size(inner_shape_) * spec.dtype.itemsize);
          copy_block(fixed, spec.shape, block.bytes.span(), inner_shape_, grid::DimIndex(origin.begin(), origin.end()),
                     spec.dtype.itemsize, true);
        }
      },
      vlen, spec, skip, out);
  if (!stored && skip) return std::nullopt;
  return out;
}

bool ShardingCodec::encode_filled(const InnerFill& fill, const codec::ChunkSpec& spec, const InnerSkip& skip,
                                  Buffer& out) const {
  if (spec.dtype.is_variable_length())
    throw CodecError("sharding_indexed: " + spec.dtype.name() + " shards are encoded from their strings");
  const std::size_t block_bytes = shape_size(inner_shape_) * spec.dtype.itemsize;
  return assemble(
      [&](const Shape& origin, codec::ChunkData& block) {
        block.bytes.resize(block_bytes);
        fill(origin, block.bytes.span());
      },
      false, spec, skip, out);
}

bool ShardingCodec::assemble(const BlockOf& block_of, bool vlen, const codec::ChunkSpec& spec, const InnerSkip& skip,
                             Buffer& out) const {
  const codec::ChunkSpec inner_spec{spec.dtype, inner_shape_};
  codec::ChunkData index;
  index.bytes.resize(index_spec_.nbytes());
  // The encoded shard is assembled in `out` as inner chunks are encoded: room for every inner
  // chunk at its bound up front where the chain bounds it (pages never written cost nothing,
  // and a reused `out` is not moved again), else grown by doubling.
  std::uint64_t pos = index_at_end_ ? 0 : index_size_;
  std::uint64_t stored = 0;
  out.clear();
  if (const auto bound = vlen ? std::nullopt : max_encoded_size(spec)) out.resize(*bound);
  auto room = [&](std::uint64_t n) {
    if (pos + n > out.size()) out.resize(std::max<std::uint64_t>(pos + n, 2 * out.size()));
  };
  room(0);
  // Inner chunks are filled and encoded on the CPU pool, all threads on this shard (so that
  // they read the same source chunks while the cache holds them), and appended in index order:
  // each waits for the one before it to be appended, holding only its own encoded bytes.
  std::mutex mutex;
  std::condition_variable appended_cv;
  std::uint64_t appended = 0;  // inner chunks appended (or left out) so far, in order
  bool failed = false;
  parallel_for(num_inner_, [&](std::size_t i) {
    try {
      // One inner block per thread, reused across inner chunks and shards: a fresh one per
      // chunk costs the kernel zeroing its pages on first touch.
      thread_local codec::ChunkData block;
      auto at = unravel(i, per_shard_);
      Shape origin(at.begin(), at.end());
      for (std::size_t d = 0; d < origin.size(); ++d) origin[d] *= inner_shape_[d];
      block_of(origin, block);
      const bool left_out = skip && skip(origin, block);
      Buffer enc;
      if (!left_out) enc = vlen ? inner_.encode(block, inner_spec) : inner_.encode_fixed(block.bytes.view(), inner_spec);
      if (vlen) block.strings.clear();
      if (block.bytes.size() > (std::size_t{64} << 20)) block.bytes = Buffer();  // do not keep a huge one
      std::unique_lock lock(mutex);
      appended_cv.wait(lock, [&] { return appended == i || failed; });
      if (failed) return;  // parallel_for rethrows the first error
      const std::uint64_t n = left_out ? kEmpty : enc.size(), offset = left_out ? kEmpty : pos;
      std::memcpy(index.bytes.data() + 16 * i, &offset, 8);
      std::memcpy(index.bytes.data() + 16 * i + 8, &n, 8);
      if (!left_out) {
        ++stored;
        room(n);
        if (n) std::memcpy(out.data() + pos, enc.data(), n);
        pos += n;
      }
      ++appended;
      appended_cv.notify_all();
    } catch (...) {
      {
        std::lock_guard lock(mutex);
        failed = true;
      }
      appended_cv.notify_all();
      throw;
    }
  });
  if (stored == 0 && skip) {
    out.clear();
    return false;
  }
  const Buffer index_enc = index_codecs_.encode(index, index_spec_);
  if (index_at_end_) {
    room(index_enc.size());
    std::memcpy(out.data() + pos, index_enc.data(), index_enc.size());
    pos += index_enc.size();
  } else {
    std::memcpy(out.data(), index_enc.data(), index_enc.size());
  }
  out.resize(pos);
  return true;
}

std::optional<std::uint64_t> ShardingCodec::max_encoded_size(const codec::ChunkSpec& spec) const {
  const auto inner = inner_.max_encoded_size(codec::ChunkSpec{spec.dtype, inner_shape_});
  if (!inner) return std::nullopt;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  if (num_inner_ != 0 && *inner > (kMax - index_size_) / num_inner_) return kMax;
  return *inner * num_inner_ + index_size_;
}

json ShardingCodec::to_json() const {
  json c = config_;
  c["codecs"] = inner_.to_json();
  c["index_codecs"] = index_codecs_.to_json();
  c["index_location"] = index_at_end_ ? "end" : "start";
  return {{"name", "sharding_indexed"}, {"configuration", c}};
}

}  // namespace lazycube::zarr
