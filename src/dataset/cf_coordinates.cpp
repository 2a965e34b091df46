#include "cf_coordinates.hpp"

#include <algorithm>
#include <sstream>
#include <nlohmann/json.hpp>

#include "lazycube/error.hpp"

namespace lazycube {

namespace {

// xarray's CF_RELATED_DATA; the last two spell "role: name" pairs.
const char* const kRelated[] = {"bounds",    "grid_mapping",    "climatology",   "geometry",
                                "node_coordinates", "node_count", "part_node_count",
                                "interior_ring",    "cell_measures", "formula_terms"};

bool needs_parsing(const std::string& key) { return key == "cell_measures" || key == "formula_terms"; }

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The variable names an attribute value lists: every word, or for "role: name role: name"
// every second one (xarray splits on ':' then on whitespace).
std::vector<std::string> referenced(const std::string& key, const std::string& value) {
  if (!needs_parsing(key)) return words(value);
  std::string spaced = value;
  std::replace(spaced.begin(), spaced.end(), ':', ' ');
  const auto parts = words(spaced);
  std::vector<std::string> out;
  for (std::size_t i = 1; i < parts.size(); i += 2) out.push_back(parts[i]);
  return out;
}

}  // namespace

void check_decode_coords(const std::string& mode) {
  if (!mode.empty() && mode != "coordinates" && mode != "all")
    throw UsageError("decode_coords must be True/'coordinates', 'all' or False, not '" + mode + "'");
}

CfCoordinates decode_cf_coordinates(const std::map<std::string, nlohmann::json>& attrs,
                                    nlohmann::json& global_attrs, const std::string& mode) {
  check_decode_coords(mode);
  CfCoordinates out;
  if (mode.empty()) return out;
  const auto all_exist = [&](const std::vector<std::string>& names) {
    return std::all_of(names.begin(), names.end(), [&](const std::string& n) { return attrs.count(n) != 0; });
  };
  for (const auto& [name, a] : attrs) {
    if (!a.is_object()) continue;
    std::vector<std::string> keys{"coordinates"};
    if (mode == "all") keys.insert(keys.end(), std::begin(kRelated), std::end(kRelated));
    for (const auto& key : keys) {
      auto it = a.find(key);
      if (it == a.end() || !it->is_string()) continue;
      const std::vector<std::string> names = referenced(key, it->get<std::string>());
      if (key != "coordinates" && needs_parsing(key)) {
        std::string spaced = it->get<std::string>();
        std::replace(spaced.begin(), spaced.end(), ':', ' ');
        if (words(spaced).size() % 2 == 1) out.warnings.push_back("Attribute " + key + " malformed");
      }
      if (all_exist(names)) {
        out.moved[name].push_back(key);
      } else if (key != "coordinates") {
        out.dropped[name].push_back(key);
        std::string missing;
        for (const auto& n : names)
          if (attrs.count(n) == 0) missing += (missing.empty() ? "'" : ", '") + n + "'";
        out.warnings.push_back("Variable(s) referenced in " + key + " not in variables: [" + missing + "]");
      }
    }
  }
  if (global_attrs.is_object()) {
    auto it = global_attrs.find("coordinates");
    if (it != global_attrs.end() && it->is_string()) {
      out.global = words(it->get<std::string>());
      global_attrs.erase(it);
    }
  }
  return out;
}

void inherit_time_bounds_attributes(std::map<std::string, nlohmann::json>& attrs) {
  for (const auto& [name, a] : attrs) {
    if (!a.is_object()) continue;
    auto units = a.find("units"), bounds = a.find("bounds");
    if (units == a.end() || !units->is_string() || units->get<std::string>().find("since") == std::string::npos ||
        bounds == a.end() || !bounds->is_string())
      continue;
    auto target = attrs.find(bounds->get<std::string>());
    if (target == attrs.end() || target->first == name || !target->second.is_object()) continue;
    if (!target->second.contains("units")) target->second["units"] = *units;
    if (auto cal = a.find("calendar"); cal != a.end() && !target->second.contains("calendar"))
      target->second["calendar"] = *cal;
  }
}

std::vector<std::string> cf_coordinate_names(const nlohmann::json& encoding) {
  std::vector<std::string> out;
  if (!encoding.is_object()) return out;
  const auto add = [&](const std::string& key) {
    auto it = encoding.find(key);
    if (it == encoding.end() || !it->is_string()) return;
    for (auto& n : referenced(key, it->get<std::string>())) out.push_back(std::move(n));
  };
  add("coordinates");
  for (const char* key : kRelated) add(key);
  return out;
}

}  // namespace lazycube
