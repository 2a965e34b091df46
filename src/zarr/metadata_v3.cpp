// Zarr v3 array `zarr.json` → ArrayMetadata.
#include <cstring>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "array_metadata.hpp"
#include "lazycube/error.hpp"
#include "narrow_float.hpp"
#include "optional_type.hpp"
#include "sharding_codec.hpp"
#include "struct_type.hpp"

namespace lazycube::zarr {

using nlohmann::json;

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

// Whether two fill values of `t` are the same: the same bytes, or both a float NaN (a scalar_map
// may give back another NaN pattern).
bool same_fill(const Buffer& a, const Buffer& b, const DataType& t) {
  if (a.size() == b.size() && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size()) == 0)) return true;
  if (t.kind != DTypeKind::Float || a.size() != t.itemsize || b.size() != t.itemsize) return false;
  auto is_nan = [&](const Buffer& v) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, v.data(), t.itemsize);
    const unsigned mantissa = t.itemsize == 2 ? 10 : t.itemsize == 4 ? 23 : 52;
    const std::uint64_t exponent_mask = ((std::uint64_t{1} << (8 * t.itemsize - 1 - mantissa)) - 1) << mantissa;
    return (bits & exponent_mask) == exponent_mask && (bits & ((std::uint64_t{1} << mantissa) - 1)) != 0;
  };
  return is_nan(a) && is_nan(b);
}

// cast_value: the fill value must come back from encode then decode, as a writer pads chunks
// with it and readers give it for absent ones. MetadataError naming the codec and the value when
// it does not (or cannot be encoded at all). The fill passes through the array codecs before it.
// The fill element passes through the codecs as a one-element chunk; the codecs that relabel
// shapes (reshape, transpose) learn the chunk's types from the chunk shape the array has.
void check_fill_round_trips(const ArrayMetadata& m, const json& fill_json, const std::string& where) {
  if (m.dtype.is_variable_length()) return;
  const auto& codecs = m.codecs.array_codecs;
  std::size_t end = 0;  // past the last cast_value: the codecs after it do not matter here
  for (std::size_t i = 0; i < codecs.size(); ++i)
    if (codecs[i]->name() == "cast_value") end = i + 1;
  codec::ChunkSpec chunk{m.dtype, m.chunk_shape};
  codec::ChunkSpec spec{m.dtype, {1}};
  codec::ChunkData fill;
  fill.bytes = m.fill.bytes;
  for (std::size_t i = 0; i < end; ++i) {
    const auto& c = codecs[i];
    const bool cast = c->name() == "cast_value";
    codec::ChunkData encoded, decoded;
    try {
      c->encode(fill, spec, encoded);
      if (cast) c->decode(encoded, spec, decoded);
    } catch (const CodecError& e) {
      if (!cast) return;  // another codec's business
      throw MetadataError(where + ": fill_value " + fill_json.dump() + " does not survive codec cast_value: " + e.what());
    }
    if (cast && !same_fill(fill.bytes, decoded.bytes, spec.dtype))
      throw MetadataError(where + ": fill_value " + fill_json.dump() + " does not survive codec cast_value " +
                          c->to_json().dump() + ": encoded then decoded it is another value");
    chunk = c->encoded_spec(chunk);
    spec = {chunk.dtype, {1}};
    fill = std::move(encoded);
  }
}

}  // namespace

codec::CodecPipeline parse_v3_codecs(const json& codecs, const codec::ChunkSpec& decoded,
                                     const std::string& where, const NarrowFloatFormat* narrow,
                                     const DataType* optional_inner) {
  if (!codecs.is_array() || codecs.empty())
    throw MetadataError(where + ": 'codecs' must be a non-empty list");
  codec::CodecPipeline p;
  codec::ChunkSpec spec = decoded;
  for (const auto& c : codecs) {
    std::string name;
    json config;
    if (!codec::parse_v3_codec_entry(c, name, config))
      throw MetadataError(where + ": codec entry " + c.dump() + " has no 'name'");
    if (is_optional_array_codec(name, config) || (optional_inner != nullptr && name == "optional")) {
      if (optional_inner == nullptr)
        throw MetadataError(where + ": codec 'optional' (mask_codecs, data_codecs) needs the optional data type, the array has " +
                            decoded.dtype.name());
      if (p.array_to_bytes) throw MetadataError(where + ": more than one array->bytes codec ('optional')");
      if (!p.array_codecs.empty())
        throw MetadataError(where + ": array->array codecs before the optional codec are not supported");
      p.array_to_bytes = make_optional_array_codec(config, spec, *optional_inner, where);
      continue;
    }
    auto kind = codec::v3_codec_kind(name);
    if (!kind) throw CodecError(where + ": unknown codec '" + name + "'");
    try {
      if (*kind == codec::CodecKind::ArrayToBytes) {
        if (p.array_to_bytes)
          throw MetadataError(where + ": more than one array->bytes codec ('" + name + "')");
        if (optional_inner != nullptr && name != "sharding_indexed")
          throw MetadataError(where + ": the optional data type is read through the optional codec, not '" + name + "'");
        if (name == "sharding_indexed") {
          if (!p.array_codecs.empty())
            throw MetadataError(where + ": array->array codecs before sharding_indexed are not "
                                        "supported");
          p.array_to_bytes = std::make_shared<ShardingCodec>(config, spec, where, narrow, optional_inner);
        } else if (narrow != nullptr) {
          // bfloat16 / float8_*: the codec reads the stored elements, the chain above sees float32.
          const codec::ChunkSpec stored{DataType::uint(narrow->bytes), spec.shape};
          p.array_to_bytes = make_narrow_float_codec(*narrow, codec::make_array_to_bytes_codec(name, config, stored));
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
  const V3DataType data_type = parse_v3_data_type(require(doc, "data_type", where), where);
  m.dtype = data_type.dtype;
  if (data_type.narrow != nullptr) m.stored_dtype = std::string(data_type.narrow->name);

  parse_v3_chunk_grid(require(doc, "chunk_grid", where), m, where);

  m.key_encoding = ChunkKeyEncoding::v3_default();
  if (auto it = doc.find("chunk_key_encoding"); it != doc.end())
    m.key_encoding = ChunkKeyEncoding::parse(*it, where);

  if (auto it = doc.find("storage_transformers"); it != doc.end() && it->is_array() && !it->empty())
    throw MetadataError(where + ": storage_transformers are not supported: " + it->dump());

  m.codecs = parse_v3_codecs(require(doc, "codecs", where), {m.dtype, m.chunk_shape}, where, data_type.narrow,
                             data_type.optional_inner ? &*data_type.optional_inner : nullptr);
  if (data_type.optional_inner) {
    m.fill.bytes = optional_fill_bytes(require(doc, "fill_value", where), *data_type.optional_inner, where);
    m.fill.specified = true;
  } else if (data_type.layout) {
    // struct: an object of field fill values (legacy `structured`: base64 of the record), read
    // into one native record.
    const json& fill = require(doc, "fill_value", where);
    m.fill.bytes = parse_v3_struct_fill(*data_type.layout, fill, where);
    m.fill.specified = !fill.is_null();
  } else {
    m.fill = parse_v3_fill_value(require(doc, "fill_value", where), data_type, where);
  }

  check_fill_round_trips(m, require(doc, "fill_value", where), where);

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
