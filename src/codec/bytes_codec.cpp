// v3 `bytes` codec / v2 dtype byte order: fixed-size elements, swapped per DataType::swap_unit.
#include "bytes_codec.hpp"

#include <cstring>
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "codec_util.hpp"
#include "util/byte_swap.hpp"

namespace lazycube::codec::detail {

namespace {
void require_fixed(const ChunkSpec& spec) {
  if (spec.dtype.is_variable_length())
    fail("bytes: cannot encode variable-length type " + spec.dtype.name() +
         " (use vlen-utf8 or vlen-bytes)");
}
}  // namespace

void EndianCodec::decode(ByteView in, const ChunkSpec& spec, ChunkData& out) const {
  require_fixed(spec);
  out.bytes.resize(spec.nbytes());
  decode_into(in, spec, out.bytes.span());
}

void EndianCodec::decode_into(ByteView in, const ChunkSpec& spec, MutableByteView dest) const {
  require_fixed(spec);
  const std::uint64_t expected = spec.nbytes();
  if (in.size() != expected || dest.size() != expected)
    fail("bytes: chunk holds " + std::to_string(in.size()) + " bytes, expected " +
         std::to_string(expected));
  if (dest.data() != in.data() && !in.empty()) std::memmove(dest.data(), in.data(), in.size());
  if (!is_identity_for(spec.dtype)) swap_elements(dest, spec.dtype);
}

Buffer EndianCodec::encode(const ChunkData& in, const ChunkSpec& spec) const {
  require_fixed(spec);
  if (in.bytes.size() != spec.nbytes())
    fail("bytes: chunk data holds " + std::to_string(in.bytes.size()) + " bytes, expected " +
         std::to_string(spec.nbytes()));
  Buffer out = in.bytes;
  if (!is_identity_for(spec.dtype)) swap_elements(out.span(), spec.dtype);
  return out;
}

std::optional<std::uint64_t> EndianCodec::encoded_size(const ChunkSpec& spec) const {
  if (spec.dtype.is_variable_length()) return std::nullopt;
  return spec.nbytes();
}

nlohmann::json EndianCodec::to_json() const {
  nlohmann::json j{{"name", "bytes"}};
  if (explicit_ && order_ != ByteOrder::NotApplicable)
    j["configuration"] = {{"endian", order_ == ByteOrder::Big ? "big" : "little"}};
  else
    j["configuration"] = nlohmann::json::object();
  return j;
}

ArrayToBytesCodecPtr make_bytes_codec_v3(const std::string& name, const nlohmann::json& config,
                                          const ChunkSpec& decoded) {
  ConfigReader cfg(name, config);
  if (!cfg.has("endian")) {
    // struct / legacy structured: zarr-python 3 does not count them as endian-aware types and
    // writes `bytes` without an endian, the fields little-endian.
    if (decoded.dtype.kind == DTypeKind::Record) return std::make_shared<EndianCodec>(ByteOrder::Little, false);
    if (!decoded.dtype.is_variable_length() && decoded.dtype.swap_unit() > 1)
      cfg.bad("endian", "required for " + decoded.dtype.name());
    return std::make_shared<EndianCodec>(ByteOrder::NotApplicable, false);
  }
  const std::string endian = cfg.string("endian");
  if (endian != "little" && endian != "big")
    cfg.bad("endian", "expected 'little' or 'big', got '" + endian + "'");
  return std::make_shared<EndianCodec>(endian == "big" ? ByteOrder::Big : ByteOrder::Little, true);
}

}  // namespace lazycube::codec::detail

namespace lazycube::codec {

std::shared_ptr<const ArrayToBytesCodec> make_endian_codec(ByteOrder order) {
  return std::make_shared<detail::EndianCodec>(order, order != ByteOrder::NotApplicable);
}

}  // namespace lazycube::codec

LAZYCUBE_REGISTER_CODEC(bytes) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "bytes", .names = kV3, .array_to_bytes = make_bytes_codec_v3});
}
