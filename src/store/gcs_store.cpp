// gs://bucket/prefix through GCS's XML API (S3-compatible requests on storage.googleapis.com):
// anonymous, OAuth2 bearer token, or HMAC keys signed with SigV4.
#include <cstdlib>

#include "cloud_options.hpp"
#include "credentials.hpp"
#include "lazycube/error.hpp"
#include "object_store.hpp"

namespace lazycube::cloud {

std::shared_ptr<Store> make_gcs_store(const std::string& bucket, const std::string& prefix,
                                      const StoreOptions& options) {
  const CloudOptions o = parse_cloud_options(options, "gs");
  if (o.requester_pays)
    throw StoreError("gs:// option 'requester_pays' is not supported yet (it needs a billing project)");
  ObjectStoreConfig c;
  c.scheme = "gs";
  c.bucket = bucket;
  c.prefix = prefix;
  c.base_url = (o.endpoint_url.empty() ? std::string("https://storage.googleapis.com") : o.endpoint_url) + "/" + bucket;
  apply_transfer_options(o, c);

  std::string token = o.token;
  if (token.empty() && !o.anon.value_or(false)) {
    if (const char* env = std::getenv("GOOGLE_OAUTH_ACCESS_TOKEN")) token = env;
  }
  if (o.anon.value_or(false) || token == "anon") {
    c.auth_description = "anonymous (unsigned requests)";
  } else if (!o.key.empty() || !o.secret.empty()) {
    if (o.key.empty() || o.secret.empty())
      throw StoreError(std::string("gs:// HMAC credentials: option '") + (o.key.empty() ? "secret" : "key") +
                       "' given without '" + (o.key.empty() ? "key" : "secret") + "'");
    http::SigV4 sig;
    sig.region = o.region_name.empty() ? "auto" : o.region_name;
    sig.service = "s3";
    sig.access_key = o.key;
    sig.secret_key = o.secret;
    c.sigv4 = sig;
    c.secrets = {o.secret};
    c.auth_description = "HMAC key " + mask_key_id(o.key) + " from options";
  } else if (!token.empty()) {
    c.headers.push_back("Authorization: Bearer " + token);
    c.secrets = {token};
    c.auth_description = std::string("OAuth2 bearer token from ") +
                         (o.token.empty() ? "GOOGLE_OAUTH_ACCESS_TOKEN" : "option 'token'");
  } else {
    c.auth_description = "anonymous (unsigned requests)";
  }
  return make_object_store(std::move(c));
}

}  // namespace lazycube::cloud
