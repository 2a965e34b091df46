// Readers of the fields of the batch layer's JSON documents (BatchOptions::from_json,
// ForecastSpec::from_json): each checks the value's type and range and throws a UsageError that
// names the field ("target['offset']['time'] must be an integer, got string \"1\"").
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lazycube/batch/sampler.hpp"
#include "lazycube/batch/window_grid.hpp"
#include "lazycube/dtype.hpp"

namespace lazycube::batch::json_fields {

using Json = nlohmann::ordered_json;

// "integer 4", "string \"x\"", "array", ...: what a message says was given.
std::string type_of(const Json& v);
[[noreturn]] void bad(const std::string& field, const std::string& expected, const Json& got);
// A number with an integral value (4.0 is 4, as Python's int() takes it), else `v` itself.
Json integral(const Json& v);
std::uint64_t to_uint(const Json& value, const std::string& field,
                      std::uint64_t max = std::numeric_limits<std::uint64_t>::max());
std::int64_t to_int(const Json& value, const std::string& field);
bool to_bool(const Json& v, const std::string& field);
std::string to_string(const Json& v, const std::string& field);
// A name, or a list of names.
std::vector<std::string> to_names(const Json& v, const std::string& field);
void need_object(const Json& v, const std::string& field, const std::string& expected);
DimSizes to_dim_sizes(const Json& v, const std::string& field);
DimOverlaps to_overlaps(const Json& v, const std::string& field);
// A NumPy dtype name ("float32", "int16", "bool", "datetime64[ns]") or type string ("<f4").
DataType to_dtype(const Json& v, const std::string& field);
// true/false (random/none) or a registered window order's name; `field` names it in errors.
Shuffle to_shuffle(const Json& v, const std::string& field = "shuffle");

}  // namespace lazycube::batch::json_fields
