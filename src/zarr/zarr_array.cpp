#include "zarr_array.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "util/chunk_copy.hpp"
#include "util/hash.hpp"
#include "lazycube/error.hpp"
#include "util/thread_pool.hpp"

namespace lazycube::zarr {

namespace {

// Fills a region of the destination with a repeated element.
void fill_region(std::byte* dst, const Shape& dst_shape, const Region& r, const Buffer& value) {
  const std::size_t item = value.size();
  for_each_row(r, dst_shape, dst_shape, [&](std::uint64_t, std::uint64_t dofs, std::uint64_t n, std::int64_t) {
    std::byte* p = dst + dofs * item;
    if (item == 1) {
      std::memset(p, static_cast<int>(value.data()[0]), n);
      return;
    }
    bool zero = true;
    for (std::size_t b = 0; b < item; ++b) zero = zero && value.data()[b] == std::byte{0};
    if (zero) {
      std::memset(p, 0, n * item);
      return;
    }
    for (std::uint64_t i = 0; i < n; ++i) std::memcpy(p + i * item, value.data(), item);
  });
}

// The unit's block lies in `dest` as one contiguous run: leading dims of extent 1, then one
// dim of any extent, then dims covering the destination's full extent.
bool contiguous_in_dest(const Region& r, const Shape& dst_shape) {
  std::size_t d = 0;
  while (d < r.count.size() && r.count[d] == 1) ++d;
  for (std::size_t e = d + 1; e < r.count.size(); ++e)
    if (r.count[e] != dst_shape[e]) return false;
  return true;
}

std::string index_str(const std::vector<std::uint64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

ZarrArray::ZarrArray(std::shared_ptr<Store> store, std::string path, ArrayMetadata metadata, bool missing_chunks_error)
    : store_(std::move(store)), path_(std::move(path)), meta_(std::move(metadata)),
      missing_chunks_error_(missing_chunks_error) {
  grid_ = meta_.chunk_grid();
  unit_shape_ = meta_.chunk_shape;
  unit_codecs_ = &meta_.codecs;
  // Descend through (nested) sharding: the read unit is the innermost chunk.
  while (auto* s = dynamic_cast<const ShardingCodec*>(unit_codecs_->array_to_bytes.get())) {
    shard_levels_.push_back(s);
    unit_shape_ = s->inner_chunk_shape();
    unit_codecs_ = &s->inner_codecs();
  }
  if (shard_levels_.empty()) {
    unit_grid_ = grid_;
  } else {
    // Shards on a rectilinear grid: the inner chunks stay regular over the whole array, so every
    // shard but the last along a dim must hold whole inner chunks (and decode to whole ones).
    const Shape& inner = shard_levels_.front()->inner_chunk_shape();
    for (std::size_t d = 0; d < grid_.rank(); ++d) {
      if (grid_.is_regular(d)) continue;
      for (std::uint64_t c = 0; c < grid_.count(d); ++c) {
        const std::uint64_t edge = grid_.length(d, c), decoded = grid_.decoded_length(d, c);
        if ((edge % inner[d] != 0 && c + 1 < grid_.count(d)) || decoded % inner[d] != 0)
          throw MetadataError(describe() + ": shard " + std::to_string(c) + " along dim " + std::to_string(d) +
                              " of the rectilinear chunk_grid is " + std::to_string(edge) + " long (decoded " +
                              std::to_string(decoded) + "), not a whole number of the sharding codec's inner chunks (" +
                              std::to_string(inner[d]) + ")");
      }
    }
    unit_grid_ = ChunkGrid::regular(meta_.shape, unit_shape_);
  }
  try {
    unit_max_bytes_ = unit_codecs_->max_encoded_size(codec::ChunkSpec{meta_.dtype, unit_shape_}).value_or(0);
  } catch (const Error&) {
    unit_max_bytes_ = 0;  // no bound rather than no array: decoding reports what is wrong
  }
}

std::string ZarrArray::describe() const { return store_->describe(path_); }

std::string ZarrArray::chunk_key(const std::vector<std::uint64_t>& chunk) const {
  std::string key = meta_.key_encoding.key(chunk);
  return path_.empty() ? key : path_ + "/" + key;
}

const ShardingCodec& ZarrArray::level_codec(std::size_t level, const std::vector<std::uint64_t>& unit) const {
  const ShardingCodec& regular = *shard_levels_[level];
  if (level > 0 || grid_.is_regular()) return regular;
  const Shape shape = grid_.decoded_shape(shard_of(unit));
  if (shape == regular.shard_shape()) return regular;
  std::lock_guard lock(index_mutex_);
  auto& codec = shard_codecs_[shape];
  if (!codec) codec = regular.for_shard_shape(shape);
  return *codec;
}

std::vector<std::uint64_t> ZarrArray::shard_of(const std::vector<std::uint64_t>& unit) const {
  std::vector<std::uint64_t> shard(unit.size());
  for (std::size_t d = 0; d < unit.size(); ++d) shard[d] = grid_.index_of(d, unit[d] * unit_shape_[d]);
  return shard;
}

codec::ChunkSpec ZarrArray::unit_spec(const DimIndex& unit) const {
  if (unit_grid_.is_regular()) return {meta_.dtype, unit_shape_};
  return {meta_.dtype, unit_grid_.decoded_shape(unit)};
}

std::shared_ptr<const ZarrArray::ShardIndex> ZarrArray::shard_index(const ShardingCodec& codec, std::size_t level,
                                                                    const std::string& key,
                                                                    std::uint64_t offset,
                                                                    std::uint64_t length) const {
  const std::string cache_key = std::to_string(level) + "@" + std::to_string(offset) + "@" + key;
  {
    std::lock_guard lock(index_mutex_);
    if (auto it = index_cache_.find(cache_key); it != index_cache_.end()) return it->second;
  }
  const std::uint64_t isz = codec.index_size();
  std::optional<Buffer> bytes;
  if (level == 0) {
    bytes = store_->get(key, shard_index_range(codec, 0, 0, 0));
  } else {
    if (length < isz)
      throw CodecError("nested shard in '" + key + "' at offset " + std::to_string(offset) +
                       " is smaller than its index");
    bytes = store_->get(key, shard_index_range(codec, level, offset, length));
  }
  return cache_shard_index(codec, level, key, offset, length, std::move(bytes));
}

ByteRange ZarrArray::shard_index_range(const ShardingCodec& codec, std::size_t level, std::uint64_t offset,
                                       std::uint64_t length) const {
  const std::uint64_t isz = codec.index_size();
  if (level == 0) return codec.index_at_end() ? ByteRange::suffix(isz) : ByteRange::range(0, isz);
  return ByteRange::range(codec.index_at_end() ? offset + length - isz : offset, isz);
}

std::shared_ptr<const ZarrArray::ShardIndex> ZarrArray::cache_shard_index(const ShardingCodec& codec, std::size_t level,
                                                                          const std::string& key, std::uint64_t offset,
                                                                          std::uint64_t length,
                                                                          std::optional<Buffer> bytes) const {
  const std::string cache_key = std::to_string(level) + "@" + std::to_string(offset) + "@" + key;
  const std::uint64_t isz = codec.index_size();
  auto index = std::make_shared<ShardIndex>();
  if (!bytes) {
    index->missing = true;
  } else {
    if (bytes->size() != isz)
      throw CodecError("shard '" + store_->describe(key) + "' is " + std::to_string(bytes->size()) +
                       " bytes, too small for its " + std::to_string(isz) + "-byte index");
    try {
      index->entries = codec.decode_index(bytes->view(), level == 0 ? std::numeric_limits<std::uint64_t>::max() : length);
    } catch (const CodecError& e) {
      throw CodecError("shard index of '" + store_->describe(key) + "': " + e.what());
    }
    if (level > 0)  // nested offsets are relative to the sub-shard
      for (auto& e : index->entries)
        if (e) e->offset += offset;
  }
  std::lock_guard lock(index_mutex_);
  if (index_cache_.size() > 4096) index_cache_.clear();  // bounded; the chunk cache owns reuse
  index_cache_[cache_key] = index;
  return index;
}

std::optional<ByteRequest> ZarrArray::locate_unit(const std::vector<std::uint64_t>& unit, std::string& what) const {
  if (shard_levels_.empty()) {
    std::string key = chunk_key(unit);
    what = "chunk '" + key + "'";
    ByteRequest request{std::move(key), ByteRange::full()};
    request.max_bytes = unit_max_bytes_;
    return request;
  }
  // Outer shard grid index, then walk down the levels.
  const std::vector<std::uint64_t> shard = shard_of(unit);
  std::string key = chunk_key(shard);
  what = "inner chunk " + index_str(unit) + " of shard '" + key + "'";
  std::uint64_t offset = 0, length = 0;
  Shape level_shape = meta_.chunk_shape;
  for (std::size_t level = 0; level < shard_levels_.size(); ++level) {
    const ShardingCodec& codec = level_codec(level, unit);
    auto index = shard_index(codec, level, key, offset, length);
    if (index->missing) return std::nullopt;
    // Position of the next-level chunk inside this (sub-)shard, C order. Shards start where the
    // grid says (rectilinear grids: anywhere on the inner chunks' grid); sub-shards at multiples.
    std::uint64_t linear = 0;
    for (std::size_t d = 0; d < unit.size(); ++d) {
      const std::uint64_t elem = unit[d] * unit_shape_[d];
      const std::uint64_t within = level == 0 ? elem - grid_.start(d, shard[d]) : elem % level_shape[d];
      const std::uint64_t local = within / codec.inner_chunk_shape()[d];
      linear = linear * codec.chunks_per_shard()[d] + local;
    }
    const auto& entry = index->entries[linear];
    if (!entry) return std::nullopt;
    offset = entry->offset;
    length = entry->nbytes;
    level_shape = codec.inner_chunk_shape();
  }
  if (unit_max_bytes_ != 0 && length > unit_max_bytes_)
    throw CodecError(what + ": the shard index gives it " + std::to_string(length) + " bytes, more than the " +
                     std::to_string(unit_max_bytes_) + " bytes its encoded-size bound from the array metadata allows");
  ByteRequest request{std::move(key), ByteRange::range(offset, length)};
  request.max_bytes = unit_max_bytes_;
  return request;
}

std::string ZarrArray::shard_key(const std::vector<std::uint64_t>& unit) const { return chunk_key(shard_of(unit)); }

void ZarrArray::check_unit_bytes(const ByteRequest& where, const std::string& what, const Buffer& bytes) const {
  if (where.range.kind == ByteRange::Kind::Range && bytes.size() != where.range.length)
    throw CodecError(what + ": shard is truncated (index says " + std::to_string(where.range.length) +
                     " bytes at offset " + std::to_string(where.range.offset) + ", got " +
                     std::to_string(bytes.size()) + ")");
}

void ZarrArray::on_absent(const std::string& what) const {
  if (missing_chunks_error_)
    throw MissingDataError(what + " of " + describe() +
                           " is not in the store (missing_chunks=\"error\"; with \"fill\" it reads as the fill value)");
}

bool ZarrArray::fetch_unit(const std::vector<std::uint64_t>& unit, std::string& what, Buffer& out) const {
  auto where = locate_unit(unit, what);
  if (!where) {
    on_absent(what);
    return false;
  }
  if (!store_->read_into(*where, out)) {
    if (shard_levels_.empty()) {
      on_absent(what);
      return false;
    }
    throw StoreError(store_->describe(where->key) + " disappeared while reading");
  }
  check_unit_bytes(*where, what, out);
  return true;
}

template <class Decode>
void ZarrArray::for_each_unit(const ArraySelection& sel, Decode&& decode) const {
  if (!store_->prefers_batches()) {
    // Local stores: each worker fetches and decodes its own units (no batching overhead).
    run_units(sel, [&](const DimIndex& unit, const Region& r) {
      std::string what;
      thread_local Buffer encoded;  // reused: no fresh allocation per chunk
      const bool present = fetch_unit(std::vector<std::uint64_t>(unit.begin(), unit.end()), what, encoded);
      decode(present ? &encoded : nullptr, what, unit, r);
    });
    return;
  }
  // Network stores: list the units, then fetch them in batches (fetch_encoded).
  std::vector<std::vector<std::uint64_t>> units;
  std::vector<Region> regions;
  run_units(sel, [&](const DimIndex& unit, const Region& r) {
    units.emplace_back(unit.begin(), unit.end());
    regions.push_back(r);
  }, /*parallel=*/false);
  fetch_encoded(units, [&](std::size_t i, const Buffer* encoded, const std::string& what) {
    decode(encoded, what, DimIndex(units[i].begin(), units[i].end()), regions[i]);
  });
}

void ZarrArray::fetch_encoded(std::span<const Unit> units, const EncodedSink& sink) const {
  if (!store_->prefers_batches()) {
    parallel_for(units.size(), [&](std::size_t i) {
      std::string what;
      thread_local Buffer encoded;  // reused: no fresh allocation per chunk
      const bool present = fetch_unit(units[i], what, encoded);
      sink(i, present ? &encoded : nullptr, what);
    });
    return;
  }
  // Locate the units of a batch, fetch all their bytes in one get_each (requests overlap;
  // nearby inner chunks of a shard coalesce), decoding in parallel as they arrive. A batch
  // ends by draining: its last requests finish while nothing new is sent, and the next batch
  // waits a round trip for its first bytes. So batches are large — a drain per 8,192 units is
  // ~2 % at 50 ms and ~4,000 chunks/s, where 512-unit batches left a 1,024-chunk read at 59 %
  // of its zero-latency rate — and bounded only to keep the request lists of a huge selection
  // small. Bytes never pile up: each body is decoded and dropped as it arrives.
  constexpr std::size_t kBatch = 8192;
  for (std::size_t b0 = 0; b0 < units.size(); b0 += kBatch) {
    const std::size_t n = std::min(kBatch, units.size() - b0);
    if (!shard_levels_.empty()) {  // outer shard indexes first, in one get_many
      std::map<std::string, const ShardingCodec*> keys;  // each shard once, with its codec
      for (std::size_t i = 0; i < n; ++i) {
        std::string k = shard_key(units[b0 + i]);
        if (!keys.count(k)) keys.emplace(std::move(k), &level_codec(0, units[b0 + i]));
      }
      std::vector<ByteRequest> index_reqs;
      std::vector<const ShardingCodec*> req_codecs;
      {
        std::lock_guard lock(index_mutex_);
        for (const auto& [k, codec] : keys)
          if (!index_cache_.count("0@0@" + k)) {
            index_reqs.push_back({k, shard_index_range(*codec, 0, 0, 0)});
            req_codecs.push_back(codec);
          }
      }
      auto got = store_->get_many(index_reqs);
      for (std::size_t i = 0; i < index_reqs.size(); ++i)
        cache_shard_index(*req_codecs[i], 0, index_reqs[i].key, 0, 0, std::move(got[i]));
    }
    std::vector<std::string> whats(n);
    std::vector<std::optional<ByteRequest>> where(n);
    std::vector<ByteRequest> reqs;
    std::vector<std::size_t> unit_of_req;  // units without bytes to fetch (where[i] empty) have none
    for (std::size_t i = 0; i < n; ++i) {
      where[i] = locate_unit(units[b0 + i], whats[i]);
      if (!where[i]) continue;
      reqs.push_back(*where[i]);
      unit_of_req.push_back(i);
    }
    // Decode each unit as soon as its bytes arrive (absent units at once), and drop its bytes
    // right after: memory is reused while the rest of the batch is in flight.
    std::vector<std::optional<Buffer>> bytes(n);
    auto finish = [&](std::size_t i) {
      std::optional<Buffer> got = std::move(bytes[i]);
      const Buffer* encoded = nullptr;
      if (where[i]) {
        if (got) {
          check_unit_bytes(*where[i], whats[i], *got);
          encoded = &*got;
        } else if (!shard_levels_.empty()) {
          throw StoreError(store_->describe(where[i]->key) + " disappeared while reading");
        }
      }
      if (!encoded) on_absent(whats[i]);
      sink(b0 + i, encoded, whats[i]);
    };
    if (n == 1) {
      // One unit: nothing to overlap, so no producer thread (a persistent-cache hit costs less
      // than starting one).
      if (where[0]) store_->get_each(reqs, [&](std::size_t, std::optional<Buffer>&& got) { bytes[0] = std::move(got); });
      finish(0);
      continue;
    }
    consume_as_produced(
        [&](const std::function<void(std::size_t)>& push) {
          for (std::size_t i = 0; i < n; ++i)
            if (!where[i]) push(i);
          store_->get_each(reqs, [&](std::size_t r, std::optional<Buffer>&& got) {
            const std::size_t i = unit_of_req[r];
            bytes[i] = std::move(got);
            push(i);
          });
        },
        finish);
  }
}

void ZarrArray::check_selection(const ArraySelection& sel) const {
  if (sel.size() != meta_.shape.size())
    throw SelectionError(describe() + ": selection has " + std::to_string(sel.size()) +
                         " dims, array has " + std::to_string(meta_.shape.size()));
  for (std::size_t d = 0; d < sel.size(); ++d) {
    const auto& r = sel[d];
    if (r.count == 0) continue;
    if (r.step == 0) throw SelectionError(describe() + ": step 0 on dim " + std::to_string(d));
    const auto first = static_cast<std::int64_t>(r.start);
    const auto last = first + static_cast<std::int64_t>(r.count - 1) * r.step;
    const auto n = static_cast<std::int64_t>(meta_.shape[d]);
    if (first < 0 || first >= n || last < 0 || last >= n)
      throw SelectionError(describe() + ": selection on dim " + std::to_string(d) + " (start " +
                           std::to_string(first) + ", last " + std::to_string(last) +
                           ") is outside [0, " + std::to_string(n) + ")");
  }
}

template <class Task>
void ZarrArray::run_units(const ArraySelection& sel, Task&& task, bool parallel) const {
  check_selection(sel);
  const UnitPieces pieces(sel, unit_grid_);
  const std::uint64_t total = pieces.size();
  if (total == 0) return;
  auto one = [&](std::size_t t) {
    DimIndex unit;
    Region r;
    pieces.get(t, unit, r);
    task(unit, r);
  };
  if (parallel) {
    parallel_for(total, one);
  } else {
    for (std::size_t t = 0; t < total; ++t) one(t);
  }
}

void ZarrArray::decode_unit(const Buffer* encoded, const std::string& what, const codec::ChunkSpec& spec,
                            MutableByteView out) const {
  if (!encoded) {
    const DimIndex origin(spec.shape.size(), 0);
    fill_region(out.data(), spec.shape, block_region(spec.shape, spec.shape, origin, true), meta_.fill.bytes);
    return;
  }
  try {
    unit_codecs_->decode_into(encoded->view(), spec, out);
  } catch (const CodecError& e) {
    throw CodecError(what + " of " + describe() + ": " + e.what());
  }
}

void ZarrArray::fetch_units(std::span<const Unit> units, const UnitSink& sink) const {
  fetch_encoded(units, [&](std::size_t i, const Buffer* encoded, const std::string& what) {
    const codec::ChunkSpec spec = unit_spec(DimIndex(units[i].begin(), units[i].end()));
    sink(i, [&](MutableByteView out) { decode_unit(encoded, what, spec, out); });
  });
}

std::string ZarrArray::cache_id() const {
  // Decoded chunks of the two missing_chunks policies are kept apart: a fill chunk cached for
  // "fill" must not answer an "error" read.
  const std::string policy = missing_chunks_error_ ? "?missing_chunks=error" : "";
  if (dynamic_cast<const MemoryStore*>(store_.get()) != nullptr)
    return store_->url() + "#" + std::to_string(store_->id()) + "/" + path_ + policy;
  return describe() + policy;
}

std::string ZarrArray::data_version() const {
  const std::string prefix = path_.empty() ? std::string() : path_ + "/";
  const ObjectVersion meta = store_->version(prefix + (meta_.zarr_format == 2 ? ".zarray" : "zarr.json"));
  if (meta.etag.empty() || !meta.exists) return {};
  std::uint64_t h = fnv1a(meta.etag);
  // A store that declares its objects unchanged for ever (an Icechunk snapshot) needs no more;
  // on a local store chunks are rewritten in place without touching the metadata, and reading
  // every file's version costs a listing and a stat per file; remote stores: the metadata's ETag.
  if (meta.fresh_until != std::numeric_limits<std::int64_t>::max() && !store_->prefers_batches())
    for (const auto& key : store_->list(prefix)) h = fnv1a(store_->version(key).etag, fnv1a(key, h));
  return hex16(h);
}

void ZarrArray::read(const ArraySelection& sel, MutableByteView dest) const {
  if (meta_.dtype.is_variable_length())
    throw UsageError(describe() + ": " + meta_.dtype.name() + " data must be read as strings");
  std::uint64_t n = 1;
  for (const auto& r : sel) n *= r.count;
  if (dest.size() != n * meta_.dtype.itemsize)
    throw UsageError(describe() + ": destination holds " + std::to_string(dest.size()) +
                     " bytes, selection needs " + std::to_string(n * meta_.dtype.itemsize));
  read_selection(sel, dest, nullptr);
}

void ZarrArray::read_converted(const ArraySelection& sel, MutableByteView dest,
                               const ElementConversion& conversion) const {
  converted_count(sel, dest, conversion);
  read_selection(sel, dest, &conversion);
}

void ZarrArray::read_selection(const ArraySelection& sel, MutableByteView dest, const ElementConversion* conv) const {
  Shape dst_shape;
  for (const auto& r : sel) dst_shape.push_back(r.count);
  const std::size_t item = meta_.dtype.itemsize;
  const std::size_t out_item = conv ? conv->output_dtype().itemsize : item;
  const auto dst_strides = c_strides(dst_shape);
  // Absent units: the fill value, converted once.
  Buffer fill = meta_.fill.bytes;
  if (conv) {
    fill = Buffer(out_item);
    conv->convert(meta_.fill.bytes.data(), 1, fill.data());
  }

  for_each_unit(sel, [&](const Buffer* encoded, const std::string& what, const DimIndex& unit, const Region& r) {
    if (!encoded) {
      fill_region(dest.data(), dst_shape, r, fill);
      return;
    }
    try {
      const codec::ChunkSpec spec = unit_spec(unit);
      const std::uint64_t unit_bytes = spec.nbytes();
      bool whole = true;
      for (std::size_t d = 0; d < r.count.size(); ++d)
        whole = whole && r.count[d] == spec.shape[d] && (r.src_step[d] == 1 || r.count[d] == 1);
      const bool contiguous = whole && contiguous_in_dest(r, dst_shape);
      std::uint64_t off = 0;
      if (contiguous)
        for (std::size_t d = 0; d < r.count.size(); ++d) off += r.dst_first[d] * dst_strides[d];
      if (contiguous && !conv) {
        // The chunk is exactly a contiguous run of the output: decode straight into it.
        unit_codecs_->decode_into(encoded->view(), spec, dest.subspan(off * item, unit_bytes));
        return;
      }
      thread_local Buffer scratch;
      scratch.resize(unit_bytes);
      unit_codecs_->decode_into(encoded->view(), spec, scratch.span());
      if (!conv) {
        copy_region(scratch.data(), spec.shape, dest.data(), dst_shape, r, item);
      } else if (contiguous) {
        // Converted while the decoded chunk is still in this core's cache.
        conv->convert(scratch.data(), unit_bytes / item, dest.data() + off * out_item);
      } else {
        convert_region(scratch.data(), spec.shape, dest.data(), dst_shape, r, item, *conv);
      }
    } catch (const CodecError& e) {
      throw CodecError(what + " of " + describe() + ": " + e.what());
    }
  });
}

void ZarrArray::read_strings(const ArraySelection& sel, std::vector<std::string>& dest) const {
  if (!meta_.dtype.is_variable_length())
    throw UsageError(describe() + ": " + meta_.dtype.name() + " data is not variable-length");
  Shape dst_shape;
  for (const auto& r : sel) dst_shape.push_back(r.count);
  dest.assign(shape_size(dst_shape), std::string());
  for_each_unit(sel, [&](const Buffer* encoded, const std::string& what, const DimIndex& unit, const Region& r) {
    if (!encoded) {
      for_each_row(r, dst_shape, dst_shape, [&](std::uint64_t, std::uint64_t dofs, std::uint64_t n, std::int64_t) {
        for (std::uint64_t i = 0; i < n; ++i) dest[dofs + i] = meta_.fill.string;
      });
      return;
    }
    codec::ChunkData data;
    const codec::ChunkSpec spec = unit_spec(unit);
    try {
      unit_codecs_->decode(encoded->view(), spec, data);
    } catch (const CodecError& e) {
      throw CodecError(what + " of " + describe() + ": " + e.what());
    }
    copy_region_strings(data.strings, spec.shape, dest, dst_shape, r);
  });
}

}  // namespace lazycube::zarr
