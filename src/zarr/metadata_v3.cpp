// Zarr v3 array `zarr.json` → ArrayMetadata.
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "array_metadata.hpp"
#include "lazycube/error.hpp"
#include "sharding_codec.hpp"

namespace lazycube::zarr {

using nlohmann::json;

namespace {

DataType parse_v3_data_type(const json& v, const std::string& where) {
  auto bad = [&](const std::string& why) {
    return MetadataError(where + ": unsupported data_type " + v.dump() + (why.empty() ? "" : ": " + why));
  };
  std::string name;
  json config = json::object();
  if (v.is_string()) {
    name = v.get<std::string>();
  } else if (v.is_object() && v.contains("name") && v["name"].is_string()) {
    name = v["name"].get<std::string>();
    if (v.contains("configuration")) config = v["configuration"];
  } else {
    throw bad("expected a name or {name, configuration}");
  }
  static const std::pair<const char*, DataType> simple[] = {
      {"bool", DataType::boolean()},      {"int8", DataType::int_(1)},
      {"int16", DataType::int_(2)},       {"int32", DataType::int_(4)},
      {"int64", DataType::int_(8)},       {"uint8", DataType::uint(1)},
      {"uint16", DataType::uint(2)},      {"uint32", DataType::uint(4)},
      {"uint64", DataType::uint(8)},      {"float16", DataType::float_(2)},
      {"float32", DataType::float_(4)},   {"float64", DataType::float_(8)},
      {"complex64", DataType::complex(8)}, {"complex128", DataType::complex(16)},
      {"string", DataType::string()},     {"bytes", DataType::vlen_bytes()},
      {"variable_length_bytes", DataType::vlen_bytes()},
  };
  for (const auto& [n, t] : simple)
    if (name == n) return t;
  if (name == "numpy.datetime64" || name == "numpy.timedelta64") {
    if (!config.is_object() || !config.contains("unit") || !config["unit"].is_string())
      throw bad("missing configuration.unit");
    std::string unit = config["unit"].get<std::string>();
    // The spec spells microseconds "us" or "μs" (Greek mu); the micro sign is taken too.
    if (unit == "\u03bcs" || unit == "\u00b5s") unit = "us";
    std::int64_t scale = 1;
    if (config.contains("scale_factor")) {
      if (!config["scale_factor"].is_number_integer() || config["scale_factor"].get<std::int64_t>() <= 0)
        throw bad("scale_factor must be a positive integer");
      scale = config["scale_factor"].get<std::int64_t>();
    }
    // Validate the unit through the numpy parser.
    std::string np = std::string(name == "numpy.datetime64" ? "<M8[" : "<m8[") +
                     (scale == 1 ? "" : std::to_string(scale)) + unit + "]";
    try {
      return parse_numpy_dtype(np).dtype;
    } catch (const MetadataError&) {
      throw bad("unknown unit '" + unit + "'");
    }
  }
  if (name == "fixed_length_utf32") {
    if (!config.contains("length_bytes") || !config["length_bytes"].is_number_unsigned())
      throw bad("missing configuration.length_bytes");
    auto n = config["length_bytes"].get<std::uint64_t>();
    if (n == 0 || n % 4 != 0) throw bad("length_bytes must be a positive multiple of 4");
    return DataType::unicode(n / 4);
  }
  if (name == "fixed_length_bytes" || name == "null_terminated_bytes") {
    if (!config.contains("length_bytes") || !config["length_bytes"].is_number_unsigned() ||
        config["length_bytes"].get<std::uint64_t>() == 0)
      throw bad("missing configuration.length_bytes");
    return DataType::bytes(config["length_bytes"].get<std::uint64_t>());
  }
  if (name.size() > 1 && name[0] == 'r') {  // raw bits r8, r16, ...: read as bytes
    std::size_t bits = 0;
    for (std::size_t i = 1; i < name.size(); ++i) {
      if (name[i] < '0' || name[i] > '9') throw bad("");
      bits = bits * 10 + static_cast<std::size_t>(name[i] - '0');
    }
    if (bits == 0 || bits % 8 != 0) throw bad("raw bits must be a multiple of 8");
    return DataType::bytes(bits / 8);
  }
  throw bad("");
}

}  // namespace

json v3_data_type_json(const DataType& t, const std::string& where) {
  auto sized = [&](const char* prefix, std::size_t bytes) { return std::string(prefix) + std::to_string(8 * bytes); };
  switch (t.kind) {
    case DTypeKind::Bool: return "bool";
    case DTypeKind::Int: return sized("int", t.itemsize);
    case DTypeKind::UInt: return sized("uint", t.itemsize);
    case DTypeKind::Float: return sized("float", t.itemsize);
    case DTypeKind::Complex: return sized("complex", t.itemsize);
    case DTypeKind::DateTime:
    case DTypeKind::TimeDelta: {
      json config{{"unit", t.unit}, {"scale_factor", t.scale}};
      return {{"name", t.kind == DTypeKind::DateTime ? "numpy.datetime64" : "numpy.timedelta64"},
              {"configuration", config}};
    }
    case DTypeKind::Unicode:
      return {{"name", "fixed_length_utf32"}, {"configuration", {{"length_bytes", t.itemsize}}}};
    case DTypeKind::Bytes:
      return {{"name", "null_terminated_bytes"}, {"configuration", {{"length_bytes", t.itemsize}}}};
    case DTypeKind::String: return "string";
    case DTypeKind::VlenBytes: return "variable_length_bytes";
  }
  throw MetadataError(where + ": no Zarr v3 data_type for " + t.name());
}

namespace {

// A numcodecs filter listed before the array->bytes codec acts on the decoded array. When the
// registry models it as bytes->bytes, run it on the native-endian bytes after array->bytes.
class FilterAsArrayCodec final : public codec::ArrayToArrayCodec {
 public:
  explicit FilterAsArrayCodec(std::shared_ptr<const codec::BytesToBytesCodec> inner)
      : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  codec::ChunkSpec encoded_spec(const codec::ChunkSpec& decoded) const override {
    codec::ChunkSpec s = decoded;
    if (auto t = inner_->encoded_dtype(decoded.dtype)) s.dtype = *t;
    return s;
  }
  void decode(codec::ChunkData& in, const codec::ChunkSpec& decoded,
              codec::ChunkData& out) const override {
    out.bytes.resize(decoded.nbytes());
    inner_->decode_into(in.bytes.view(), out.bytes.span());
  }
  void encode(const codec::ChunkData& in, const codec::ChunkSpec&,
              codec::ChunkData& out) const override {
    out.bytes = inner_->encode(in.bytes.view());
  }
  json to_json() const override { return inner_->to_json(); }

