// ForecastSpec::from_json / to_json and the durations and anchors its fields are written in.
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "json_fields.hpp"
#include "lazycube/batch/forecast.hpp"
#include "lazycube/dataset/cf_time.hpp"
#include "lazycube/error.hpp"

namespace lazycube::batch {

namespace {
namespace forecast_json {

using namespace json_fields;

constexpr std::int64_t kSecond = 1'000'000'000;

// Nanoseconds in a unit as pandas spells them (case matters only for "M", months, refused).
std::optional<std::int64_t> unit_ns(const std::string& unit) {
  static const std::vector<std::pair<std::set<std::string>, std::int64_t>> units = {
      {{"ns", "nanosecond", "nanoseconds", "N"}, 1},
      {{"us", "microsecond", "microseconds", "U"}, 1'000},
      {{"ms", "millisecond", "milliseconds", "L"}, 1'000'000},
      {{"s", "S", "sec", "second", "seconds"}, kSecond},
      {{"m", "min", "T", "minute", "minutes"}, 60 * kSecond},
      {{"h", "H", "hr", "hour", "hours"}, 3600 * kSecond},
      {{"d", "D", "day", "days"}, 86400 * kSecond},
      {{"w", "W", "week", "weeks"}, 7 * 86400 * kSecond}};
  for (const auto& [names, ns] : units)
    if (names.count(unit)) return ns;
  return std::nullopt;
}

[[noreturn]] void bad_duration(const std::string& field, const std::string& text, const std::string& why) {
  throw UsageError(field + ": '" + text + "' is not a duration (" + why +
                   "; write e.g. \"6h\", \"-6h\", \"30min\", \"1d\", \"90s\" or ISO 8601 \"PT6H\")");
}

// Adds `value` (a decimal number as written) times `unit` nanoseconds to `total`, exactly for
// whole numbers and to the nanosecond for fractions.
void add_amount(std::int64_t& total, const std::string& value, std::int64_t unit, const std::string& field,
                const std::string& text) {
  const auto dot = value.find('.');
  const std::string whole = value.substr(0, dot);
  const std::string frac = dot == std::string::npos ? "" : value.substr(dot + 1);
  if (whole.empty() && frac.empty()) bad_duration(field, text, "a number is missing");
  __int128 ns = 0;
  for (char c : whole) {
    ns = ns * 10 + (c - '0');
    if (ns > std::numeric_limits<std::int64_t>::max()) bad_duration(field, text, "too long");
  }
  ns *= unit;
  __int128 scale = unit;
  for (char c : frac) {
    scale = scale / 10;
    ns += scale * (c - '0');
  }
  const __int128 sum = static_cast<__int128>(total) + ns;
  if (sum > std::numeric_limits<std::int64_t>::max()) bad_duration(field, text, "too long");
  total = static_cast<std::int64_t>(sum);
}

// ISO 8601 "PnDTnHnMnS" (also weeks "PnW"); years and months have no fixed length: refused.
std::int64_t parse_iso_duration(const std::string& body, const std::string& field, const std::string& text) {
  std::int64_t total = 0;
  bool in_time = false, any = false;
  std::string number;
  for (std::size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == ',') {
      number += c == ',' ? '.' : c;
      continue;
    }
    if (c == 'T') {
      if (!number.empty() || in_time) bad_duration(field, text, "misplaced 'T'");
      in_time = true;
      continue;
    }
    const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    std::int64_t unit = 0;
    if (!in_time && u == 'W') unit = 7 * 86400 * kSecond;
    else if (!in_time && u == 'D') unit = 86400 * kSecond;
    else if (in_time && u == 'H') unit = 3600 * kSecond;
    else if (in_time && u == 'M') unit = 60 * kSecond;
    else if (in_time && u == 'S') unit = kSecond;
    else if (!in_time && (u == 'Y' || u == 'M'))
      bad_duration(field, text, "years and months have no fixed length");
    else
      bad_duration(field, text, std::string("unknown designator '") + c + "'");
    if (number.empty()) bad_duration(field, text, std::string("no number before '") + c + "'");
    add_amount(total, number, unit, field, text);
    number.clear();
    any = true;
  }
  if (!number.empty() || !any) bad_duration(field, text, "a number without its unit");
  return total;
}

}  // namespace forecast_json
}  // namespace

std::int64_t parse_duration_ns(const std::string& text_in, const std::string& field) {
  using namespace forecast_json;
  std::string text;
  for (char c : text_in)
    if (!std::isspace(static_cast<unsigned char>(c))) text += c;
  if (text.empty()) bad_duration(field, text_in, "it is empty");
  std::size_t i = 0;
  bool negative = false;
  if (text[0] == '-' || text[0] == '+') {
    negative = text[0] == '-';
    i = 1;
  }
  std::int64_t total = 0;
  if (i < text.size() && (text[i] == 'P' || text[i] == 'p')) {
    total = parse_iso_duration(text.substr(i + 1), field, text_in);
  } else {
    // A sum of <number><unit> terms: "6h", "1d6h", "1.5h", "30min".
    bool any = false;
    while (i < text.size()) {
      std::string number, unit;
      while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
        number += text[i++];
      while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) unit += text[i++];
      if (number.empty()) bad_duration(field, text_in, "a number is missing");
      if (unit.empty()) bad_duration(field, text_in, "a unit is missing after " + number);
      if (unit == "M" || unit == "Y" || unit == "y" || unit == "months" || unit == "years")
        bad_duration(field, text_in, "years and months have no fixed length");
      const auto ns = unit_ns(unit);
      if (!ns) bad_duration(field, text_in, "unknown unit '" + unit + "'");
      add_amount(total, number, *ns, field, text_in);
      any = true;
    }
    if (!any) bad_duration(field, text_in, "a number is missing");
  }
  return negative ? -total : total;
}

