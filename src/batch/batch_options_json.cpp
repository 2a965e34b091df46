// BatchOptions::from_json: the generator's arguments as one document, parsed and checked once
// for Python (lazycube._core.BatchGenerator), the CLI (lazycube bench) and C++ callers.
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "lazycube/batch/batch_generator.hpp"
#include "lazycube/error.hpp"
#include "sample_order.hpp"

namespace lazycube::batch {

namespace {
namespace options_json {

using Json = nlohmann::ordered_json;

std::string type_of(const Json& v) {
  if (v.is_number_integer()) return "integer " + v.dump();
  if (v.is_number_float()) return "number " + v.dump();
  if (v.is_string()) return "string " + v.dump();
  return std::string(v.type_name());
}

[[noreturn]] void bad(const std::string& field, const std::string& expected, const Json& got) {
  throw UsageError(field + " must be " + expected + ", got " + type_of(got));
}

// A number with an integral value (4.0 is 4, as Python's int() takes it), else `v` itself.
Json integral(const Json& v) {
  if (!v.is_number_float()) return v;
  const double d = v.get<double>();
  if (!(std::trunc(d) == d) || !(std::fabs(d) < 9.007199254740992e15)) return v;  // 2**53
  return Json(static_cast<std::int64_t>(d));
}

std::uint64_t to_uint(const Json& value, const std::string& field,
                      std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
  const Json v = integral(value);
  if (v.is_number_unsigned()) {
    const auto n = v.get<std::uint64_t>();
    if (n <= max) return n;
  } else if (v.is_number_integer()) {
    const auto n = v.get<std::int64_t>();
    if (n < 0) throw UsageError(field + " must not be negative, got " + std::to_string(n));
    if (static_cast<std::uint64_t>(n) <= max) return static_cast<std::uint64_t>(n);
  } else {
    bad(field, "a non-negative integer", v);
  }
  throw UsageError(field + " must be at most " + std::to_string(max) + ", got " + v.dump());
}

std::int64_t to_int(const Json& value, const std::string& field) {
  const Json v = integral(value);
  if (v.is_number_integer() && !(v.is_number_unsigned() &&
                                 v.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max())))
    return v.get<std::int64_t>();
  bad(field, "an integer", v);
}

bool to_bool(const Json& v, const std::string& field) {
  if (!v.is_boolean()) bad(field, "true or false", v);
  return v.get<bool>();
}

std::string to_string(const Json& v, const std::string& field) {
  if (!v.is_string()) bad(field, "a string", v);
  return v.get<std::string>();
}

// A name, or a list of names.
std::vector<std::string> to_names(const Json& v, const std::string& field) {
  if (v.is_string()) return {v.get<std::string>()};
  if (!v.is_array()) bad(field, "a name or a list of names", v);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) out.push_back(to_string(v[i], field + "[" + std::to_string(i) + "]"));
  return out;
}

void need_object(const Json& v, const std::string& field, const std::string& expected) {
  if (!v.is_object()) bad(field, expected, v);
}

DimSizes to_dim_sizes(const Json& v, const std::string& field) {
  need_object(v, field, "an object of dim name -> size");
  DimSizes out;
  for (const auto& [dim, n] : v.items()) out.emplace_back(dim, to_uint(n, field + "['" + dim + "']"));
  return out;
}

DimOverlaps to_overlaps(const Json& v, const std::string& field) {
  need_object(v, field, "an object of dim name -> overlap");
  DimOverlaps out;
  for (const auto& [dim, n] : v.items()) out[dim] = to_int(n, field + "['" + dim + "']");
  return out;
}

// A NumPy dtype name ("float32", "int16", "bool", "datetime64[ns]") or type string ("<f4").
DataType to_dtype(const Json& v, const std::string& field) {
  const std::string name = to_string(v, field);
  std::string typestr = name;
  const auto sized = [&](const std::string& prefix, char code) {
    if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) return false;
    const std::string bits = name.substr(prefix.size());
    if (bits.find_first_not_of("0123456789") != std::string::npos) return false;
    typestr = std::string("<") + code + std::to_string(std::stoul(bits) / 8);
    return true;
  };
  if (name == "bool") {
    typestr = "|b1";
  } else if (name == "int8" || name == "uint8") {
    typestr = name == "int8" ? "|i1" : "|u1";
  } else if (sized("uint", 'u') || sized("int", 'i') || sized("float", 'f') || sized("complex", 'c')) {
  } else if (name.rfind("datetime64", 0) == 0) {
    typestr = "<M8" + name.substr(10);
  } else if (name.rfind("timedelta64", 0) == 0) {
    typestr = "<m8" + name.substr(11);
  }
  try {
    return parse_numpy_dtype(typestr).dtype;
  } catch (const Error&) {
    throw UsageError(field + ": unknown dtype '" + name + "' (a NumPy dtype name such as float32)");
  }
}

