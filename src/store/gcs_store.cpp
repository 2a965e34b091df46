// gs://bucket/prefix (also gcs://) through GCS's XML API (S3-compatible requests on
// storage.googleapis.com): anonymous, OAuth2 bearer token, a service account's refreshed tokens
// (gcs_token.hpp), or HMAC keys signed with SigV4.
#include "backend_registry.hpp"
#include "credentials.hpp"
#include "http_util.hpp"
#include "object_store.hpp"
#include "vsi_mapping.hpp"

namespace lazycube::cloud {

std::shared_ptr<Store> make_gcs_store(const std::string& bucket, const std::string& prefix,
                                      const StoreOptions& options) {
  const StorageOptions o = parse_storage_options(options, "gs");
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

namespace {

// GDAL's /vsigs/ as our gs:// store (resolve_gcs_auth): anonymous or HMAC keys. OAuth2 bearer
// tokens (given, or a service account's) cannot reach GDAL 3.6: /vsigs/ and /vsicurl/ drop a
// per-path Authorization header (GDAL_HTTP_HEADERS, GDAL_HTTP_HEADER_FILE; tried), and a global
// one would go to every host. Such reads go anonymously, with a caveat for the error message.
VsiLocation vsi_gs(const ParsedUrl& url, const StorageOptions& o) {
  VsiLocation loc;
  loc.path = "/vsigs/" + vsi_bucket_and_key(url);
  const GcsAuth auth = resolve_gcs_auth(o);
  auto& out = loc.options;
  if (!o.endpoint_url.empty()) out.emplace_back("CPL_GS_ENDPOINT", o.endpoint_url + "/");
  if (auth.kind == GcsAuth::Kind::Hmac) {
    out.emplace_back("GS_NO_SIGN_REQUEST", "NO");
    out.emplace_back("GS_ACCESS_KEY_ID", auth.key);
    out.emplace_back("GS_SECRET_ACCESS_KEY", auth.secret);
  } else {
    out.emplace_back("GS_NO_SIGN_REQUEST", "YES");
  }
  if (auth.kind == GcsAuth::Kind::Bearer || auth.kind == GcsAuth::Kind::ServiceAccount)
    loc.caveat = "the gdal engine read it anonymously: GDAL 3.6 cannot send OAuth2 bearer tokens (" +
                 auth.describe() + "); give HMAC keys (key, secret) for private NetCDF/HDF5/GRIB objects on GCS";
  return loc;
}

Location open_gs(const ParsedUrl& url, const StoreOptions& options) {
  const auto [bucket, prefix] = bucket_and_prefix(url);
  return {make_gcs_store(bucket, prefix, options), ""};
}

}  // namespace

}  // namespace lazycube::cloud

LAZYCUBE_REGISTER_BACKEND(gs) {
  using namespace lazycube;
  registry.add({.role = BackendRole::ObjectStore,
                .schemes = {"gs", "gcs"},
                .shared_options = {"list_page_size", "anon", "key", "secret", "token", "endpoint_url", "region_name",
                                   "requester_pays"},
                .open = &cloud::open_gs,
                .vsi = &cloud::vsi_gs,
                .describe = "gs:// (gcs://)",
                .listing_order = 40});
}
