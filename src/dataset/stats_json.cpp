// The stats JSON format (include/lazycube/dataset/stats.hpp): written by `lazycube stats -o`
// and lazycube.stats(...).to_json(), read by the batch normalisation.
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <nlohmann/json.hpp>

#include "lazycube/dataset/stats.hpp"
#include "lazycube/error.hpp"

namespace lazycube {

namespace {

constexpr const char* kFormat = "lazycube-stats";
constexpr const char* kKeys[] = {"count", "nan_count", "mean", "std", "min", "max"};

// values (C order over shape) as nested lists; a scalar for an empty shape.
template <class V>
nlohmann::ordered_json nested(const std::vector<V>& values, const Shape& shape, std::size_t dim, std::size_t& at) {
  if (dim == shape.size()) {
    const V v = values[at++];
    if constexpr (std::is_floating_point_v<V>) {
      if (std::isnan(v)) return nullptr;
    }
    return v;
  }
  auto list = nlohmann::ordered_json::array();
  for (std::uint64_t i = 0; i < shape[dim]; ++i) list.push_back(nested(values, shape, dim + 1, at));
  return list;
}

template <class V>
nlohmann::ordered_json nested(const std::vector<V>& values, const Shape& shape) {
  std::size_t at = 0;
  return nested(values, shape, 0, at);
}

[[noreturn]] void bad(const std::string& what) { throw UsageError("stats file: " + what); }

// Flattens nested lists of depth shape.size() into `out`, checking every length.
void flatten(const nlohmann::json& j, const Shape& shape, std::size_t dim, std::vector<double>& out,
             const std::string& where) {
  if (dim == shape.size()) {
    if (j.is_null()) {
      out.push_back(std::numeric_limits<double>::quiet_NaN());
    } else if (j.is_number()) {
      out.push_back(j.get<double>());
    } else {
      bad(where + " holds " + j.dump() + ", not a number or null");
    }
    return;
  }
  if (!j.is_array() || j.size() != shape[dim])
    bad(where + " must be a list of " + std::to_string(shape[dim]) + " along its dim " + std::to_string(dim) +
        ", got " + (j.is_array() ? "a list of " + std::to_string(j.size()) : std::string(j.type_name())));
  for (const auto& e : j) flatten(e, shape, dim + 1, out, where);
}

// A count as read from the file (null: 0); a negative, fractional or too large one is an error
// (converting it to an integer would be undefined behaviour).
std::uint64_t count_of(double c, const std::string& where) {
  if (std::isnan(c)) return 0;
  if (!(c >= 0 && c < 18446744073709551616.0) || std::floor(c) != c)
    bad(where + " holds " + nlohmann::json(c).dump() + ", not a count (a whole number >= 0)");
  return static_cast<std::uint64_t>(c);
}

}  // namespace

nlohmann::ordered_json stats_to_json(const std::vector<VariableStats>& stats) {
  nlohmann::ordered_json out;
  out["format"] = kFormat;
  out["version"] = 1;
  out["ddof"] = 0;
  auto& vars = out["variables"] = nlohmann::ordered_json::object();
  for (const auto& s : stats) {
    auto& v = vars[s.name];
    v["dims"] = s.dims;
    v["shape"] = s.shape;
    v["count"] = nested(s.count, s.shape);
    v["nan_count"] = nested(s.nan_count, s.shape);
    v["mean"] = nested(s.mean, s.shape);
    v["std"] = nested(s.std, s.shape);
    v["min"] = nested(s.min, s.shape);
    v["max"] = nested(s.max, s.shape);
  }
  return out;
}

std::vector<VariableStats> stats_from_json(const nlohmann::json& json) {
  if (!json.is_object() || !json.contains("format") || json["format"] != kFormat)
    bad("not a lazycube stats document (needs \"format\": \"" + std::string(kFormat) + "\")");
  if (!json.contains("version") || json["version"] != 1)
    bad("unsupported version " + (json.contains("version") ? json["version"].dump() : std::string("(none)")) +
        " (this lazycube reads version 1)");
  if (!json.contains("variables") || !json["variables"].is_object()) bad("\"variables\" must be an object");
  std::vector<VariableStats> out;
  for (const auto& [name, v] : json["variables"].items()) {
    const std::string where = "variable '" + name + "'";
    if (!v.is_object()) bad(where + " must be an object");
    VariableStats s;
    s.name = name;
    try {
      s.dims = v.at("dims").get<std::vector<std::string>>();
      s.shape = v.at("shape").get<Shape>();
    } catch (const nlohmann::json::exception&) {
      bad(where + " needs \"dims\" (a list of names) and \"shape\" (a list of sizes)");
    }
    if (s.dims.size() != s.shape.size())
      bad(where + " has " + std::to_string(s.dims.size()) + " dims but a shape of " +
          std::to_string(s.shape.size()));
    std::vector<double> values[6];
    for (int k = 0; k < 6; ++k) {
      if (!v.contains(kKeys[k])) bad(where + " lacks \"" + kKeys[k] + "\"");
      flatten(v[kKeys[k]], s.shape, 0, values[k], where + " \"" + kKeys[k] + "\"");
    }
    for (const double c : values[0]) s.count.push_back(count_of(c, where + " \"count\""));
    for (const double c : values[1]) s.nan_count.push_back(count_of(c, where + " \"nan_count\""));
    s.mean = std::move(values[2]);
    s.std = std::move(values[3]);
    s.min = std::move(values[4]);
    s.max = std::move(values[5]);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<VariableStats> read_stats_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw NotFound("stats file '" + path + "' cannot be opened");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a huge number
    throw UsageError("stats file '" + path + "' is not JSON: " + e.what());
  }
  try {
    return stats_from_json(json);
  } catch (const UsageError& e) {
    throw UsageError("'" + path + "': " + e.what());
  }
}

}  // namespace lazycube