std::string format_duration(std::int64_t ns) {
  if (ns == 0) return "0h";
  const std::string sign = ns < 0 ? "-" : "";
  const std::uint64_t a = ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  static const std::pair<std::uint64_t, const char*> units[] = {
      {86400ull * 1'000'000'000, "d"}, {3600ull * 1'000'000'000, "h"}, {60ull * 1'000'000'000, "min"},
      {1'000'000'000, "s"}, {1'000'000, "ms"}, {1'000, "us"}, {1, "ns"}};
  for (const auto& [n, name] : units)
    if (a % n == 0) {
      // whole days that are not whole weeks read best in hours up to 2 days (GraphCast's "48h")
      if (n == 86400ull * 1'000'000'000 && a < 3 * n) return sign + std::to_string(a / 3600'000'000'000ull) + "h";
      return sign + std::to_string(a / n) + name;
    }
  return sign + std::to_string(a) + "ns";
}

namespace {
namespace forecast_json {

std::int64_t to_duration(const Json& v, const std::string& field) {
  if (!v.is_string()) bad(field, "a duration such as \"6h\" (a string)", v);
  return parse_duration_ns(v.get<std::string>(), field);
}

std::vector<std::int64_t> to_durations(const Json& v, const std::string& field) {
  if (v.is_string()) return {to_duration(v, field)};
  if (!v.is_array()) bad(field, "a list of durations such as [\"-6h\", \"0h\"]", v);
  std::vector<std::int64_t> out;
  std::set<std::int64_t> seen;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string f = field + "[" + std::to_string(i) + "]";
    out.push_back(to_duration(v[i], f));
    if (!seen.insert(out.back()).second)
      throw UsageError(f + ": the offset " + format_duration(out.back()) + " is given twice");
  }
  return out;
}

std::optional<std::int64_t> to_time(const Json& v, const std::string& field) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_string()) bad(field, "a date-time such as \"2017-01-01T06:00\" (a string)", v);
  std::string text = v.get<std::string>();
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  if (text.empty() || text == "..") return std::nullopt;  // ISO 8601-2's open end
  // a year alone, or a year and month ("2017", "2017-03"): their first instant
  std::string full = text;
  if (full.size() == 4 && std::isdigit(static_cast<unsigned char>(full[0]))) full += "-01-01";
  else if (full.size() == 7 && full[4] == '-') full += "-01";
  // an hour alone ("2017-01-01T06", as NumPy writes it): its first minute
  else if (full.size() == 13 && (full[10] == 'T' || full[10] == ' ')) full += ":00";
  const auto ns = cf::parse_datetime_ns(full);
  if (!ns) throw UsageError(field + ": '" + text + "' is not a date-time (write e.g. \"2017-01-01\" or \"2017-01-01T06:00\")");
  return *ns;
}

