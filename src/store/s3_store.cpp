// s3://bucket/prefix: AWS S3 or an S3-compatible endpoint, SigV4-signed unless anonymous.
#include <cstdlib>

#include "backend_registry.hpp"
#include "credentials.hpp"
#include "object_store.hpp"
#include "vsi_mapping.hpp"

namespace lazycube::cloud {

std::string s3_bucket_url(const std::string& bucket, const std::string& region, const std::string& endpoint_url) {
  if (!endpoint_url.empty()) return endpoint_url + "/" + bucket;
  if (bucket.find('.') != std::string::npos) return "https://s3." + region + ".amazonaws.com/" + bucket;
  return "https://" + bucket + ".s3." + region + ".amazonaws.com";
}

std::shared_ptr<Store> make_s3_store(const std::string& bucket, const std::string& prefix,
                                     const StoreOptions& options) {
  const StorageOptions o = parse_storage_options(options, "s3");
  const AwsSettings aws = resolve_aws_settings(o);
  ObjectStoreConfig c;
  c.scheme = "s3";
  c.bucket = bucket;
  c.prefix = prefix;
  c.base_url = s3_bucket_url(bucket, aws.region, aws.endpoint_url);
  c.transfer = o.transfer;
  const auto& cred = aws.credentials;
  if (!cred.anonymous()) {
    http::SigV4 sig;
    sig.region = aws.region;
    sig.service = "s3";
    sig.access_key = cred.access_key_id;
    sig.secret_key = cred.secret_access_key;
    sig.session_token = cred.session_token;
    c.sigv4 = sig;
    c.secrets = {cred.secret_access_key, cred.session_token};
  }
  if (o.requester_pays) c.headers.push_back("x-amz-request-payer: requester");
  c.auth_description = cred.describe();
  return make_object_store(std::move(c));
}

namespace {

// GDAL's /vsis3/ with the same endpoint, region and credentials as our store.
VsiLocation vsi_s3(const ParsedUrl& url, const StorageOptions& o) {
  VsiLocation loc;
  loc.path = "/vsis3/" + vsi_bucket_and_key(url);
  const AwsSettings s = resolve_aws_settings(o);
  auto& out = loc.options;
  if (!s.endpoint_url.empty()) {
    const auto [host, https] = vsi_endpoint(s.endpoint_url);
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
    if (!s.credentials.session_token.empty()) out.emplace_back("AWS_SESSION_TOKEN", s.credentials.session_token);
  }
  if (o.requester_pays) out.emplace_back("AWS_REQUEST_PAYER", "requester");
  return loc;
}

Location open_s3(const ParsedUrl& url, const StoreOptions& options) {
  const auto [bucket, prefix] = bucket_and_prefix(url);
  return {make_s3_store(bucket, prefix, options), ""};
}

}  // namespace

}  // namespace lazycube::cloud

LAZYCUBE_REGISTER_BACKEND(s3) {
  using namespace lazycube;
  registry.add({.role = BackendRole::ObjectStore,
                .schemes = {"s3"},
                .shared_options = {"list_page_size", "anon", "key", "secret", "token", "endpoint_url", "region_name",
                                   "profile", "requester_pays"},
                .open = &cloud::open_s3,
                .vsi = &cloud::vsi_s3,
                .describe = "s3://",
                .listing_order = 30});
}