TargetSpec to_target(const Json& v) {
  TargetSpec t;
  if (!v.is_object()) {
    if (!v.is_string() && !v.is_array())
      bad("target", "a variable name, a list of names or {\"variables\", \"offset\"}", v);
    t.variables = to_names(v, "target");
    return t;
  }
  for (const auto& [key, value] : v.items()) {
    if (key == "variables") {
      if (!value.is_null()) t.variables = to_names(value, "target['variables']");
    } else if (key == "offset") {
      if (!value.is_null()) t.offset = to_overlaps(value, "target['offset']");
    } else {
      throw UsageError("target takes the keys 'variables' and 'offset', not '" + key + "'");
    }
  }
  if (t.variables.empty() && t.offset.empty()) throw UsageError("target needs 'variables' and/or 'offset'");
  return t;
}

ValidityFilter to_filter(const Json& v) {
  if (!v.is_object()) bad("filter", "an object like {\"variable\": \"t2m\", \"max_nan_fraction\": 0.1}", v);
  ValidityFilter f;
  for (const auto& [key, value] : v.items()) {
    if (key == "variable") {
      if (!value.is_null()) f.variable = to_string(value, "filter['variable']");
    } else if (key == "max_nan_fraction") {
      if (!value.is_number()) bad("filter['max_nan_fraction']", "a number", value);
      f.max_nan_fraction = value.get<double>();
    } else {
      throw UsageError("filter takes the keys 'variable' and 'max_nan_fraction', not '" + key + "'");
    }
  }
  return f;
}

Shuffle to_shuffle(const Json& v) {
  if (v.is_boolean()) return v.get<bool>() ? Shuffle::Random : Shuffle::None;
  if (!v.is_string())
    bad("shuffle", "true/false or one of " + SampleOrderRegistry::instance().choices(), v);
  return parse_shuffle(v.get<std::string>());  // UsageError "shuffle: unknown value ..."
}

std::vector<VariableStats> to_normalize(const Json& v) {
  if (v.is_string()) return read_stats_file(v.get<std::string>());
  if (!v.is_object()) bad("normalize", "a stats document or the path of a stats JSON file", v);
  try {
    return stats_from_json(nlohmann::json::parse(v.dump()));
  } catch (const UsageError& e) {
    throw UsageError(std::string("normalize: ") + e.what());
  }
}

}  // namespace options_json
}  // namespace

const std::vector<std::string>& BatchOptions::json_keys() {
  static const std::vector<std::string> keys = {
      "input_dims", "input_overlap", "batch_dims", "concat_input_dims", "batch_size", "drop_last",
      "variables", "dtype", "float_dtype", "target", "filter", "normalize", "shuffle", "seed",
      "rank", "world_size", "worker", "num_workers", "prefetch", "fetch_ahead_bytes", "cache_bytes"};
  return keys;
}

BatchOptions BatchOptions::from_json(const nlohmann::ordered_json& document) {
  using namespace options_json;
  if (!document.is_object()) bad("the batch options", "an object", document);
  constexpr auto u32 = std::uint64_t{std::numeric_limits<std::uint32_t>::max()};
  BatchOptions o;
  for (const auto& [key, v] : document.items()) {
    if (v.is_null()) {
      bool known = false;
      for (const auto& k : json_keys()) known = known || k == key;
      if (known) continue;  // null: the default
    }
    if (key == "input_dims") {
      o.input_dims = to_dim_sizes(v, key);
    } else if (key == "input_overlap") {
      o.input_overlap = to_overlaps(v, key);
    } else if (key == "batch_dims") {
      o.batch_dims = to_dim_sizes(v, key);
    } else if (key == "concat_input_dims") {
      o.concat_input_dims = to_bool(v, key);
    } else if (key == "batch_size") {
      o.batch_size = to_uint(v, key);
    } else if (key == "drop_last") {
      o.drop_last = to_bool(v, key);
    } else if (key == "variables") {
      o.variables = to_names(v, key);
    } else if (key == "dtype") {
      o.dtype = to_dtype(v, key);
    } else if (key == "float_dtype") {
      o.float_dtype = to_dtype(v, key);
    } else if (key == "target") {
      o.target = to_target(v);
    } else if (key == "filter") {
      o.filter = to_filter(v);
    } else if (key == "normalize") {
      o.normalize = to_normalize(v);
    } else if (key == "shuffle") {
      o.shuffle = to_shuffle(v);
    } else if (key == "seed") {
      o.seed = to_uint(v, key);
    } else if (key == "rank") {
      o.shard.rank = static_cast<std::uint32_t>(to_uint(v, key, u32));
    } else if (key == "world_size") {
      o.shard.world_size = static_cast<std::uint32_t>(to_uint(v, key, u32));
    } else if (key == "worker") {
      o.shard.worker = static_cast<std::uint32_t>(to_uint(v, key, u32));
    } else if (key == "num_workers") {
      o.shard.num_workers = static_cast<std::uint32_t>(to_uint(v, key, u32));
    } else if (key == "prefetch") {
      o.prefetch = static_cast<std::size_t>(to_uint(v, key, std::numeric_limits<std::size_t>::max()));
    } else if (key == "fetch_ahead_bytes") {
      o.fetch_ahead_bytes = to_uint(v, key);
    } else if (key == "cache_bytes") {
      o.cache = std::make_shared<ChunkCache>(to_uint(v, key));
    } else {
      std::string known;
      for (const auto& k : json_keys()) known += (known.empty() ? "" : ", ") + k;
      throw UsageError("unknown batch option '" + key + "' (known: " + known + ")");
    }
  }
  return o;
}

}  // namespace lazycube::batch
