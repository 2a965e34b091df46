#include "storage_options.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend_registry.hpp"
#include "lazycube/error.hpp"
#include "lazycube/store/reference_access.hpp"

namespace lazycube {

namespace {

// "true"/"false"/"1"/"0"/"yes"/"no"/"on"/"off" (case-insensitive); nullopt otherwise.
std::optional<bool> parse_bool(std::string_view text) {
  std::string t(text);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "true" || t == "1" || t == "yes" || t == "on") return true;
  if (t == "false" || t == "0" || t == "no" || t == "off") return false;
  return std::nullopt;
}

// One option being parsed: its name, text and the scheme it is for (messages).
struct Arg {
  std::string_view scheme;
  const std::string& name;
  const std::string& value;

  [[noreturn]] void bad(const std::string& expected) const {
    throw StoreError(std::string(scheme) + ":// storage option '" + name + "': expected " + expected + ", got '" +
                     value + "'");
  }
  bool boolean() const {
    auto b = parse_bool(value);
    if (!b) bad("true/false/1/0");
    return *b;
  }
  long long integer(long long lo, long long hi) const {
    long long v = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (value.empty() || ec != std::errc() || p != value.data() + value.size() || v < lo || v > hi)
      bad("an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return v;
  }
  double seconds() const {
    try {
      std::size_t used = 0;
      const double v = std::stod(value, &used);
      if (used == value.size() && v >= 0 && v < 1e9) return v;
    } catch (const std::exception&) {
    }
    bad("a non-negative number of seconds");
  }
};

struct Entry {
  StorageOptionSpec spec;
  void (*apply)(const Arg& a, StorageOptions& o);
};

constexpr long long kMaxBytes = 1LL << 40;

// The tables: name, value type, doc line, and how the value lands in StorageOptions.
// Every network backend: transfer tuning (and the reference sets' allowed_prefixes).
const Entry kCommon[] = {
    {{"max_concurrency", "integer", "transfers in flight for one read (default 256, the engine's own cap)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.engine.max_in_flight = a.integer(1, 4096); }},
    {{"timeout", "seconds", "whole-transfer limit per attempt (default 0 = none)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.engine.timeout_s = a.seconds(); }},
    {{"connect_timeout", "seconds", "connection set-up limit per attempt (default 10)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.engine.connect_timeout_s = a.seconds(); }},
    {{"low_speed_time", "seconds", "abort an attempt slower than 1 byte/s for this long (default 30)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.engine.low_speed_time_s = a.seconds(); }},
    {{"retries", "integer", "retries of a failed attempt (default 10)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.retry.max_attempts = static_cast<int>(a.integer(0, 1000000)) + 1; }},
    {{"deadline", "seconds", "limit per request across all its attempts (default 300)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.retry.deadline_s = a.seconds(); }},
    {{"backoff", "seconds", "first retry backoff, doubling, equal jitter (default 0.05)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.retry.initial_backoff_s = a.seconds(); }},
    {{"max_backoff", "seconds", "cap of the retry backoff (default 5)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.retry.max_backoff_s = a.seconds(); }},
    {{"max_response_bytes", "bytes",
      "the most bytes one reply may carry when nothing smaller bounds it; more fails the read (default 1073741824)"},
     [](const Arg& a, StorageOptions& o) {
       o.transfer.engine.max_response_bytes = static_cast<std::uint64_t>(a.integer(1, kMaxBytes * 1024));
     }},
    {{"max_idle_connections", "integer",
      "keep-alive connections kept open after a second without transfers, all hosts together; more are closed (default 32)"},
     [](const Arg& a, StorageOptions& o) {
       o.transfer.engine.max_idle_connections = static_cast<std::size_t>(a.integer(1, 100000));
     }},
    {{"ca_file", "path", "PEM bundle to verify HTTPS servers with (default: the system's)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.engine.ca_file = a.value; }},
    {{"coalesce_gap", "bytes", "ranges of one object this close are merged into one request (default 65536)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.coalesce_gap = static_cast<std::uint64_t>(a.integer(0, kMaxBytes)); }},
    {{"coalesce_max", "bytes", "largest merged request (default 16777216)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.coalesce_max = static_cast<std::uint64_t>(a.integer(0, kMaxBytes)); }},
    {{"part_size", "bytes",
      "uploads larger than this go as multipart uploads (S3, GCS) or block lists (Azure) in parts of this size, 5 MiB to 4 GiB (default 16777216)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.part_size = static_cast<std::uint64_t>(a.integer(5LL << 20, 4LL << 30)); }},
    {{"cache_dir", "path",
      "keep the bytes read in this local directory, shared by processes (default: LAZYCUBE_CACHE_DIR; empty: none)"},
     [](const Arg& a, StorageOptions& o) { o.cache_dir = a.value; }},
    {{"cache_size", "bytes", "byte budget of cache_dir; least recently used files go first (default 10737418240)"},
     [](const Arg& a, StorageOptions& o) { o.cache_size = static_cast<std::uint64_t>(a.integer(1, kMaxBytes * 1024)); }},
    {{refs::kAllowedPrefixesOption, "list",
      "extra prefixes a kerchunk reference set may read (other stores ignore it)"},
     [](const Arg& a, StorageOptions&) { parse_list_option(a.name, a.value); }},
};

// Shared by several backends, each naming those it takes (Backend::shared_options).
const Entry kShared[] = {
    {{"list_page_size", "integer", "keys per listing request (default: the server's, 1000 on S3)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.list_page_size = static_cast<int>(a.integer(1, 1000000)); }},
    {{"anon", "bool", "never sign requests (default: sign when credentials are found)"},
     [](const Arg& a, StorageOptions& o) { o.anon = a.boolean(); }},
    {{"key", "string", "access key id (S3; GCS HMAC)"},
     [](const Arg& a, StorageOptions& o) { o.key = a.value; }},
    {{"secret", "string", "secret access key (S3; GCS HMAC)"},
     [](const Arg& a, StorageOptions& o) { o.secret = a.value; }},
    {{"token", "string", "S3: session token; GCS: OAuth2 bearer token, or the path of a service-account key file (JSON)"},
     [](const Arg& a, StorageOptions& o) { o.token = a.value; }},
    {{"endpoint_url", "URL", "custom endpoint, path-style ENDPOINT/BUCKET/KEY"},
     [](const Arg& a, StorageOptions& o) {
       o.endpoint_url = a.value;
       while (!o.endpoint_url.empty() && o.endpoint_url.back() == '/') o.endpoint_url.pop_back();
     }},
    {{"region_name", "string", "S3 region (GCS HMAC: default auto)"},
     [](const Arg& a, StorageOptions& o) { o.region_name = a.value; }},
    {{"profile", "string", "AWS profile (default: AWS_PROFILE, else default)"},
     [](const Arg& a, StorageOptions& o) { o.profile = a.value; }},
    {{"requester_pays", "bool", "S3: bill the requester (GCS: not supported yet)"},
     [](const Arg& a, StorageOptions& o) { o.requester_pays = a.boolean(); }},
};

// A backend's own option: the value checked by its type, kept as text in StorageOptions::own.
void check_value(const Arg& a, std::string_view type) {
  if (type == "bool") a.boolean();
  else if (type == "integer") a.integer(std::numeric_limits<long long>::min(), std::numeric_limits<long long>::max());
  else if (type == "bytes") a.integer(0, kMaxBytes);
  else if (type == "seconds") a.seconds();
}

const Entry* find_entry(std::span<const Entry> table, std::string_view name) {
  for (const auto& e : table)
    if (e.spec.name == name) return &e;
  return nullptr;
}

std::vector<StorageOptionSpec> specs_of(std::span<const Entry> table) {
  std::vector<StorageOptionSpec> out;
  for (const auto& e : table) out.push_back(e.spec);
  return out;
}

const StorageOptionSpec* own_spec(const Backend& b, std::string_view name) {
  for (const auto& spec : b.own_options)
    if (spec.name == name) return &spec;
  return nullptr;
}

bool shared_taken(const Backend& b, std::string_view name) {
  return std::find(b.shared_options.begin(), b.shared_options.end(), name) != b.shared_options.end();
}

// Whether any registered backend takes `name` (for "does not apply" messages).
bool known_anywhere(std::string_view name) {
  if (find_entry(kCommon, name) || find_entry(kShared, name)) return true;
  for (const auto& b : backend_registry().backends())
    if (own_spec(b, name)) return true;
  return false;
}

// List options whose items are URL prefixes (or local paths): checked item by item.
bool takes_url_prefixes(std::string_view name) { return name == refs::kAllowedPrefixesOption; }

[[noreturn]] void bad_list(std::string_view name, std::string_view value, const std::string& why) {
  throw UsageError("storage option '" + std::string(name) + "': " + why + " (got '" + std::string(value) +
                   "'; give items separated by commas, e.g. a,b, or a JSON list of strings, e.g. [\"a\",\"b\"])");
}

// Why `item` is not a URL prefix or local path; "" when it is one.
std::string not_a_prefix(std::string_view item) {
  if (item == "*") return "";
  if (item.find_first_of("[]\"") != std::string_view::npos)
    return "item '" + std::string(item) + "' is not a URL prefix or path (it holds '[', ']' or '\"': a malformed JSON list?)";
  const ParsedUrl url = parse_url_scheme(item);
  if (!url.scheme.empty()) {
    if (url.rest.empty()) return "item '" + std::string(item) + "' is a scheme without a location";
    return "";
  }
  // A plain path: refuse "scheme:/..." and "scheme:..." (a URL missing its "//").
  const auto colon = item.find(':');
  if (colon != std::string_view::npos && colon > 1) {
    bool scheme_like = std::isalpha(static_cast<unsigned char>(item[0])) != 0;
    for (std::size_t i = 1; scheme_like && i < colon; ++i) {
      const auto c = static_cast<unsigned char>(item[i]);
      scheme_like = std::isalnum(c) || c == '+' || c == '-' || c == '.';
    }
    if (scheme_like)
      return "item '" + std::string(item) + "' is not a URL prefix (a URL is SCHEME://..., e.g. " +
             std::string(item.substr(0, colon)) + "://host/path/)";
  }
  return "";
}

}  // namespace

std::vector<std::string> parse_list_option(std::string_view name, std::string_view value) {
  std::vector<std::string> items;
  std::size_t first = value.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && value[first] == '[') {
    const nlohmann::json j = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_array()) bad_list(name, value, "malformed JSON list");
    for (std::size_t i = 0; i < j.size(); ++i) {
      if (!j[i].is_string())
        bad_list(name, value, "JSON list element " + std::to_string(i) + " is " + j[i].dump() + ", not a string");
      if (j[i].get_ref<const std::string&>().empty()) bad_list(name, value, "JSON list element " + std::to_string(i) + " is empty");
      items.push_back(j[i].get<std::string>());
    }
  } else {
    std::size_t pos = 0;
    while (pos < value.size()) {
      const std::size_t end = value.find_first_of(", \t\r\n", pos);
      const std::string_view item = value.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
      pos = end == std::string_view::npos ? value.size() : end + 1;
      if (!item.empty()) items.emplace_back(item);
    }
  }
  if (takes_url_prefixes(name))
    for (const auto& item : items)
      if (const std::string why = not_a_prefix(item); !why.empty()) bad_list(name, value, why);
  return items;
}

bool is_list_option(std::string_view name) {
  const Entry* e = find_entry(kCommon, name);
  if (!e) e = find_entry(kShared, name);
  if (e) return e->spec.value == "list";
  for (const auto& b : backend_registry().backends())
    if (const StorageOptionSpec* spec = own_spec(b, name)) return spec->value == "list";
  return false;
}

void check_list_options(const StoreOptions& options) {
  for (const auto& [name, value] : options)
    if (is_list_option(name)) parse_list_option(name, value);
}

std::span<const StorageOptionSpec> common_option_table() {
  static const auto specs = specs_of(kCommon);
  return specs;
}

std::span<const StorageOptionSpec> shared_option_table() {
  static const auto specs = specs_of(kShared);
  return specs;
}

const std::string& StorageOptions::own_option(std::string_view name) const {
  static const std::string none;
  const auto it = own.find(name);
  return it == own.end() ? none : it->second;
}

bool takes_option(const Backend& b, std::string_view name) {
  if (!b.takes_storage_options()) return false;
  if (find_entry(kCommon, name)) return true;
  if (find_entry(kShared, name)) return shared_taken(b, name);
  return own_spec(b, name) != nullptr;
}

std::string storage_option_names(const Backend& b) {
  std::string out;
  auto add = [&](std::string_view name) {
    if (takes_option(b, name)) out += (out.empty() ? "" : ", ") + std::string(name);
  };
  for (const auto& e : kCommon) add(e.spec.name);
  for (const auto& e : kShared) add(e.spec.name);
  for (const auto& spec : b.own_options) add(spec.name);
  return out;
}

StorageOptions parse_storage_options(const StoreOptions& options, const Backend& backend) {
  const std::string_view scheme = backend.name();
  StorageOptions o;
  for (const auto& [name, value] : options) {
    if (!takes_option(backend, name))
      throw StoreError((known_anywhere(name) ? "storage option '" + name + "' does not apply to " + std::string(scheme) + "://"
                                             : "unknown storage option '" + name + "' for " + std::string(scheme) + "://") +
                       " (valid: " + storage_option_names(backend) + ")");
    const Arg arg{scheme, name, value};
    if (const Entry* e = find_entry(kCommon, name)) {
      e->apply(arg, o);
    } else if (const Entry* shared = find_entry(kShared, name)) {
      shared->apply(arg, o);
    } else {
      check_value(arg, own_spec(backend, name)->value);
      o.own[name] = value;
    }
    o.given.insert(name);
  }
  return o;
}

StorageOptions parse_storage_options(const StoreOptions& options, std::string_view scheme) {
  const Backend* b = backend_for_scheme(scheme);
  if (!b) throw StoreError("no store backend for scheme '" + std::string(scheme) + "'");
  return parse_storage_options(options, *b);
}

}  // namespace lazycube
