// The codec registry and the entry points that build codecs by v2 id / v3 name through it. The
// codecs themselves register from their own files (codec_registry.hpp).
#include <array>
#include <stdexcept>
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "codec_util.hpp"

namespace lazycube::codec {
namespace detail {

CodecKind CodecEntry::kind() const {
  if (array_to_bytes != nullptr) return CodecKind::ArrayToBytes;
  if (array != nullptr || filter) return CodecKind::ArrayToArray;
  return CodecKind::BytesToBytes;
}

const CodecRegistry& CodecRegistry::instance() {
  static const CodecRegistry registry = [] {
    CodecRegistry r;
    register_all_codecs(r);
    return r;
  }();
  return registry;
}

void CodecRegistry::add(CodecEntry entry, const char* file) {
  const std::string what = "codec '" + std::string(entry.id) + "' registered in " + file;
  const int builders = (entry.bytes != nullptr) + (entry.array != nullptr) +
                       (entry.array_to_bytes != nullptr);
  if (entry.id.empty() || builders != 1 || entry.names == 0 ||
      (entry.filter && entry.bytes == nullptr))
    throw std::logic_error(what + ": needs an id, one builder and at least one name");
  // Two codecs may share an id when metadata names them differently (numcodecs' PackBits filter
  // is "packbits" in v2 and "numcodecs.packbits" in v3; the v3 `packbits` codec is another).
  for (const auto& e : entries_)
    if (e.id == entry.id && (e.names & entry.names) != 0)
      throw std::logic_error(what + ": already registered in " + std::string(e.source_file));
  entry.source_file = file;
  entries_.push_back(entry);
}

const CodecEntry* CodecRegistry::find_v2(std::string_view id) const {
  for (const auto& e : entries_)
    if ((e.names & kV2) != 0 && e.id == id) return &e;
  return nullptr;
}

const CodecEntry* CodecRegistry::find_v3(std::string_view name) const {
  constexpr std::string_view kNumcodecsPrefix = "numcodecs.";
  const bool prefixed = name.starts_with(kNumcodecsPrefix);
  const std::string_view id = prefixed ? name.substr(kNumcodecsPrefix.size()) : name;
  const unsigned wanted = prefixed ? kV3Numcodecs : kV3;
  for (const auto& e : entries_)
    if ((e.names & wanted) != 0 && e.id == id) return &e;
  return nullptr;
}

}  // namespace detail

namespace {

using detail::CodecRegistry;

[[noreturn]] void unknown(std::string_view name) {
  detail::fail("unknown codec '" + std::string(name) + "'");
}

// Built by the zarr layer (it needs the pipeline parser recursively), so not a registry entry.
constexpr std::string_view kSharding = "sharding_indexed";

// numcodecs object codecs lazycube does not implement: named in the error.
constexpr std::array<std::string_view, 5> kUnsupportedObjectCodecs = {"json2", "msgpack2", "pickle",
                                                                      "vlen-array", "json"};

}  // namespace

std::optional<CodecKind> v3_codec_kind(std::string_view name) {
  if (name == kSharding) return CodecKind::ArrayToBytes;
  if (const auto* e = CodecRegistry::instance().find_v3(name)) return e->kind();
  return std::nullopt;
}

std::vector<RegisteredCodec> registered_codecs() {
  std::vector<RegisteredCodec> out;
  for (const auto& e : CodecRegistry::instance().entries()) {
    RegisteredCodec r;
    r.id = std::string(e.id);
    if ((e.names & detail::kV2) != 0) r.v2_id = r.id;
    if ((e.names & detail::kV3) != 0) r.v3_names.push_back(r.id);
    if ((e.names & detail::kV3Numcodecs) != 0) r.v3_names.push_back("numcodecs." + r.id);
    r.kind = e.kind();
    r.source_file = std::string(e.source_file);
    out.push_back(std::move(r));
  }
  return out;
}

std::shared_ptr<const BytesToBytesCodec> make_bytes_codec(std::string_view name,
                                                          const nlohmann::json& config,
                                                          const ChunkSpec& decoded) {
  // Plain v2 ids are accepted too, so that v2 and v3 callers can share this entry point.
  const auto& registry = CodecRegistry::instance();
  const detail::CodecEntry* e = registry.find_v3(name);
  if (e == nullptr || e->bytes == nullptr) e = registry.find_v2(name);
  if (e == nullptr || e->bytes == nullptr) unknown(name);
  return e->bytes(std::string(name), config, decoded);
}

std::shared_ptr<const ArrayToArrayCodec> make_array_codec(std::string_view name,
                                                          const nlohmann::json& config,
                                                          const ChunkSpec& decoded) {
  const detail::CodecEntry* e = CodecRegistry::instance().find_v3(name);
  if (e == nullptr) unknown(name);
  if (e->array != nullptr) return e->array(std::string(name), config, decoded);
  if (!e->filter) detail::fail("codec '" + std::string(name) + "' is not an array->array codec");
  // zarr-python 3 may leave the decoded dtype implicit: take it from the array.
  nlohmann::json filled = config.is_null() ? nlohmann::json::object() : config;
  if (filled.is_object() && !decoded.dtype.is_variable_length() && !e->implicit_dtype_key.empty()) {
    const std::string key(e->implicit_dtype_key);
    if (!filled.contains(key)) filled[key] = decoded.dtype.numpy_str();
  }
  return detail::make_filter_array_codec(e->bytes(std::string(name), filled, decoded));
}

std::shared_ptr<const ArrayToBytesCodec> make_array_to_bytes_codec(std::string_view name,
                                                                   const nlohmann::json& config,
                                                                   const ChunkSpec& decoded) {
  if (name == kSharding)
    detail::fail("codec 'sharding_indexed' is built by the zarr layer, not the codec registry");
  const detail::CodecEntry* e = CodecRegistry::instance().find_v3(name);
  if (e == nullptr || e->array_to_bytes == nullptr) unknown(name);
  return e->array_to_bytes(std::string(name), config, decoded);
}

bool is_v2_object_codec(std::string_view id) {
  const detail::CodecEntry* e = CodecRegistry::instance().find_v2(id);
  return e != nullptr && e->array_to_bytes != nullptr;
}

namespace {
std::string v2_id(const nlohmann::json& codec) {
  if (!codec.is_object()) detail::fail("v2 codec must be a JSON object, got " + codec.dump());
  auto it = codec.find("id");
  if (it == codec.end() || !it->is_string())
    detail::fail("v2 codec object has no string 'id': " + codec.dump());
  return it->get<std::string>();
}

void reject_unsupported_object_codec(const std::string& id) {
  for (auto u : kUnsupportedObjectCodecs)
    if (u == id)
      detail::fail("codec '" + id + "' is not supported (object arrays need vlen-utf8 or vlen-bytes)");
}
}  // namespace

std::shared_ptr<const BytesToBytesCodec> make_v2_bytes_codec(const nlohmann::json& codec,
                                                             const DataType& array_dtype) {
  const std::string id = v2_id(codec);
  if (is_v2_object_codec(id))
    detail::fail("codec '" + id + "' is an object codec, not a bytes->bytes codec");
  reject_unsupported_object_codec(id);
  const detail::CodecEntry* e = CodecRegistry::instance().find_v2(id);
  if (e == nullptr || e->bytes == nullptr) unknown(id);
  return e->bytes(id, codec, ChunkSpec{array_dtype, {}});
}

std::shared_ptr<const ArrayToBytesCodec> make_v2_object_codec(const nlohmann::json& codec) {
  const std::string id = v2_id(codec);
  if (is_v2_object_codec(id))
    return CodecRegistry::instance().find_v2(id)->array_to_bytes(id, codec, ChunkSpec{});
  reject_unsupported_object_codec(id);
  unknown(id);
}

bool parse_v3_codec_entry(const nlohmann::json& entry, std::string& name, nlohmann::json& configuration) {
  configuration = nlohmann::json::object();
  if (entry.is_string()) {
    name = entry.get<std::string>();
    return true;
  }
  if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string()) return false;
  name = entry["name"].get<std::string>();
  if (entry.contains("configuration") && !entry["configuration"].is_null()) configuration = entry["configuration"];
  return true;
}

}  // namespace lazycube::codec
