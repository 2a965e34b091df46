#include "gdal_location.hpp"

#include <cstdio>

#include <cpl_vsi.h>

#include "../store/credentials.hpp"
#include "../store/storage_options.hpp"
#include "../store/url_scheme.hpp"
#include "lazycube/error.hpp"

namespace lazycube::netcdf {

namespace {

using GdalOptions = std::vector<std::pair<std::string, std::string>>;

// The transfer options that have a GDAL equivalent, as GDAL's HTTP options (only those given).
// max_concurrency, low_speed_time, deadline, max_backoff, coalesce_*: no GDAL equivalent per
// file; accepted so one options map serves both engines.
std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

void add_transfer_options(const StorageOptions& o, GdalOptions& out) {
  const auto& e = o.transfer.engine;
  const auto& r = o.transfer.retry;
  if (o.given.count("timeout")) out.emplace_back("GDAL_HTTP_TIMEOUT", number(e.timeout_s));
  if (o.given.count("connect_timeout")) out.emplace_back("GDAL_HTTP_CONNECTTIMEOUT", number(e.connect_timeout_s));
  if (o.given.count("retries")) out.emplace_back("GDAL_HTTP_MAX_RETRY", std::to_string(r.max_attempts - 1));
  if (o.given.count("backoff")) out.emplace_back("GDAL_HTTP_RETRY_DELAY", number(r.initial_backoff_s));
  if (o.given.count("ca_file")) out.emplace_back("CURL_CA_BUNDLE", e.ca_file);
}

// "http://host:port/x" → ("host:port/x", is_https).
std::pair<std::string, bool> split_endpoint(const std::string& endpoint) {
  const ParsedUrl parsed = parse_url_scheme(endpoint);
  std::string rest = parsed.is_http() ? parsed.rest : endpoint;
  const bool https = parsed.kind != UrlKind::Http;
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  return {rest, https};
}

GdalOptions s3_options(const StorageOptions& o) {
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
  return out;
}

// As our gs:// store (cloud::resolve_gcs_auth): anonymous, HMAC keys, or an OAuth2 bearer token.
GdalOptions gs_options(const StorageOptions& o) {
  const cloud::GcsAuth auth = cloud::resolve_gcs_auth(o);
  GdalOptions out;
  if (!o.endpoint_url.empty()) out.emplace_back("CPL_GS_ENDPOINT", o.endpoint_url + "/");
  if (auth.kind == cloud::GcsAuth::Kind::Hmac) {
    out.emplace_back("GS_NO_SIGN_REQUEST", "NO");
    out.emplace_back("GS_ACCESS_KEY_ID", auth.key);
    out.emplace_back("GS_SECRET_ACCESS_KEY", auth.secret);
  } else {
    out.emplace_back("GS_NO_SIGN_REQUEST", "YES");
    // GDAL would try to sign with its own credential chain: send the bearer token instead.
    if (auth.kind == cloud::GcsAuth::Kind::Bearer)
      out.emplace_back("GDAL_HTTP_HEADERS", "Authorization: Bearer " + auth.token);
    // GDAL's own service-account flow ignores the key's token_uri: it gets a token from ours,
    // valid for the token's lifetime (an hour at Google) from the open.
    if (auth.kind == cloud::GcsAuth::Kind::ServiceAccount)
      out.emplace_back("GDAL_HTTP_HEADERS",
                       "Authorization: Bearer " +
                           cloud::GcsTokenSource(auth.service_account, cloud::kGcsReadOnlyScope, o.transfer).token());
  }
  return out;
}

// bucket/key of "s3://bucket/key"; StoreError when either is missing.
std::string bucket_and_key(const ParsedUrl& parsed, std::string_view url) {
  std::string rest = parsed.rest;
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
  const ParsedUrl parsed = parse_url_scheme(url);
  if (parsed.is_local()) {
    // Local paths take no storage options (ignored, as for Zarr directories).
    if (parsed.rest.empty()) throw NotFound("empty path");
    loc.path = parsed.rest;
    return loc;
  }
  if (!parsed.is_remote())
    throw StoreError("unsupported URL scheme '" + parsed.scheme + "' in '" + loc.url + "' for the gdal engine (" +
                     remote_schemes_text() + ")");
  const StorageOptions o = parse_storage_options(options, parsed.kind);
  if (parsed.is_http()) {
    loc.path = "/vsicurl/" + loc.url;
  } else if (parsed.kind == UrlKind::S3) {
    loc.path = "/vsis3/" + bucket_and_key(parsed, url);
    loc.options = s3_options(o);
  } else {
    loc.path = "/vsigs/" + bucket_and_key(parsed, url);
    loc.options = gs_options(o);
  }
  add_transfer_options(o, loc.options);
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
