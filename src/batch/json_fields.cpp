// Reading the fields of the batch layer's JSON documents (BatchOptions::from_json,
// ForecastSpec::from_json): one set of checks and one wording of their errors.
#include "json_fields.hpp"

#include <cmath>
#include <limits>

#include "lazycube/error.hpp"
#include "sample_order.hpp"

namespace lazycube::batch::json_fields {


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

std::uint64_t to_uint(const Json& value, const std::string& field, std::uint64_t max) {
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

Shuffle to_shuffle(const Json& v, const std::string& field) {
  if (v.is_boolean()) return v.get<bool>() ? Shuffle::Random : Shuffle::None;
  if (!v.is_string())
    bad(field, "true/false or one of " + SampleOrderRegistry::instance().choices(), v);
  return parse_shuffle(v.get<std::string>());  // UsageError "shuffle: unknown value ..."
}

}  // namespace lazycube::batch::json_fields