 private:
  std::shared_ptr<const codec::BytesToBytesCodec> inner_;
};

}  // namespace

codec::CodecPipeline parse_v3_codecs(const json& codecs, const codec::ChunkSpec& decoded,
                                     const std::string& where) {
  if (!codecs.is_array() || codecs.empty())
    throw MetadataError(where + ": 'codecs' must be a non-empty list");
  codec::CodecPipeline p;
  codec::ChunkSpec spec = decoded;
  for (const auto& c : codecs) {
    std::string name;
    json config = json::object();
    if (c.is_string()) {
      name = c.get<std::string>();
    } else if (c.is_object() && c.contains("name") && c["name"].is_string()) {
      name = c["name"].get<std::string>();
      if (c.contains("configuration") && !c["configuration"].is_null()) config = c["configuration"];
    } else {
      throw MetadataError(where + ": codec entry " + c.dump() + " has no 'name'");
    }
    auto kind = codec::v3_codec_kind(name);
    if (!kind) throw CodecError(where + ": unknown codec '" + name + "'");
    try {
      if (*kind == codec::CodecKind::ArrayToBytes) {
        if (p.array_to_bytes)
          throw MetadataError(where + ": more than one array->bytes codec ('" + name + "')");
        if (name == "sharding_indexed") {
          if (!p.array_codecs.empty())
            throw MetadataError(where + ": array->array codecs before sharding_indexed are not "
                                        "supported");
          p.array_to_bytes = std::make_shared<ShardingCodec>(config, spec, where);
        } else {
          p.array_to_bytes = codec::make_array_to_bytes_codec(name, config, spec);
        }
      } else if (!p.array_to_bytes) {
        // Before array->bytes: an array->array codec (or a numcodecs filter used as one).
        std::shared_ptr<const codec::ArrayToArrayCodec> a;
        if (*kind == codec::CodecKind::ArrayToArray)
          a = codec::make_array_codec(name, config, spec);
        else
          a = std::make_shared<FilterAsArrayCodec>(codec::make_bytes_codec(name, config, spec));
        spec = a->encoded_spec(spec);
        p.array_codecs.push_back(std::move(a));
      } else {
        if (*kind != codec::CodecKind::BytesToBytes)
          throw MetadataError(where + ": codec '" + name + "' must come before the array->bytes codec");
        p.bytes_codecs.push_back(codec::make_bytes_codec(name, config, spec));
      }
    } catch (const MetadataError&) {
      throw;
    } catch (const CodecError& e) {
      const std::string msg = e.what();
      throw CodecError(msg.rfind(where, 0) == 0 ? msg : where + ": " + msg);
    }
  }
  if (!p.array_to_bytes) throw MetadataError(where + ": codecs have no array->bytes codec (e.g. 'bytes')");
  return p;
}

void check_v3_must_understand(const json& doc, const std::string& node_type, const std::string& where) {
  static const std::set<std::string> array_keys = {
      "zarr_format", "node_type", "shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value",
      "codecs", "attributes", "storage_transformers", "dimension_names", "extensions"};
  static const std::set<std::string> group_keys = {"zarr_format", "node_type", "attributes",
                                                   "consolidated_metadata", "extensions"};
  const auto& known = node_type == "array" ? array_keys : group_keys;
  auto optional = [](const json& v) {
    return v.is_object() && v.contains("must_understand") && v["must_understand"] == false;
  };
  for (const auto& [key, value] : doc.items())
    if (!known.count(key) && !value.is_null() && !optional(value))
      throw MetadataError(where + ": zarr.json has the field '" + key +
                          "', which a reader must understand (it is not marked \"must_understand\": false) "
                          "and lazycube does not");
  if (auto it = doc.find("extensions"); it != doc.end() && !it->is_null()) {
    if (!it->is_array()) throw MetadataError(where + ": 'extensions' must be a list, got " + it->dump());
    for (const auto& e : *it)
      if (!optional(e))
        throw MetadataError(where + ": zarr.json lists the extension " +
                            (e.is_object() && e.contains("name") ? e["name"].dump() : e.dump()) +
                            ", which a reader must understand (it is not marked \"must_understand\": false) "
                            "and lazycube does not");
  }
}

ArrayMetadata parse_v3_array(const json& doc, const std::string& where) {
  ArrayMetadata m;
  m.zarr_format = 3;
  const json& fmt = require(doc, "zarr_format", where);
  if (!fmt.is_number_integer() || fmt.get<int>() != 3)
    throw MetadataError(where + ": zarr.json has zarr_format " + fmt.dump() + ", expected 3");
  if (require(doc, "node_type", where) != "array")
    throw MetadataError(where + ": zarr.json is not an array (node_type " + doc["node_type"].dump() + ")");
  check_v3_must_understand(doc, "array", where);
  m.shape = parse_shape(require(doc, "shape", where), "shape", where, true);
  m.dtype = parse_v3_data_type(require(doc, "data_type", where), where);

  const json& grid = require(doc, "chunk_grid", where);
  if (!grid.is_object() || string_member(grid, "name", where + ": chunk_grid") != "regular")
    throw MetadataError(where + ": unsupported chunk_grid " + grid.dump() + " (only 'regular')");
  const json& grid_conf = require(grid, "configuration", where);
  m.chunk_shape = parse_shape(require(grid_conf, "chunk_shape", where), "chunk_shape", where, false);
  if (m.chunk_shape.size() != m.shape.size())
    throw MetadataError(where + ": chunk_shape has " + std::to_string(m.chunk_shape.size()) +
                        " dims but shape has " + std::to_string(m.shape.size()));

  m.key_encoding = ChunkKeyEncoding::v3_default();
  if (auto it = doc.find("chunk_key_encoding"); it != doc.end())
    m.key_encoding = ChunkKeyEncoding::parse(*it, where);

  if (auto it = doc.find("storage_transformers"); it != doc.end() && it->is_array() && !it->empty())
    throw MetadataError(where + ": storage_transformers are not supported: " + it->dump());

  m.codecs = parse_v3_codecs(require(doc, "codecs", where), {m.dtype, m.chunk_shape}, where);
  m.fill = parse_v3_fill_value(require(doc, "fill_value", where), m.dtype, where);

  if (auto it = doc.find("dimension_names"); it != doc.end() && !it->is_null()) {
    if (!it->is_array() || it->size() != m.shape.size())
      throw MetadataError(where + ": dimension_names " + it->dump() + " does not match " +
                          std::to_string(m.shape.size()) + " dims");
    for (const auto& n : *it) m.dimension_names.push_back(n.is_string() ? n.get<std::string>() : "");
  }
  if (auto it = doc.find("attributes"); it != doc.end() && !it->is_null()) {
    if (!it->is_object()) throw MetadataError(where + ": 'attributes' must be an object");
    m.attrs = *it;
  }
  return m;
}

}  // namespace lazycube::zarr
