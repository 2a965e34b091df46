// Zarr v3 `data_type` ↔ DataType: the core types, the zarr-extensions registry's types
// (bfloat16 / float8_* widened to float32, fixed-length strings, numpy.datetime64 /
// numpy.timedelta64) and the spellings earlier zarr-python versions wrote.
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "array_metadata.hpp"
#include "lazycube/error.hpp"
#include "narrow_float.hpp"
#include "optional_type.hpp"
#include "struct_type.hpp"

namespace lazycube::zarr {

using nlohmann::json;

namespace {

class DataTypeReader {
 public:
  DataTypeReader(const json& v, const std::string& where) : v_(v), where_(where) {
    if (v.is_string()) {
      name_ = v.get<std::string>();
    } else if (v.is_object() && v.contains("name") && v["name"].is_string()) {
      name_ = v["name"].get<std::string>();
      if (auto it = v.find("configuration"); it != v.end() && !it->is_null()) {
        if (!it->is_object()) throw bad("configuration must be an object, got " + it->dump());
        config_ = *it;
      }
    } else {
      throw bad("expected a name or {name, configuration}");
    }
  }

  const std::string& name() const { return name_; }

  MetadataError bad(const std::string& why) const {
    return MetadataError(where_ + ": unsupported data_type " + v_.dump() + (why.empty() ? "" : ": " + why));
  }

  // Refuses configuration fields other than `allowed`, naming the first one.
  void only(std::initializer_list<const char*> allowed) const {
    for (const auto& [key, value] : config_.items()) {
      bool ok = false;
      for (const char* a : allowed) ok = ok || key == a;
      if (!ok) throw bad("unknown configuration field '" + key + "'");
    }
  }

  // A required positive integer configuration field, at most `max`.
  std::uint64_t positive(const char* key, std::uint64_t max) const {
    auto it = config_.find(key);
    if (it == config_.end()) throw bad(std::string("missing configuration.") + key);
    // JSON text parses to unsigned; metadata built in memory (the writer's) may hold a signed integer.
    std::uint64_t n = 0;
    if (it->is_number_unsigned()) n = it->get<std::uint64_t>();
    else if (it->is_number_integer() && it->get<std::int64_t>() > 0) n = static_cast<std::uint64_t>(it->get<std::int64_t>());
    if (n == 0 || n > max)
      throw bad(std::string("configuration.") + key + " must be an integer in [1, " + std::to_string(max) +
                "], got " + it->dump());
    return n;
  }

  const json& config() const { return config_; }

