#include "gdal_location.hpp"

#include <cstdlib>

#include <cpl_vsi.h>

#include "../store/cloud_options.hpp"
#include "../store/credentials.hpp"
#include "../store/http_store.hpp"
#include "lazycube/error.hpp"

namespace lazycube::netcdf {

namespace {

using GdalOptions = std::vector<std::pair<std::string, std::string>>;

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Transfer options every scheme shares, as GDAL's HTTP options (only those given).
void add_http_transfer_options(const StoreOptions& options, GdalOptions& out) {
  http::parse_http_options(options);  // validates names and values (StoreError otherwise)
  for (const auto& [k, v] : options) {
    if (k == "timeout") out.emplace_back("GDAL_HTTP_TIMEOUT", v);
    else if (k == "connect_timeout") out.emplace_back("GDAL_HTTP_CONNECTTIMEOUT", v);
    else if (k == "retries") out.emplace_back("GDAL_HTTP_MAX_RETRY", v);
    else if (k == "backoff") out.emplace_back("GDAL_HTTP_RETRY_DELAY", v);
    else if (k == "ca_file") out.emplace_back("CURL_CA_BUNDLE", v);
    // max_concurrency, low_speed_time, deadline, max_backoff, coalesce_*: no GDAL equivalent
    // per file; accepted so one options dict serves both engines.
  }
}

// "http://host:port/x" → ("host:port/x", is_https).
std::pair<std::string, bool> split_endpoint(const std::string& endpoint) {
  std::string rest = endpoint;
  bool https = true;
  if (starts_with(rest, "http://")) {
    rest = rest.substr(7);
    https = false;
  } else if (starts_with(rest, "https://")) {
    rest = rest.substr(8);
  }
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  return {rest, https};
}

void add_cloud_transfer_options(const cloud::CloudOptions& o, const StoreOptions& given, GdalOptions& out) {
  if (given.count("retries")) out.emplace_back("GDAL_HTTP_MAX_RETRY", std::to_string(o.retries));
  if (given.count("timeout")) out.emplace_back("GDAL_HTTP_TIMEOUT", given.at("timeout"));
}

GdalOptions s3_options(const StoreOptions& options) {
  const cloud::CloudOptions o = cloud::parse_cloud_options(options, "s3");
  const cloud::AwsSettings s = cloud::resolve_aws_settings(o);
  GdalOptions out;
  if (!s.endpoint_url.empty()) {
    const auto [host, https] = split_endpoint(s.endpoint_url);
    out.emplace_back("AWS_S3_ENDPOINT", host);
    out.emplace_back("AWS_HTTPS", https ? "YES" : "NO");
    out.emplace_back("AWS_VIRTUAL_HOSTING", "FALSE");
  }
  out.emplace_back("AWS_REGION", s.region);
  if (s.credentials.anonymous()) {
    out.emplace_back("AWS_NO_SIGN_REQUEST", "YES");
  } else {
    out.emplace_back("AWS_NO_SIGN_REQUEST", "NO");
    out.emplace_back("AWS_ACCESS_KEY_ID", s.credentials.access_key_id);
    out.emplace_back("AWS_SECRET_ACCESS_KEY", s.credentials.secret_access_key);
    if (!s.credentials.session_token.empty())
      out.emplace_back("AWS_SESSION_TOKEN", s.credentials.session_token);
  }
  if (o.requester_pays) out.emplace_back("AWS_REQUEST_PAYER", "requester");
  add_cloud_transfer_options(o, options, out);
  return out;
}

// As our gs:// store: anonymous, HMAC keys, or an OAuth2 bearer token (option or
// GOOGLE_OAUTH_ACCESS_TOKEN).
GdalOptions gs_options(const StoreOptions& options) {
  const cloud::CloudOptions o = cloud::parse_cloud_options(options, "gs");
  if (o.requester_pays)
    throw StoreError("gs:// option 'requester_pays' is not supported yet (it needs a billing project)");
  GdalOptions out;
  if (!o.endpoint_url.empty()) {
    std::string endpoint = o.endpoint_url;
    if (endpoint.back() != '/') endpoint += '/';
    out.emplace_back("CPL_GS_ENDPOINT", endpoint);
  }
  std::string token = o.token;
  if (token.empty() && !o.anon.value_or(false))
    if (const char* env = std::getenv("GOOGLE_OAUTH_ACCESS_TOKEN")) token = env;
  if (o.anon.value_or(false) || token == "anon") {
    out.emplace_back("GS_NO_SIGN_REQUEST", "YES");
  } else if (!o.key.empty() || !o.secret.empty()) {
    if (o.key.empty() || o.secret.empty())
      throw StoreError(std::string("gs:// HMAC credentials: option '") + (o.key.empty() ? "secret" : "key") +
                       "' given without '" + (o.key.empty() ? "key" : "secret") + "'");
    out.emplace_back("GS_NO_SIGN_REQUEST", "NO");
    out.emplace_back("GS_ACCESS_KEY_ID", o.key);
    out.emplace_back("GS_SECRET_ACCESS_KEY", o.secret);
  } else if (!token.empty()) {
    // GDAL would try to sign with its own credential chain: send the bearer token instead.
    out.emplace_back("GS_NO_SIGN_REQUEST", "YES");
    out.emplace_back("GDAL_HTTP_HEADERS", "Authorization: Bearer " + token);
  } else {
    out.emplace_back("GS_NO_SIGN_REQUEST", "YES");
  }
  add_cloud_transfer_options(o, options, out);
  return out;
}

// bucket/key of "s3://bucket/key"; StoreError when either is missing.
std::string bucket_and_key(std::string_view url) {
  std::string rest(url.substr(5));
  while (!rest.empty() && rest.front() == '/') rest.erase(0, 1);
  const auto slash = rest.find('/');
  if (rest.empty() || slash == 0) throw StoreError("no bucket in '" + std::string(url) + "'");
  if (slash == std::string::npos || slash + 1 == rest.size())
    throw StoreError("no object key in '" + std::string(url) + "' (a file inside the bucket is needed)");
  return rest;
}

}  // namespace

GdalLocation gdal_location(std::string_view url, const StoreOptions& options) {
  GdalLocation loc;
  loc.url = std::string(url);
  if (starts_with(url, "http://") || starts_with(url, "https://")) {
    loc.path = "/vsicurl/" + loc.url;
    add_http_transfer_options(options, loc.options);
  } else if (starts_with(url, "s3://")) {
    loc.path = "/vsis3/" + bucket_and_key(url);
    loc.options = s3_options(options);
  } else if (starts_with(url, "gs://")) {
    loc.path = "/vsigs/" + bucket_and_key(url);
    loc.options = gs_options(options);
  } else {
    // Local paths take no storage options (ignored, as for Zarr directories).
    std::string path = loc.url;
    if (starts_with(path, "file://")) path = path.substr(7);
    const auto scheme_end = path.find("://");
    if (scheme_end != std::string::npos)
      throw StoreError("unsupported URL scheme '" + path.substr(0, scheme_end) + "' in '" + loc.url +
                       "' for the gdal engine (local paths, file://, http(s)://, s3:// and gs://)");
    if (path.empty()) throw NotFound("empty path");
    loc.path = path;
    return loc;
  }
  loc.remote = true;
  // Existing GDAL readers of other datasets keep working: only this path's options change.
  // What GDAL cached about the path (existence, size, blocks) was fetched with the previous
  // options: drop it, so that these credentials are the ones checked.
  VSICurlPartialClearCache(loc.path.c_str());
  VSIClearPathSpecificOptions(loc.path.c_str());
  for (const auto& [k, v] : loc.options) VSISetPathSpecificOption(loc.path.c_str(), k.c_str(), v.c_str());
  return loc;
}

}  // namespace lazycube::netcdf