AnchorRange to_anchor_range(const Json& v, const std::string& field) {
  if (v.is_object()) {
    AnchorRange r;
    for (const auto& [key, value] : v.items()) {
      if (key == "start") r.start = to_time(value, field + "['start']");
      else if (key == "end" || key == "stop") r.end = to_time(value, field + "['" + key + "']");
      else throw UsageError(field + " takes the keys 'start' and 'end', not '" + key + "'");
    }
    return r;
  }
  if (!v.is_string())
    bad(field, "an ISO interval \"start/end\", a date-time, or {\"start\", \"end\"}", v);
  const std::string text = v.get<std::string>();
  const auto slash = text.find('/');
  if (slash == std::string::npos) {
    const auto t = to_time(v, field);
    if (!t) throw UsageError(field + " is empty: give a date-time or an interval \"start/end\"");
    return {t, t};
  }
  AnchorRange r;
  const std::string a = text.substr(0, slash), b = text.substr(slash + 1);
  const auto is_duration = [](const std::string& s) { return !s.empty() && (s[0] == 'P' || s[0] == 'p'); };
  if (is_duration(a) && is_duration(b)) throw UsageError(field + ": '" + text + "' gives no date-time");
  if (!is_duration(a)) r.start = to_time(Json(a), field + " (start)");
  if (!is_duration(b)) r.end = to_time(Json(b), field + " (end)");
  if (is_duration(b)) {
    if (!r.start) throw UsageError(field + ": '" + text + "': a duration needs a start");
    r.end = *r.start + parse_duration_ns(b, field + " (duration)");
  } else if (is_duration(a)) {
    if (!r.end) throw UsageError(field + ": '" + text + "': a duration needs an end");
    r.start = *r.end - parse_duration_ns(a, field + " (duration)");
  }
  if (r.start && r.end && *r.start > *r.end)
    throw UsageError(field + ": '" + text + "' ends before it starts");
  return r;
}

// names, a list, or {stream: names} -> names per stream (every stream for a plain list)
std::vector<std::vector<std::string>> to_stream_names(const Json& v, const std::string& field,
                                                      const std::vector<std::string>& streams) {
  std::vector<std::vector<std::string>> out(streams.size());
  if (!v.is_object()) {
    const auto names = to_names(v, field);
    for (auto& o : out) o = names;
    return out;
  }
  for (const auto& [stream, names] : v.items()) {
    std::size_t s = 0;
    while (s < streams.size() && streams[s] != stream) ++s;
    if (s == streams.size()) {
      std::string known;
      for (const auto& n : streams) known += (known.empty() ? "'" : ", '") + n + "'";
      throw UsageError(field + " names stream '" + stream + "', which is not one of the data's streams (" +
                       (streams.size() == 1 && streams[0].empty() ? std::string("one unnamed stream: give a list")
                                                                   : known) + ")");
    }
    if (!names.is_null()) out[s] = to_names(names, field + "['" + stream + "']");
  }
  return out;
}

}  // namespace forecast_json
}  // namespace

const std::vector<std::string>& ForecastSpec::json_keys() {
  static const std::vector<std::string> keys = {
      "inputs", "targets", "forcings", "input_offsets", "target_offsets", "anchors", "anchor_step",
      "time_dim", "missing", "patch_dims", "patch_overlap"};
  return keys;
}

