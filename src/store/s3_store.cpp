// s3://bucket/prefix: AWS S3 or an S3-compatible endpoint, SigV4-signed unless anonymous.
#include <cstdlib>

#include "backend_registry.hpp"
#include "credentials.hpp"
#include "object_store.hpp"

namespace lazycube::cloud {

std::string s3_bucket_url(const std::string& bucket, const std::string& region, const std::string& endpoint_url) {
  if (!endpoint_url.empty()) return endpoint_url + "/" + bucket;
  if (bucket.find('.') != std::string::npos) return "https://s3." + region + ".amazonaws.com/" + bucket;
  return "https://" + bucket + ".s3." + region + ".amazonaws.com";
}

std::shared_ptr<Store> make_s3_store(const std::string& bucket, const std::string& prefix,
                                     const StoreOptions& options) {
  const StorageOptions o = parse_storage_options(options, UrlKind::S3);
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

}  // namespace lazycube::cloud

namespace lazycube {

void register_s3_backend(BackendRegistry& r) {
  r.add({UrlKind::S3, {"s3"}, {}, [](const ParsedUrl& url, const StoreOptions& options) {
           const auto [bucket, prefix] = cloud::bucket_and_prefix(url);
           return Location{cloud::make_s3_store(bucket, prefix, options), ""};
         },
         "s3://"});
}

}  // namespace lazycube
