// Storage options (fsspec-style `storage_options`, a map of strings), defined once: the options
// every network backend takes (transfer tuning), the options several backends share
// (credentials, endpoint), each named by the backends that take them (Backend::shared_options),
// and each backend's own options declared in its own file (Backend::own_options). One parser
// produces the typed options every network store uses and the GDAL mapping reads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "http_engine.hpp"
#include "lazycube/store/list_options.hpp"
#include "lazycube/store/store.hpp"
#include "url_scheme.hpp"

namespace lazycube {

struct Backend;  // backend_registry.hpp

struct StorageOptionSpec {
  std::string_view name;
  // Value type, for docs and checks: "seconds", "integer", "bytes", "bool" (checked); "string",
  // "path", "URL", "list" (any text).
  std::string_view value;
  std::string_view doc;  // one line: meaning and default
};

// Options every network backend (Backend::takes_storage_options) takes, in documentation order.
std::span<const StorageOptionSpec> common_option_table();
// Options several backends share; a backend takes those it names in Backend::shared_options.
std::span<const StorageOptionSpec> shared_option_table();

// How requests travel: the same for every backend (they share the HTTP engine).
struct TransferOptions {
  http::EngineOptions engine;
  http::RetryPolicy retry;
  std::uint64_t coalesce_gap = 64 * 1024;         // merge ranges of one object this close...
  std::uint64_t coalesce_max = 16 * 1024 * 1024;  // ...into requests at most this long
  int list_page_size = 0;                         // keys per listing page; 0: the server's default
  std::uint64_t part_size = 16 * 1024 * 1024;     // uploads larger than this go in parts of this size
};

struct StorageOptions {
  TransferOptions transfer;
  std::optional<bool> anon;   // true: never sign; false: sign when credentials are found
  std::string key;            // access key id (S3, GCS HMAC)
  std::string secret;         // secret access key (S3, GCS HMAC)
  std::string token;          // S3: session token; GCS: OAuth2 bearer token or key-file path
  std::string endpoint_url;   // custom endpoint (path-style addressing), no trailing '/'
  std::string region_name;
  std::string profile;        // AWS profile name (overrides AWS_PROFILE)
  bool requester_pays = false;
  std::string cache_dir;                                  // persistent chunk cache (disk_cache_store.hpp)
  std::uint64_t cache_size = 10ULL * 1024 * 1024 * 1024;  // its byte budget
  // The backend's own options (Backend::own_options) as given, by name; its code reads them.
  std::map<std::string, std::string, std::less<>> own;
  std::set<std::string, std::less<>> given;  // names of the options that were set

  // The value of own option `name`; "" when not given.
  const std::string& own_option(std::string_view name) const;
};

// Parses `options` for a store of `backend`. An option the backend does not take is a StoreError
// naming it and listing the valid ones; a bad value is a StoreError naming the option (never
// echoing a secret's value). `allowed_prefixes` belongs to reference sets and is accepted
// (ignored) by every network backend, so one options map serves a reference set and its targets.
StorageOptions parse_storage_options(const StoreOptions& options, const Backend& backend);
// The same for the backend registered for `scheme` ("s3", "az", ...).
StorageOptions parse_storage_options(const StoreOptions& options, std::string_view scheme);

// Whether `backend` takes option `name`.
bool takes_option(const Backend& backend, std::string_view name);

// The names `backend` takes, "a, b, c", for messages.
std::string storage_option_names(const Backend& backend);

}  // namespace lazycube
