// URL → GDAL virtual file system path: the backend's own mapping (Backend::vsi) plus the
// transfer options every backend shares.
#include "lazycube/store/vsi_location.hpp"

#include <cstdio>

#include "backend_registry.hpp"
#include "http_util.hpp"
#include "lazycube/error.hpp"
#include "storage_options.hpp"
#include "vsi_mapping.hpp"

namespace lazycube {

namespace {

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

// The transfer options that have a GDAL equivalent, as GDAL's HTTP options (only those given).
// max_concurrency, low_speed_time, deadline, max_backoff, max_idle_connections, coalesce_*: no GDAL equivalent per
// file; accepted so one options map serves both engines.
void add_transfer_options(const StorageOptions& o, VsiLocation& loc) {
  const auto& e = o.transfer.engine;
  const auto& r = o.transfer.retry;
  auto& out = loc.options;
  if (o.given.count("timeout")) out.emplace_back("GDAL_HTTP_TIMEOUT", number(e.timeout_s));
  if (o.given.count("connect_timeout")) out.emplace_back("GDAL_HTTP_CONNECTTIMEOUT", number(e.connect_timeout_s));
  if (o.given.count("retries")) out.emplace_back("GDAL_HTTP_MAX_RETRY", std::to_string(r.max_attempts - 1));
  if (o.given.count("backoff")) out.emplace_back("GDAL_HTTP_RETRY_DELAY", number(r.initial_backoff_s));
  if (o.given.count("ca_file")) out.emplace_back("CURL_CA_BUNDLE", e.ca_file);
}

}  // namespace

std::pair<std::string, bool> vsi_endpoint(const std::string& endpoint) {
  const ParsedUrl parsed = parse_url_scheme(endpoint);
  std::string rest = parsed.is_http() ? parsed.rest : endpoint;
  const bool https = !(parsed.is_http() && parsed.scheme == "http");
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  return {rest, https};
}

std::string vsi_bucket_and_key(const ParsedUrl& url) {
  std::string rest = url.rest;
  while (!rest.empty() && rest.front() == '/') rest.erase(0, 1);
  const auto slash = rest.find('/');
  if (rest.empty() || slash == 0) throw StoreError("no bucket in '" + url.canonical() + "'");
  if (slash == std::string::npos || slash + 1 == rest.size())
    throw StoreError("no object key in '" + url.canonical() + "' (a file inside the bucket is needed)");
  return rest;
}

std::optional<std::string> local_path_of(std::string_view url) {
  ParsedUrl parsed = parse_url_scheme(url);
  if (parsed.is_local()) return std::move(parsed.rest);
  return std::nullopt;
}

VsiLocation vsi_location(std::string_view url, const StoreOptions& options) {
  const ParsedUrl parsed = parse_url_scheme(url);
  if (parsed.is_local()) {
    // Local paths take no storage options (ignored, as for Zarr directories).
    if (parsed.rest.empty()) throw NotFound("empty path");
    VsiLocation loc;
    loc.url = std::string(url);
    loc.path = loc.options_path = parsed.rest;
    return loc;
  }
  if (!parsed.backend || !parsed.backend->vsi)
    throw StoreError("unsupported URL scheme '" + parsed.scheme + "' in '" + std::string(url) +
                     "' for the gdal engine (" + registered_schemes_text() + ")");
  const StorageOptions o = parse_storage_options(options, *parsed.backend);
  // GDAL fetches through its own network layer, which the disk cache does not sit under: a
  // cache_dir given for it would be silently unused.
  if (o.given.count("cache_dir") && !o.cache_dir.empty())
    throw UsageError("storage option 'cache_dir' does not apply to the gdal engine (GDAL reads '" +
                     http::redact_url(url) + "' through its own network layer, which lazycube's disk cache does not cover); "
                     "drop the option, or read the data through a Zarr store or kerchunk references");
  VsiLocation loc = parsed.backend->vsi(parsed, o);
  loc.url = std::string(url);
  if (loc.options_path.empty()) loc.options_path = loc.path;
  add_transfer_options(o, loc);
  loc.remote = true;
  return loc;
}

}  // namespace lazycube
