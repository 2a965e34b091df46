#include "storage_options.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <vector>

#include "lazycube/error.hpp"
#include "reference_store.hpp"

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

constexpr unsigned kNetwork = kHttpBackend | kS3Backend | kGsBackend;
constexpr unsigned kCloud = kS3Backend | kGsBackend;

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

// The table: name, backends, value type, doc line, and how the value lands in StorageOptions.
const Entry kOptions[] = {
    {{"max_concurrency", kNetwork, "integer", "transfers in flight for one read (default 64)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.engine.max_in_flight = a.integer(1, 4096); }},
    {{"timeout", kNetwork, "seconds", "whole-transfer limit per attempt (default 0 = none)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.engine.timeout_s = a.seconds(); }},
    {{"connect_timeout", kNetwork, "seconds", "connection set-up limit per attempt (default 10)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.engine.connect_timeout_s = a.seconds(); }},
    {{"low_speed_time", kNetwork, "seconds", "abort an attempt slower than 1 byte/s for this long (default 30)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.engine.low_speed_time_s = a.seconds(); }},
    {{"retries", kNetwork, "integer", "retries of a failed attempt (default 5)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.retry.max_attempts = static_cast<int>(a.integer(0, 1000000)) + 1; }},
    {{"deadline", kNetwork, "seconds", "limit per request across all its attempts (default 300)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.retry.deadline_s = a.seconds(); }},
    {{"backoff", kNetwork, "seconds", "first retry backoff, doubling, full jitter (default 0.05)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.retry.initial_backoff_s = a.seconds(); }},
    {{"max_backoff", kNetwork, "seconds", "cap of the retry backoff (default 5)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.retry.max_backoff_s = a.seconds(); }},
    {{"ca_file", kNetwork, "path", "PEM bundle to verify HTTPS servers with (default: the system's)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.engine.ca_file = a.value; }},
    {{"coalesce_gap", kNetwork, "bytes", "ranges of one object this close are merged into one request (default 65536)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.coalesce_gap = static_cast<std::uint64_t>(a.integer(0, kMaxBytes)); }},
    {{"coalesce_max", kNetwork, "bytes", "largest merged request (default 16777216)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.coalesce_max = static_cast<std::uint64_t>(a.integer(0, kMaxBytes)); }},
    {{"list_page_size", kCloud, "integer", "keys per listing request (default: the server's, 1000 on S3)"},
     [](const Arg& a, StorageOptions& o) { o.transfer.list_page_size = static_cast<int>(a.integer(1, 1000000)); }},
    {{"anon", kCloud, "bool", "never sign requests (default: sign when credentials are found)"},
     [](const Arg& a, StorageOptions& o) { o.anon = a.boolean(); }},
    {{"key", kCloud, "string", "access key id (S3; GCS HMAC)"},
     [](const Arg& a, StorageOptions& o) { o.key = a.value; }},
    {{"secret", kCloud, "string", "secret access key (S3; GCS HMAC)"},
     [](const Arg& a, StorageOptions& o) { o.secret = a.value; }},
    {{"token", kCloud, "string", "S3: session token; GCS: OAuth2 bearer token, or the path of a service-account key file (JSON)"},
     [](const Arg& a, StorageOptions& o) { o.token = a.value; }},
    {{"endpoint_url", kCloud, "URL", "custom endpoint, path-style ENDPOINT/BUCKET/KEY"},
     [](const Arg& a, StorageOptions& o) {
       o.endpoint_url = a.value;
       while (!o.endpoint_url.empty() && o.endpoint_url.back() == '/') o.endpoint_url.pop_back();
     }},
    {{"region_name", kCloud, "string", "S3 region (GCS HMAC: default auto)"},
     [](const Arg& a, StorageOptions& o) { o.region_name = a.value; }},
    {{"profile", kS3Backend, "string", "AWS profile (default: AWS_PROFILE, else default)"},
     [](const Arg& a, StorageOptions& o) { o.profile = a.value; }},
    {{"requester_pays", kCloud, "bool", "S3: bill the requester (GCS: not supported yet)"},
     [](const Arg& a, StorageOptions& o) { o.requester_pays = a.boolean(); }},
    {{refs::kAllowedPrefixesOption, kNetwork | kReferenceBackend, "list",
      "extra prefixes a kerchunk reference set may read (other stores ignore it)"},
     [](const Arg&, StorageOptions&) {}},
};

unsigned backend_of(UrlKind kind) {
  switch (kind) {
    case UrlKind::Http:
    case UrlKind::Https: return kHttpBackend;
    case UrlKind::S3: return kS3Backend;
    case UrlKind::Gs: return kGsBackend;
    case UrlKind::Reference: return kReferenceBackend;
    default: return 0;
  }
}

}  // namespace

std::span<const StorageOptionSpec> storage_option_table() {
  static const auto specs = [] {
    std::vector<StorageOptionSpec> out;
    for (const auto& e : kOptions) out.push_back(e.spec);
    return out;
  }();
  return specs;
}

std::string storage_option_names(UrlKind kind) {
  std::string out;
  for (const auto& e : kOptions)
    if (e.spec.backends & backend_of(kind)) out += (out.empty() ? "" : ", ") + std::string(e.spec.name);
  return out;
}

StorageOptions parse_storage_options(const StoreOptions& options, UrlKind kind) {
  const std::string_view scheme = scheme_name(kind);
  StorageOptions o;
  for (const auto& [name, value] : options) {
    const Entry* entry = nullptr;
    bool elsewhere = false;  // a known option of another backend
    for (const auto& e : kOptions)
      if (e.spec.name == name) {
        if (e.spec.backends & backend_of(kind)) entry = &e;
        else elsewhere = true;
      }
    if (!entry)
      throw StoreError((elsewhere ? "storage option '" + name + "' does not apply to " + std::string(scheme) + "://"
                                  : "unknown storage option '" + name + "' for " + std::string(scheme) + "://") +
                       " (valid: " + storage_option_names(kind) + ")");
    entry->apply(Arg{scheme, name, value}, o);
    o.given.insert(name);
  }
  return o;
}

}  // namespace lazycube
