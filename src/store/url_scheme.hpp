// URL schemes, recognised in one place: every caller that needs to know whether a URL is local,
// HTTP, S3, GCS, Azure or a kerchunk reference asks parse_url_scheme (open_location, reference
// targets, the GDAL mapping, format sniffing), which looks the scheme up in the backend registry
// (backend_registry.hpp). `gcs://` is an alias of `gs://`, `abfs://`/`abfss://` of `az://`.
#pragma once

#include <string>
#include <string_view>

namespace lazycube {

enum class UrlKind { Local, File, Http, Https, S3, Gs, Az, Reference, Unsupported };

struct ParsedUrl {
  UrlKind kind = UrlKind::Local;
  // Canonical scheme name: "" (plain path), "file", "http", "https", "s3", "gs" (for gcs:// too),
  // "az" (for abfs[s]:// too), "reference"; for Unsupported the scheme as written (for messages).
  // An https:// URL to a host a backend claims (https://ACCOUNT.blob.core.windows.net/...) keeps
  // scheme "https" and gets that backend's kind (Az).
  std::string scheme;
  // What follows "SCHEME://" (a plain path: the whole text).
  std::string rest;

  bool is_local() const { return kind == UrlKind::Local || kind == UrlKind::File; }
  bool is_http() const { return kind == UrlKind::Http || kind == UrlKind::Https; }
  bool is_object_store() const { return kind == UrlKind::S3 || kind == UrlKind::Gs || kind == UrlKind::Az; }
  bool is_remote() const { return is_http() || is_object_store(); }
  // The URL rewritten with its canonical scheme ("gcs://b/k" → "gs://b/k"; a plain path as is).
  std::string canonical() const { return kind == UrlKind::Local ? rest : scheme + "://" + rest; }
};

// Splits `url` at "SCHEME://" (scheme letters, digits, '+', '-', '.'; case-insensitive). Text
// without one is a local path.
ParsedUrl parse_url_scheme(std::string_view url);

// The canonical scheme name of `kind` ("gs" for Gs; "" for Local and Unsupported).
std::string_view scheme_name(UrlKind kind);

// The host of an authority "user@host:port" (lower case, without user and port).
std::string authority_host(std::string_view authority);

}  // namespace lazycube
