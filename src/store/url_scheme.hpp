// URL schemes, recognised in one place: every caller that needs to know whether a URL is local,
// plain HTTP, an object store or a kerchunk reference asks parse_url_scheme (open_location,
// reference targets, the GDAL mapping, format sniffing), which looks the scheme up in the backend
// registry (backend_registry.hpp): what a URL is comes from the backend that reads it, so a new
// backend needs no edit here. `gcs://` is an alias of `gs://`, `abfs://`/`abfss://` of `az://`.
#pragma once

#include <string>
#include <string_view>

namespace lazycube {

struct Backend;  // backend_registry.hpp

struct ParsedUrl {
  // The backend that reads this URL; nullptr when no backend reads its scheme. A plain path has
  // the "file" backend.
  const Backend* backend = nullptr;
  // Canonical scheme name: "" (plain path), "file", "http", "https", "s3", "gs" (for gcs:// too),
  // "az" (for abfs[s]:// too), "reference"; for an unsupported scheme the scheme as written (for
  // messages). An https:// URL to a host a backend claims (https://ACCOUNT.blob.core.windows.net/...)
  // keeps scheme "https" and gets that backend.
  std::string scheme;
  // What follows "SCHEME://" (a plain path: the whole text).
  std::string rest;

  bool supported() const { return backend != nullptr; }
  bool is_plain_path() const { return backend != nullptr && scheme.empty(); }
  // What the backend is (backend_registry.hpp: BackendRole).
  bool is_local() const;         // a plain path or file://
  bool is_http() const;          // plain http(s)://
  bool is_object_store() const;  // a bucket/container store: s3://, gs://, az://, ...
  bool is_reference() const;     // reference://
  bool is_remote() const { return is_http() || is_object_store(); }
  // The URL rewritten with its canonical scheme ("gcs://b/k" → "gs://b/k"; a plain path as is).
  std::string canonical() const { return scheme.empty() ? rest : scheme + "://" + rest; }
};

// Splits `url` at "SCHEME://" (scheme letters, digits, '+', '-', '.'; case-insensitive). Text
// without one is a local path.
ParsedUrl parse_url_scheme(std::string_view url);

// The host of an authority "user@host:port" (lower case, without user and port).
std::string authority_host(std::string_view authority);

}  // namespace lazycube
