// gs://bucket/prefix (also gcs://) through GCS's XML API (S3-compatible requests on
// storage.googleapis.com): anonymous, OAuth2 bearer token, a service account's refreshed tokens
// (gcs_token.hpp), or HMAC keys signed with SigV4.
#include "credentials.hpp"
#include "object_store.hpp"

namespace lazycube::cloud {

std::shared_ptr<Store> make_gcs_store(const std::string& bucket, const std::string& prefix,
                                      const StoreOptions& options) {
  const StorageOptions o = parse_storage_options(options, UrlKind::Gs);
  const GcsAuth auth = resolve_gcs_auth(o);
  ObjectStoreConfig c;
  c.scheme = "gs";
  c.bucket = bucket;
  c.prefix = prefix;
  c.base_url = (o.endpoint_url.empty() ? std::string("https://storage.googleapis.com") : o.endpoint_url) + "/" + bucket;
  c.transfer = o.transfer;
  if (auth.kind == GcsAuth::Kind::Hmac) {
    http::SigV4 sig;
    sig.region = auth.region;
    sig.service = "s3";
    sig.access_key = auth.key;
    sig.secret_key = auth.secret;
    c.sigv4 = sig;
    c.secrets = {auth.secret};
  } else if (auth.kind == GcsAuth::Kind::Bearer) {
    c.headers.push_back("Authorization: Bearer " + auth.token);
    c.secrets = {auth.token};
  } else if (auth.kind == GcsAuth::Kind::ServiceAccount) {
    c.signer = make_bearer_signer(std::make_shared<GcsTokenSource>(auth.service_account, kGcsReadOnlyScope, o.transfer));
  }
  c.auth_description = auth.describe();
  return make_object_store(std::move(c));
}

}  // namespace lazycube::cloud
