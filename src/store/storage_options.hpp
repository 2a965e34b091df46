// Storage options (fsspec-style `storage_options`, a map of strings), defined once: one table
// (name, backends that accept it, value type, doc line) and one parser producing the typed
// options every network store uses (http(s)://, s3://, gs://) and the GDAL mapping reads.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "http_engine.hpp"
#include "lazycube/store/store.hpp"
#include "url_scheme.hpp"

namespace lazycube {

// Which backends accept an option (bits).
enum StoreBackend : unsigned { kHttpBackend = 1, kS3Backend = 2, kGsBackend = 4, kReferenceBackend = 8 };

struct StorageOptionSpec {
  std::string_view name;
  unsigned backends;       // StoreBackend bits
  std::string_view value;  // value type, for docs and messages: "seconds", "integer", ...
  std::string_view doc;    // one line: meaning and default
};

// Every storage option, in documentation order (the README's table is this table).
std::span<const StorageOptionSpec> storage_option_table();

// How requests travel: the same for every backend (they share the HTTP engine).
struct TransferOptions {
  http::EngineOptions engine;
  http::RetryPolicy retry;
  std::uint64_t coalesce_gap = 64 * 1024;         // merge ranges of one object this close...
  std::uint64_t coalesce_max = 16 * 1024 * 1024;  // ...into requests at most this long
  int list_page_size = 0;                         // keys per listing page; 0: the server's default
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
  std::set<std::string, std::less<>> given;  // names of the options that were set
};

// Parses `options` for a store of `kind` (Http/Https, S3, Gs). An option the backend does not
// accept is a StoreError naming it and listing the valid ones; a bad value is a StoreError naming
// the option (never echoing a secret's value). `allowed_prefixes` belongs to reference sets and
// is accepted (ignored) by every backend, so one options map serves a reference set and its
// targets.
StorageOptions parse_storage_options(const StoreOptions& options, UrlKind kind);

// The names `kind` accepts, "a, b, c", for messages.
std::string storage_option_names(UrlKind kind);

}  // namespace lazycube
