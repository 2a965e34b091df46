// The S3 credential chain: explicit options → AWS_* environment → profile files → anonymous.
// Region and endpoint are resolved alongside (they come from the same places).
#pragma once

#include <string>

#include "gcs_token.hpp"
#include "storage_options.hpp"

namespace lazycube::cloud {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  std::string source = "anonymous";  // "options", "environment", "profile 'name' (path)", "anonymous"

  bool anonymous() const { return access_key_id.empty(); }
  // For messages and logs: source and a masked key id ("AKIA****"); never the secret or token.
  std::string describe() const;
};

struct AwsSettings {
  AwsCredentials credentials;
  std::string region;        // never empty: "us-east-1" when nothing says otherwise
  std::string endpoint_url;  // empty: AWS's own endpoints (virtual-hosted addressing)
};

// Resolves credentials, region and endpoint for an S3 store.
//   credentials: `anon` → anonymous; `key`+`secret` (+`token`) options; AWS_ACCESS_KEY_ID +
//     AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN); the profile (`profile` option, AWS_PROFILE,
//     else "default") in AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials) then AWS_CONFIG_FILE
//     (~/.aws/config, "[profile name]" sections); anonymous when nothing is found.
//   region: `region_name` → AWS_REGION → AWS_DEFAULT_REGION → profile `region` → us-east-1.
//   endpoint: `endpoint_url` → AWS_ENDPOINT_URL_S3 → AWS_ENDPOINT_URL.
// Throws StoreError for half-given credentials or an explicitly named profile that does not exist.
AwsSettings resolve_aws_settings(const StorageOptions& options);

// How gs:// requests authenticate (our store and the GDAL mapping alike).
struct GcsAuth {
  enum class Kind { Anonymous, Hmac, Bearer, ServiceAccount };
  Kind kind = Kind::Anonymous;
  std::string key, secret;  // Hmac
  std::string region;       // Hmac: SigV4 region (`region_name`, else "auto")
  std::string token;        // Bearer
  GcsServiceAccountKey service_account;  // ServiceAccount: tokens come from a GcsTokenSource
  std::string source;       // where the credentials came from, for messages
  // For messages: never a secret or token.
  std::string describe() const;
};

// `anon` (or token "anon") → anonymous; `key`+`secret` → HMAC (both needed); `token` naming a
// service-account key file (gcsfs's spelling: a path, i.e. with a '/' or ending ".json") →
// service account; any other `token` → bearer token; then GOOGLE_OAUTH_ACCESS_TOKEN → bearer
// token; GOOGLE_APPLICATION_CREDENTIALS → service account; else anonymous. The key file is read
// here (StoreError naming the path and what is wrong with it). StoreError for half-given HMAC
// keys, for gcsfs's token methods that need Google's servers or gcloud ("google_default",
// "cloud", "cache", "browser") and for `requester_pays` (not supported yet: it needs a billing
// project).
GcsAuth resolve_gcs_auth(const StorageOptions& options);

// Masks an access key id for messages: its first 4 characters then "****" ("****" when short).
std::string mask_key_id(const std::string& key_id);

}  // namespace lazycube::cloud