ForecastSpec ForecastSpec::from_json(const nlohmann::ordered_json& document, const std::vector<std::string>& streams) {
  using namespace forecast_json;
  if (!document.is_object()) bad("the forecast sample specification", "an object", document);
  if (streams.empty()) throw UsageError("the forecast samples need at least one stream of data");
  ForecastSpec s;
  for (const auto& name : streams) s.streams.emplace_back(name, StreamVariables{});
  bool has_input_offsets = false;
  for (const auto& [key, v] : document.items()) {
    if (v.is_null()) {
      bool known = false;
      for (const auto& k : json_keys()) known = known || k == key;
      if (known) continue;
    }
    if (key == "inputs" || key == "targets" || key == "forcings") {
      const auto names = to_stream_names(v, key, streams);
      for (std::size_t i = 0; i < streams.size(); ++i) {
        StreamVariables& sv = s.streams[i].second;
        (key == "inputs" ? sv.inputs : key == "targets" ? sv.targets : sv.forcings) = names[i];
      }
    } else if (key == "input_offsets") {
      s.input_offsets = to_durations(v, key);
      has_input_offsets = true;
    } else if (key == "target_offsets") {
      s.target_offsets = to_durations(v, key);
    } else if (key == "anchors") {
      if (v.is_array()) {
        for (std::size_t i = 0; i < v.size(); ++i)
          s.anchors.push_back(to_anchor_range(v[i], "anchors[" + std::to_string(i) + "]"));
        if (s.anchors.empty()) throw UsageError("anchors is an empty list: give at least one interval");
      } else {
        s.anchors.push_back(to_anchor_range(v, key));
      }
    } else if (key == "anchor_step") {
      s.anchor_step = to_duration(v, key);
      if (*s.anchor_step <= 0) throw UsageError("anchor_step must be a positive duration, got " + v.dump());
    } else if (key == "time_dim") {
      s.time_dim = to_string(v, key);
      if (s.time_dim.empty()) throw UsageError("time_dim is empty");
    } else if (key == "missing") {
      const std::string m = to_string(v, key);
      if (m == "skip") s.missing = MissingPolicy::Skip;
      else if (m == "keep") s.missing = MissingPolicy::Keep;
      else if (m == "error") s.missing = MissingPolicy::Error;
      else throw UsageError("missing must be \"skip\", \"keep\" or \"error\", got \"" + m + "\"");
    } else if (key == "patch_dims") {
      s.patch_dims = to_dim_sizes(v, key);
    } else if (key == "patch_overlap") {
      s.patch_overlap = to_overlaps(v, key);
    } else {
      std::string known;
      for (const auto& k : json_keys()) known += (known.empty() ? "" : ", ") + k;
      throw UsageError("unknown forecast sample option '" + key + "' (known: " + known + ")");
    }
  }
  if (!has_input_offsets) s.input_offsets = {0};
  if (s.input_offsets.empty()) throw UsageError("input_offsets is empty: give at least one offset, e.g. [\"0h\"]");
  bool any_input = false, any_target = false;
  for (const auto& [name, sv] : s.streams) {
    any_input = any_input || !sv.inputs.empty();
    any_target = any_target || !sv.targets.empty();
  }
  if (!any_input) throw UsageError("inputs names no variable: give the variables the model reads");
  if (any_target && s.target_offsets.empty())
    throw UsageError("targets are given but target_offsets is empty: give the lead times, e.g. [\"6h\"]");
  if (!any_target && !s.target_offsets.empty())
    throw UsageError("target_offsets are given but targets names no variable");
  for (const auto& [dim, ov] : s.patch_overlap) {
    bool found = false;
    for (const auto& [d, n] : s.patch_dims) found = found || d == dim;
    if (!found) throw UsageError("patch_overlap names dim '" + dim + "', which is not in patch_dims");
  }
  if (!s.patch_dims.empty() && s.streams.size() > 1)
    throw UsageError("patch_dims needs a single stream (streams have their own grids), got " +
                     std::to_string(s.streams.size()));
  return s;
}

nlohmann::ordered_json ForecastSpec::to_json() const {
  using Json = nlohmann::ordered_json;
  Json doc = Json::object();
  const bool single = streams.size() == 1 && streams[0].first.empty();
  auto per_stream = [&](auto member) {
    if (single) return Json(streams[0].second.*member);
    Json o = Json::object();
    for (const auto& [name, sv] : streams) o[name] = sv.*member;
    return o;
  };
  doc["inputs"] = per_stream(&StreamVariables::inputs);
  doc["targets"] = per_stream(&StreamVariables::targets);
  doc["forcings"] = per_stream(&StreamVariables::forcings);
  auto durations = [](const std::vector<std::int64_t>& v) {
    Json a = Json::array();
    for (auto ns : v) a.push_back(format_duration(ns));
    return a;
  };
  doc["input_offsets"] = durations(input_offsets);
  doc["target_offsets"] = durations(target_offsets);
  if (anchors.empty()) {
    doc["anchors"] = nullptr;
  } else {
    Json a = Json::array();
    for (const auto& r : anchors)
      a.push_back({{"start", r.start ? Json(cf::format_datetime_ns(*r.start)) : Json(nullptr)},
                   {"end", r.end ? Json(cf::format_datetime_ns(*r.end)) : Json(nullptr)}});
    doc["anchors"] = a;
  }
  doc["anchor_step"] = anchor_step ? Json(format_duration(*anchor_step)) : Json(nullptr);
  doc["time_dim"] = time_dim;
  doc["missing"] = missing == MissingPolicy::Skip ? "skip" : missing == MissingPolicy::Keep ? "keep" : "error";
  Json pd = Json::object();
  for (const auto& [d, n] : patch_dims) pd[d] = n;
  doc["patch_dims"] = patch_dims.empty() ? Json(nullptr) : pd;
  Json po = Json::object();
  for (const auto& [d, n] : patch_overlap) po[d] = n;
  doc["patch_overlap"] = patch_overlap.empty() ? Json(nullptr) : po;
  return doc;
}

}  // namespace lazycube::batch
