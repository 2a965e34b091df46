// GCS service accounts: a JSON key file → an RS256-signed JWT (OpenSSL) exchanged at the key's
// token_uri for an OAuth2 access token, cached and refreshed before it expires, and a signer
// that puts the current token on every attempt of every request.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "http_engine.hpp"
#include "storage_options.hpp"

namespace lazycube::cloud {

inline constexpr const char* kGcsReadOnlyScope = "https://www.googleapis.com/auth/devstorage.read_only";
inline constexpr const char* kGcsReadWriteScope = "https://www.googleapis.com/auth/devstorage.read_write";

// The fields of a service-account key (`gcloud iam service-accounts keys create`) we use.
struct GcsServiceAccountKey {
  std::string path;  // where it was read from, for messages
  std::string client_email;
  std::string private_key;     // PEM (PKCS#8)
  std::string private_key_id;  // the JWT header's "kid" (may be empty)
  std::string token_uri;
};

// Reads a key file. StoreError naming the path when it cannot be read or is not JSON, and
// naming the missing field (client_email, private_key, token_uri) or the wrong "type" (only
// "service_account" keys are supported; user credentials are not).
GcsServiceAccountKey read_gcs_service_account_key(const std::string& path);
// The same for the file's text (`path` names it in messages).
GcsServiceAccountKey parse_gcs_service_account_key(std::string_view text, const std::string& path);

// What a token endpoint answered: the access token and its lifetime (expires_in; an hour when
// absent, never negative).
struct GcsTokenResponse {
  std::string access_token;
  double lifetime_s = 3600;
};
// Parses the token endpoint's answer (HTTP `status`, JSON `body`); `where` names the exchange.
// AuthError for a refusal (4xx, naming the status and the OAuth2 error) or an answer without
// access_token, StoreError for other failures; never shows the token.
GcsTokenResponse parse_gcs_token_response(long status, std::string_view body, const std::string& where);

// The signed JWT assertion for `key` and `scope`, issued at `issued_at` (seconds since the
// epoch) and valid one hour. AuthError naming the key file when its private key is unusable
// (never the key itself).
std::string gcs_jwt_assertion(const GcsServiceAccountKey& key, const std::string& scope, std::int64_t issued_at);

// Access tokens for one key and scope, shared by every request of a store (thread-safe). A
// token is renewed when min(5 minutes, half its lifetime) of it is left; concurrent callers wait
// for one exchange (single flight). Exchanges go through a private HTTP engine: the caller may be
// the process engine's own thread (a Signer), which must not wait on itself.
class GcsTokenSource {
 public:
  GcsTokenSource(GcsServiceAccountKey key, std::string scope, TransferOptions transfer);

  // A token valid now. AuthError when the exchange is refused (naming the token_uri's host, the
  // HTTP status and the OAuth2 error), StoreError when the endpoint cannot be reached; neither
  // ever shows the private key, the assertion or a token.
  std::string token();

  // Exchanges done so far (tests and diagnostics).
  std::size_t exchanges() const;
  // "service account NAME (key file PATH)", for messages.
  std::string describe() const;

 private:
  using Clock = std::chrono::steady_clock;
  void exchange();  // with mutex_ held

  const GcsServiceAccountKey key_;
  const std::string scope_;
  const TransferOptions transfer_;
  mutable std::mutex mutex_;
  std::string token_;
  Clock::time_point renew_at_{};
  std::size_t exchanges_ = 0;
};

// A Signer adding "Authorization: Bearer TOKEN" (the source's current token) to each attempt.
std::shared_ptr<const http::Signer> make_bearer_signer(std::shared_ptr<GcsTokenSource> source);

}  // namespace lazycube::cloud
