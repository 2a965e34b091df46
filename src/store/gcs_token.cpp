#include "gcs_token.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "http_util.hpp"
#include "lazycube/error.hpp"
#include "util/text.hpp"

namespace lazycube::cloud {

namespace {

std::string base64url(std::string_view bytes) {
  std::string s = base64_encode(bytes);
  while (!s.empty() && s.back() == '=') s.pop_back();
  std::replace(s.begin(), s.end(), '+', '-');
  std::replace(s.begin(), s.end(), '/', '_');
  return s;
}

// RS256: an RSASSA-PKCS1-v1_5 signature over SHA-256 of `data` with the PEM private key.
std::string rs256_sign(const GcsServiceAccountKey& key, const std::string& data) {
  const auto unusable = [&](const char* why) {
    return AuthError("GCS service-account key file " + key.path + ": the private_key " + why);
  };
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(key.private_key.data(), static_cast<int>(key.private_key.size())),
                                               BIO_free);
  if (!bio) throw unusable("cannot be read (out of memory)");
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> pkey(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr),
                                                           EVP_PKEY_free);
  if (!pkey) throw unusable("is not a PEM private key");
  if (EVP_PKEY_base_id(pkey.get()) != EVP_PKEY_RSA) throw unusable("is not an RSA key (RS256 needs one)");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  std::size_t len = 0;
  const auto* in = reinterpret_cast<const unsigned char*>(data.data());
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, pkey.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len, in, data.size()) != 1)
    throw unusable("cannot sign (OpenSSL refused it)");
  std::string sig(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len, in, data.size()) != 1)
    throw unusable("cannot sign (OpenSSL refused it)");
  sig.resize(len);
  return sig;
}

class BearerSigner final : public http::Signer {
 public:
  explicit BearerSigner(std::shared_ptr<GcsTokenSource> source) : source_(std::move(source)) {}
  void sign(const std::string&, std::string&, std::vector<std::string>& headers) const override {
    headers.push_back("Authorization: Bearer " + source_->token());
  }

 private:
  std::shared_ptr<GcsTokenSource> source_;
};

}  // namespace

GcsServiceAccountKey read_gcs_service_account_key(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw StoreError("GCS service-account key file " + path + ": cannot be read");
  std::stringstream text;
  text << f.rdbuf();
  return parse_gcs_service_account_key(text.str(), path);
}

GcsServiceAccountKey parse_gcs_service_account_key(std::string_view text, const std::string& path) {
  const std::string what = "GCS service-account key file " + path;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) throw StoreError(what + ": not a JSON object");
  const auto field = [&](const char* name, bool required) {
    auto it = j.find(name);
    if (it == j.end() || !it->is_string() || it->get<std::string>().empty()) {
      if (required) throw StoreError(what + ": field '" + name + "' is missing");
      return std::string();
    }
    return it->get<std::string>();
  };
  const std::string type = field("type", false);
  if (!type.empty() && type != "service_account")
    throw StoreError(what + ": type '" + type + "' is not supported (only 'service_account' keys)");
  GcsServiceAccountKey k;
  k.path = path;
  k.client_email = field("client_email", true);
  k.private_key = field("private_key", true);
  k.private_key_id = field("private_key_id", false);
  k.token_uri = field("token_uri", true);
  return k;
}

std::string gcs_jwt_assertion(const GcsServiceAccountKey& key, const std::string& scope, std::int64_t issued_at) {
  nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}};
  if (!key.private_key_id.empty()) header["kid"] = key.private_key_id;
  const nlohmann::json claims = {{"iss", key.client_email}, {"scope", scope},          {"aud", key.token_uri},
                                 {"iat", issued_at},        {"exp", issued_at + 3600}};
  const std::string signing_input = base64url(header.dump()) + "." + base64url(claims.dump());
  return signing_input + "." + base64url(rs256_sign(key, signing_input));
}

GcsTokenSource::GcsTokenSource(GcsServiceAccountKey key, std::string scope, TransferOptions transfer)
    : key_(std::move(key)), scope_(std::move(scope)), transfer_(std::move(transfer)) {}

std::string GcsTokenSource::describe() const {
  return "service account " + key_.client_email + " (key file " + key_.path + ")";
}

std::size_t GcsTokenSource::exchanges() const {
  std::lock_guard lock(mutex_);
  return exchanges_;
}

std::string GcsTokenSource::token() {
  std::lock_guard lock(mutex_);  // held through an exchange: one at a time, the others reuse it
  if (token_.empty() || Clock::now() >= renew_at_) exchange();
  return token_;
}

void GcsTokenSource::exchange() {
  const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                               std::chrono::system_clock::now().time_since_epoch()).count();
  http::Request req;
  req.method = "POST";
  req.url = key_.token_uri;
  req.headers = {"Content-Type: application/x-www-form-urlencoded", "Accept: application/json"};
  req.body = "grant_type=" + http::percent_encode("urn:ietf:params:oauth:grant-type:jwt-bearer", false) +
             "&assertion=" + http::percent_encode(gcs_jwt_assertion(key_, scope_, now), false);
  const std::string where = "GCS token exchange at " + http::host_of(key_.token_uri) + " for " + describe();
  const auto started = Clock::now();
  http::Response r;
  try {
    // A private engine per exchange: the caller may be the process engine's thread, and an
    // engine made now is never one inherited across a fork().
    r = std::move(http::Engine::create(1)->perform({req}, transfer_.retry, transfer_.engine, nullptr)[0]);
  } catch (const StoreError& e) {
    throw StoreError(where + " failed: " + e.what());
  }
  GcsTokenResponse answer = parse_gcs_token_response(
      r.status, std::string_view(reinterpret_cast<const char*>(r.body.data()), r.body.size()), where);
  const double renew_after = answer.lifetime_s - std::min(300.0, answer.lifetime_s / 2);
  token_ = std::move(answer.access_token);
  renew_at_ = started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(renew_after));
  ++exchanges_;
}

GcsTokenResponse parse_gcs_token_response(long status, std::string_view body, const std::string& where) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  const auto text = [&](const char* name) {
    auto it = j.is_object() ? j.find(name) : j.end();
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (status != 200) {
    std::string msg = where + " refused: HTTP " + std::to_string(status);
    if (const std::string error = text("error"); !error.empty()) msg += " " + error;
    if (const std::string detail = text("error_description"); !detail.empty()) msg += " (" + detail + ")";
    if (status >= 400 && status < 500) throw AuthError(msg);
    throw StoreError(msg);
  }
  GcsTokenResponse out;
  out.access_token = text("access_token");
  if (out.access_token.empty()) throw AuthError(where + ": the answer has no access_token");
  if (auto it = j.is_object() ? j.find("expires_in") : j.end(); it != j.end() && it->is_number())
    out.lifetime_s = it->get<double>();
  out.lifetime_s = std::max(0.0, out.lifetime_s);
  return out;
}

std::shared_ptr<const http::Signer> make_bearer_signer(std::shared_ptr<GcsTokenSource> source) {
  return std::make_shared<BearerSigner>(std::move(source));
}

}  // namespace lazycube::cloud
