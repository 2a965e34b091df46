#include "cloud_options.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "lazycube/error.hpp"

namespace lazycube::cloud {

std::optional<bool> parse_bool(std::string_view text) {
  std::string t(text);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "true" || t == "1" || t == "yes" || t == "on") return true;
  if (t == "false" || t == "0" || t == "no" || t == "off") return false;
  return std::nullopt;
}

namespace {

[[noreturn]] void bad_value(std::string_view scheme, const std::string& name, const std::string& value,
                            const char* expected) {
  throw StoreError(std::string(scheme) + ":// option '" + name + "': expected " + expected + ", got '" +
                   value + "'");
}

bool to_bool(std::string_view scheme, const std::string& name, const std::string& value) {
  auto b = parse_bool(value);
  if (!b) bad_value(scheme, name, value, "true/false/1/0");
  return *b;
}

long long to_int(std::string_view scheme, const std::string& name, const std::string& value, long long lo,
                 long long hi) {
  long long v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size() || v < lo || v > hi)
    bad_value(scheme, name, value, ("an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]").c_str());
  return v;
}

double to_seconds(std::string_view scheme, const std::string& name, const std::string& value) {
  try {
    std::size_t used = 0;
    double v = std::stod(value, &used);
    if (used == value.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  bad_value(scheme, name, value, "a non-negative number of seconds");
}

}  // namespace

CloudOptions parse_cloud_options(const StoreOptions& options, std::string_view scheme) {
  CloudOptions o;
  for (const auto& [name, value] : options) {
    if (name == "anon") o.anon = to_bool(scheme, name, value);
    else if (name == "key") o.key = value;
    else if (name == "secret") o.secret = value;
    else if (name == "token") o.token = value;
    else if (name == "endpoint_url") o.endpoint_url = value;
    else if (name == "region_name") o.region_name = value;
    else if (name == "profile") o.profile = value;
    else if (name == "requester_pays") o.requester_pays = to_bool(scheme, name, value);
    else if (name == "max_concurrency") o.max_concurrency = static_cast<std::size_t>(to_int(scheme, name, value, 1, 4096));
    else if (name == "timeout") o.timeout_s = to_seconds(scheme, name, value);
    else if (name == "retries") o.retries = static_cast<int>(to_int(scheme, name, value, 0, 100));
    else
      throw StoreError("unknown " + std::string(scheme) + ":// option '" + name +
                       "' (known: anon, key, secret, token, endpoint_url, region_name, profile, "
                       "requester_pays, max_concurrency, timeout, retries)");
  }
  while (!o.endpoint_url.empty() && o.endpoint_url.back() == '/') o.endpoint_url.pop_back();
  return o;
}

}  // namespace lazycube::cloud
