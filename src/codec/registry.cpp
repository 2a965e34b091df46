// Codec registry: maps v2 ids and v3 names to builders.
//
// numcodecs filters (delta, fixedscaleoffset, quantize, astype, packbits, categorize) are
// bytes->bytes codecs for Zarr v2, where they run after the dtype byte order is applied. Under
// Zarr v3 (`numcodecs.<id>`) they are classified as array->array, as zarr-python 3 does, and
// built as a wrapper around the same implementation: they then sit before the array->bytes
// codec in the pipeline, exactly where the v3 codec list puts them.
#include <array>

#include "codec_factories.hpp"
#include "codec_util.hpp"

namespace lazycube::codec {
namespace {

using Builder = detail::BytesCodecPtr (*)(const std::string&, const nlohmann::json&,
                                          const ChunkSpec&);

struct Entry {
  std::string_view id;  // numcodecs / v2 id
  Builder build;
  bool filter;          // numcodecs filter: array->array under v3
};

constexpr std::array kBytesCodecs = {
    Entry{"blosc", detail::make_blosc, false},
    Entry{"zstd", detail::make_zstd, false},
    Entry{"lz4", detail::make_lz4, false},
    Entry{"gzip", detail::make_gzip, false},
    Entry{"zlib", detail::make_zlib, false},
    Entry{"bz2", detail::make_bz2, false},
    Entry{"lzma", detail::make_lzma, false},
    Entry{"crc32c", detail::make_crc32c, false},
    Entry{"adler32", detail::make_adler32, false},
    Entry{"crc32", detail::make_crc32, false},
    Entry{"fletcher32", detail::make_fletcher32, false},
    Entry{"shuffle", detail::make_shuffle, false},
    Entry{"delta", detail::make_delta, true},
    Entry{"fixedscaleoffset", detail::make_fixedscaleoffset, true},
    Entry{"quantize", detail::make_quantize, true},
    Entry{"astype", detail::make_astype, true},
    Entry{"packbits", detail::make_packbits, true},
    Entry{"categorize", detail::make_categorize, true},
};

// Names that v3 metadata uses without the numcodecs. prefix.
constexpr std::array<std::string_view, 4> kV3CoreBytesCodecs = {"blosc", "zstd", "gzip", "crc32c"};

constexpr std::string_view kNumcodecsPrefix = "numcodecs.";

const Entry* find_entry(std::string_view id) {
  for (const auto& e : kBytesCodecs)
    if (e.id == id) return &e;
  return nullptr;
}

// For a v3 name: the entry, looking through the numcodecs. prefix.
const Entry* find_v3_entry(std::string_view name) {
  if (name.starts_with(kNumcodecsPrefix)) return find_entry(name.substr(kNumcodecsPrefix.size()));
  for (auto core : kV3CoreBytesCodecs)
    if (core == name) return find_entry(name);
  return nullptr;
}

[[noreturn]] void unknown(std::string_view name) {
  detail::fail("unknown codec '" + std::string(name) + "'");
}

constexpr std::array<std::string_view, 5> kUnsupportedObjectCodecs = {"json2", "msgpack2", "pickle",
                                                                      "vlen-array", "json"};

}  // namespace

std::optional<CodecKind> v3_codec_kind(std::string_view name) {
  if (name == "bytes" || name == "vlen-utf8" || name == "vlen-bytes" || name == "sharding_indexed")
    return CodecKind::ArrayToBytes;
  if (name == "transpose") return CodecKind::ArrayToArray;
  if (const Entry* e = find_v3_entry(name))
    return e->filter ? CodecKind::ArrayToArray : CodecKind::BytesToBytes;
  return std::nullopt;
}

std::shared_ptr<const BytesToBytesCodec> make_bytes_codec(std::string_view name,
                                                          const nlohmann::json& config,
                                                          const ChunkSpec& decoded) {
  // Plain v2 ids are accepted too, so that v2 and v3 callers can share this entry point.
  const Entry* e = find_v3_entry(name);
  if (e == nullptr) e = find_entry(name);
  if (e == nullptr) unknown(name);
  return e->build(std::string(name), config, decoded);
}

std::shared_ptr<const ArrayToArrayCodec> make_array_codec(std::string_view name,
                                                          const nlohmann::json& config,
                                                          const ChunkSpec& decoded) {
  if (name == "transpose") {
    detail::ConfigReader cfg("transpose", config);
    const auto* order = cfg.find("order");
    if (order == nullptr) cfg.bad("order", "missing");
    std::vector<std::size_t> perm;
    if (order->is_string()) {  // "C" / "F" from early v3 drafts
      const auto text = order->get<std::string>();
      if (text != "C" && text != "F") cfg.bad("order", "expected a permutation, 'C' or 'F'");
      for (std::size_t i = 0; i < decoded.shape.size(); ++i)
        perm.push_back(text == "C" ? i : decoded.shape.size() - 1 - i);
    } else if (order->is_array()) {
      for (const auto& v : *order) {
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
          cfg.bad("order", "expected non-negative integers");
        perm.push_back(static_cast<std::size_t>(v.get<std::int64_t>()));
      }
    } else {
      cfg.bad("order", "expected a list of axes");
    }
    if (perm.size() != decoded.shape.size())
      cfg.bad("order", "has " + std::to_string(perm.size()) + " axes, the array has " +
                           std::to_string(decoded.shape.size()));
    return make_transpose_codec(std::move(perm));
  }
  const Entry* e = find_v3_entry(name);
  if (e == nullptr || !e->filter) {
    if (e != nullptr) detail::fail("codec '" + std::string(name) + "' is not an array->array codec");
    unknown(name);
  }
  // zarr-python 3 may leave the decoded dtype implicit: take it from the array.
  nlohmann::json filled = config.is_null() ? nlohmann::json::object() : config;
  if (filled.is_object() && !decoded.dtype.is_variable_length()) {
    const std::string native = decoded.dtype.numpy_str();
    if (e->id == "astype") {
      if (!filled.contains("decode_dtype")) filled["decode_dtype"] = native;
    } else if (e->id != "packbits" && !filled.contains("dtype")) {
      filled["dtype"] = native;
    }
  }
  return detail::make_filter_array_codec(e->build(std::string(name), filled, decoded));
}

std::shared_ptr<const ArrayToBytesCodec> make_array_to_bytes_codec(std::string_view name,
                                                                   const nlohmann::json& config,
                                                                   const ChunkSpec& decoded) {
  if (name == "bytes") return detail::make_bytes_codec_v3(config, decoded);
  if (name == "vlen-utf8" || name == "vlen-bytes")
    return detail::make_vlen_codec(std::string(name), name == "vlen-utf8");
  if (name == "sharding_indexed")
    detail::fail("codec 'sharding_indexed' is built by the zarr layer, not the codec registry");
  unknown(name);
}

bool is_v2_object_codec(std::string_view id) { return id == "vlen-utf8" || id == "vlen-bytes"; }

namespace {
std::string v2_id(const nlohmann::json& codec) {
  if (!codec.is_object()) detail::fail("v2 codec must be a JSON object, got " + codec.dump());
  auto it = codec.find("id");
  if (it == codec.end() || !it->is_string())
    detail::fail("v2 codec object has no string 'id': " + codec.dump());
  return it->get<std::string>();
}

bool unsupported_object_codec(std::string_view id) {
  for (auto u : kUnsupportedObjectCodecs)
    if (u == id) return true;
  return false;
}
}  // namespace

std::shared_ptr<const BytesToBytesCodec> make_v2_bytes_codec(const nlohmann::json& codec,
                                                             const DataType& array_dtype) {
  const std::string id = v2_id(codec);
  if (is_v2_object_codec(id))
    detail::fail("codec '" + id + "' is an object codec, not a bytes->bytes codec");
  if (unsupported_object_codec(id))
    detail::fail("codec '" + id + "' is not supported (object arrays need vlen-utf8 or vlen-bytes)");
  const Entry* e = find_entry(id);
  if (e == nullptr) unknown(id);
  return e->build(id, codec, ChunkSpec{array_dtype, {}});
}

std::shared_ptr<const ArrayToBytesCodec> make_v2_object_codec(const nlohmann::json& codec) {
  const std::string id = v2_id(codec);
  if (is_v2_object_codec(id)) return detail::make_vlen_codec(id, id == "vlen-utf8");
  if (unsupported_object_codec(id))
    detail::fail("codec '" + id + "' is not supported (object arrays need vlen-utf8 or vlen-bytes)");
  unknown(id);
}

}  // namespace lazycube::codec