 private:
  const json& v_;
  const std::string& where_;
  std::string name_;
  json config_ = json::object();
};

constexpr std::uint64_t kMaxItemBytes = std::uint64_t{1} << 31;

// numpy.datetime64 / numpy.timedelta64 (zarr-python 3.3 requires unit and scale_factor), and
// the older spellings: no scale_factor, or the draft names "datetime64" / "timedelta64".
DataType parse_time_type(const DataTypeReader& r, bool datetime, bool legacy_name) {
  if (legacy_name) r.only({"unit"});
  else r.only({"unit", "scale_factor"});
  const json& config = r.config();
  auto unit_it = config.find("unit");
  if (unit_it == config.end()) throw r.bad("missing configuration.unit");
  if (!unit_it->is_string()) throw r.bad("configuration.unit must be a string, got " + unit_it->dump());
  std::string unit = unit_it->get<std::string>();
  // The spec spells microseconds "us" or "μs" (Greek mu); the micro sign is taken too.
  if (unit == "\u03bcs" || unit == "\u00b5s") unit = "us";
  std::int64_t scale = 1;
  if (config.contains("scale_factor")) scale = static_cast<std::int64_t>(r.positive("scale_factor", 2147483647));
  // Validate the unit through the numpy parser.
  const std::string np = std::string(datetime ? "<M8[" : "<m8[") + (scale == 1 ? "" : std::to_string(scale)) +
                         unit + "]";
  try {
    return parse_numpy_dtype(np).dtype;
  } catch (const MetadataError&) {
    throw r.bad("configuration.unit '" + unit + "' is not a numpy time unit");
  }
}

// Fixed-length strings: fixed_length_utf32 / null_terminated_bytes / fixed_length_bytes /
// raw_bytes (length_bytes), and the registry's first spellings fixed-length-ucs4 /
// fixed-length-ascii / fixed-length-bytes (length_bits). nullopt for other names.
std::optional<V3DataType> parse_fixed_text(const DataTypeReader& r) {
  const std::string& name = r.name();
  const bool utf32 = name == "fixed_length_utf32";
  const bool bytes = name == "fixed_length_bytes" || name == "null_terminated_bytes" || name == "raw_bytes";
  if (utf32 || bytes) {
    r.only({"length_bytes"});
    const std::uint64_t n = r.positive("length_bytes", kMaxItemBytes);
    if (utf32 && n % 4 != 0)
      throw r.bad("configuration.length_bytes must be a multiple of 4, got " + std::to_string(n));
    return V3DataType{utf32 ? DataType::unicode(n / 4) : DataType::bytes(n)};
  }
  const bool ucs4 = name == "fixed-length-ucs4";
  const bool ascii = name == "fixed-length-ascii";
  if (!ucs4 && !ascii && name != "fixed-length-bytes") return std::nullopt;
  r.only({"length_bits"});
  const std::uint64_t bits = r.positive("length_bits", 8 * kMaxItemBytes);
  const std::uint64_t unit = ucs4 ? 32 : 8;
  if (bits % unit != 0)
    throw r.bad("configuration.length_bits must be a multiple of " + std::to_string(unit) + ", got " +
                std::to_string(bits));
  V3DataType t{ucs4 ? DataType::unicode(bits / 32) : DataType::bytes(bits / 8)};
  t.fill = ascii ? V3DataType::Fill::AsciiText : ucs4 ? V3DataType::Fill::Default : V3DataType::Fill::Base64;
  return t;
}

}  // namespace

V3DataType parse_v3_data_type(const json& v, const std::string& where) {
  const DataTypeReader r(v, where);
  const std::string& name = r.name();
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
    if (name == n) return {t};
  if (const NarrowFloatFormat* f = find_narrow_float(name)) {
    r.only({});
    V3DataType t{DataType::float_(4)};
    t.narrow = f;
    return t;
  }
  if (name == "numpy.datetime64" || name == "numpy.timedelta64")
    return {parse_time_type(r, name == "numpy.datetime64", false)};
  if (name == "datetime64" || name == "timedelta64") return {parse_time_type(r, name == "datetime64", true)};
  if (auto t = parse_fixed_text(r)) return *t;
  if (name == "optional") {
    r.only({"name", "configuration"});
    const json& config = r.config();
    if (!config.contains("name")) throw r.bad("missing configuration.name (the inner data type)");
    json inner_json{{"name", config["name"]}};
    if (config.contains("configuration")) inner_json["configuration"] = config["configuration"];
    const V3DataType inner = parse_v3_data_type(inner_json, where);
    if (inner.layout || inner.narrow != nullptr || inner.optional_inner)
      throw r.bad("an optional " + inner_json.dump() + " is not supported");
    V3DataType t{optional_read_type(inner.dtype, where)};
    t.optional_inner = inner.dtype;
    return t;
  }
  if (name == "struct" || name == "structured") {
    V3DataType t;
    t.layout = parse_v3_struct(r.config(), name == "structured", where);
    t.dtype = record_dtype(*t.layout);
    return t;
  }
  if (name.size() > 1 && name[0] == 'r') {  // raw bits r8, r16, ...: read as bytes
    std::size_t bits = 0;
    for (std::size_t i = 1; i < name.size(); ++i) {
      if (name[i] < '0' || name[i] > '9' || bits > 8 * kMaxItemBytes) throw r.bad("unknown data type name");
      bits = bits * 10 + static_cast<std::size_t>(name[i] - '0');
    }
    if (bits == 0 || bits % 8 != 0) throw r.bad("raw bits must be a multiple of 8");
    return {DataType::bytes(bits / 8)};
  }
  throw r.bad("unknown data type name '" + name + "'");
}

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
    case DTypeKind::Record: {
      json fields = json::array();
      std::size_t packed = 0;
      for (const RecordField& f : *t.fields) {
        if (f.offset != packed) break;  // numpy padding: not a Zarr v3 struct
        fields.push_back({{"name", f.name}, {"data_type", v3_data_type_json(f.dtype, where)}});
        packed += f.dtype.itemsize;
      }
      if (packed == t.itemsize && fields.size() == t.fields->size())
        return {{"name", "struct"}, {"configuration", {{"fields", fields}}}};
      break;
    }
  }
  throw MetadataError(where + ": no Zarr v3 data_type for " + t.name());
}

}  // namespace lazycube::zarr
