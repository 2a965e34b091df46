// CodecPipeline: runs bytes->bytes stages in reverse, then array->bytes, then array->array
// codecs in reverse. Intermediate stages use per-thread scratch buffers; with a plain `bytes`
// codec and no array codecs the last stage writes straight into the caller's memory.
#include <cstring>
#include <nlohmann/json.hpp>

#include "bytes_codec.hpp"
#include "codec_factories.hpp"
#include "codec_util.hpp"
#include "util/byte_swap.hpp"

namespace lazycube::codec {
namespace {

// What each bytes stage must produce when decoding: stage 0 (next to the array->bytes codec)
// yields exactly what that codec needs; filters that report an encoded dtype fix the size of
// the stage after them; otherwise only the global bound applies.
std::vector<DecodeLimits> stage_limits(const CodecPipeline& p, const ChunkSpec& a2b_spec) {
  std::vector<DecodeLimits> limits(p.bytes_codecs.size());
  std::optional<std::uint64_t> size = p.array_to_bytes->encoded_size(a2b_spec);
  DataType dtype = a2b_spec.dtype;
  const std::uint64_t n = a2b_spec.num_elements();
  for (std::size_t i = 0; i < p.bytes_codecs.size(); ++i) {
    limits[i].exact_size = size;
    limits[i].max_size = size.value_or(kMaxUnboundedDecode);
    if (auto t = p.bytes_codecs[i]->encoded_dtype(dtype)) {
      dtype = *t;
      size = t->itemsize != 0 && n <= kMaxUnboundedDecode ? std::optional(n * t->itemsize)
                                                          : std::nullopt;
    } else {
      size.reset();
    }
  }
  return limits;
}

// Runs bytes stages last..first (down to and including `stop`), alternating two scratch
// buffers so that no stage writes into its own input.
ByteView run_bytes_stages(const CodecPipeline& p, ByteView encoded,
                          const std::vector<DecodeLimits>& limits, std::size_t stop,
                          detail::ScratchLease& a, detail::ScratchLease& b) {
  ByteView cur = encoded;
  for (std::size_t i = p.bytes_codecs.size(); i-- > stop;) {
    Buffer& target = i % 2 == 0 ? a.buffer() : b.buffer();
    cur = p.bytes_codecs[i]->decode(cur, target, limits[i]);
    detail::check_exact(p.bytes_codecs[i]->name(), cur.size(), limits[i]);
  }
  return cur;
}

void require_a2b(const CodecPipeline& p) {
  if (!p.array_to_bytes) detail::fail("codec pipeline has no array->bytes codec");
}

}  // namespace

ChunkSpec CodecPipeline::array_to_bytes_spec(const ChunkSpec& decoded) const {
  ChunkSpec spec = decoded;
  for (const auto& c : array_codecs) spec = c->encoded_spec(spec);
  return spec;
}

void CodecPipeline::decode_into(ByteView encoded, const ChunkSpec& spec,
                                MutableByteView dest) const {
  require_a2b(*this);
  if (dest.size() != spec.nbytes())
    throw UsageError("decode_into: destination holds " + std::to_string(dest.size()) +
                     " bytes, chunk needs " + std::to_string(spec.nbytes()));
  const auto* endian = dynamic_cast<const detail::EndianCodec*>(array_to_bytes.get());
  if (array_codecs.empty() && endian != nullptr) {
    // Fast path: the innermost bytes stage decodes straight into dest, then swap in place.
    const auto limits = stage_limits(*this, spec);
    detail::ScratchLease a, b;
    const ByteView cur = run_bytes_stages(*this, encoded, limits, 1, a, b);
    if (bytes_codecs.empty()) {
      endian->decode_into(cur, spec, dest);
      return;
    }
    bytes_codecs[0]->decode_into(cur, dest);
    if (!endian->is_identity_for(spec.dtype)) swap_elements(dest, spec.dtype);
    return;
  }
  if (array_codecs.empty()) {
    const auto limits = stage_limits(*this, spec);
    detail::ScratchLease a, b;
    const ByteView cur = run_bytes_stages(*this, encoded, limits, 0, a, b);
    array_to_bytes->decode_into(cur, spec, dest);
    return;
  }
  ChunkData out;
  decode(encoded, spec, out);
  if (out.bytes.size() != dest.size())
    detail::fail("codec pipeline decoded " + std::to_string(out.bytes.size()) +
                 " bytes, expected " + std::to_string(dest.size()));
  if (!dest.empty()) std::memcpy(dest.data(), out.bytes.data(), dest.size());
}

void CodecPipeline::decode(ByteView encoded, const ChunkSpec& spec, ChunkData& out) const {
  require_a2b(*this);
  std::vector<ChunkSpec> specs{spec};
  for (const auto& c : array_codecs) specs.push_back(c->encoded_spec(specs.back()));
  const auto limits = stage_limits(*this, specs.back());
  ChunkData current;
  {
    detail::ScratchLease a, b;
    const ByteView cur = run_bytes_stages(*this, encoded, limits, 0, a, b);
    array_to_bytes->decode(cur, specs.back(), array_codecs.empty() ? out : current);
  }
  if (array_codecs.empty()) return;
  for (std::size_t k = array_codecs.size(); k-- > 0;) {
    ChunkData next;
    array_codecs[k]->decode(current, specs[k], next);
    current = std::move(next);
  }
  out = std::move(current);
}

Buffer CodecPipeline::encode(const ChunkData& decoded, const ChunkSpec& spec) const {
  require_a2b(*this);
  ChunkSpec cur_spec = spec;
  ChunkData current;
  const ChunkData* cur = &decoded;
  for (const auto& c : array_codecs) {
    ChunkData next;
    c->encode(*cur, cur_spec, next);
    cur_spec = c->encoded_spec(cur_spec);
    current = std::move(next);
    cur = &current;
  }
  Buffer bytes = array_to_bytes->encode(*cur, cur_spec);
  for (const auto& c : bytes_codecs) bytes = c->encode(bytes.view());
  return bytes;
}

Buffer CodecPipeline::encode_fixed(ByteView decoded, const ChunkSpec& spec) const {
  require_a2b(*this);
  if (spec.dtype.is_variable_length()) detail::fail("encode_fixed: " + spec.dtype.name() + " is not a fixed-size type");
  if (decoded.size() != spec.nbytes())
    detail::fail("chunk data holds " + std::to_string(decoded.size()) + " bytes, expected " +
                 std::to_string(spec.nbytes()));
  const auto* endian = dynamic_cast<const detail::EndianCodec*>(array_to_bytes.get());
  if (array_codecs.empty() && endian != nullptr && endian->is_identity_for(spec.dtype) && !bytes_codecs.empty()) {
    Buffer bytes = bytes_codecs[0]->encode(decoded);
    for (std::size_t k = 1; k < bytes_codecs.size(); ++k) bytes = bytes_codecs[k]->encode(bytes.view());
    return bytes;
  }
  ChunkData copy;
  copy.bytes = Buffer::copy_of(decoded);
  return encode(copy, spec);
}

nlohmann::json CodecPipeline::to_json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& c : array_codecs) list.push_back(c->to_json());
  if (array_to_bytes) list.push_back(array_to_bytes->to_json());
  for (const auto& c : bytes_codecs) list.push_back(c->to_json());
  return list;
}

}  // namespace lazycube::codec
