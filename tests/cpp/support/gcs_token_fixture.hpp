// GCS service-account keys for tests: a throwaway RSA key pair (openssl CLI), key JSON files
// whose token_uri is tests/servers/gcs_token_server.py on 127.0.0.1 (it verifies each JWT's RS256
// signature against the public key and lists the tokens it issued in issued_tokens() — nginx's
// faults.lua `bearer_tokens` admits only those), and a second key the server does not know.
#pragma once

#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "lazycube/store/store.hpp"
#include "moto_fixture.hpp"
#include "script_server.hpp"
#include "test_support.hpp"

namespace lazycube::test {

// Why the token server cannot run here, or "".
inline std::string gcs_token_server_unavailable_reason() {
  int st = 0;
  run_capture("/usr/bin/python3 -c 'import cryptography' 2>&1", &st);
  if (st != 0) return "python3-cryptography is not installed for /usr/bin/python3";
  run_capture("openssl version 2>&1", &st);
  if (st != 0) return "the openssl command is not installed";
  return "";
}

// A fresh RSA key: PEM private key text; its public half written to `public_pem` when given.
inline std::string make_rsa_key(const fs::path& key, const fs::path* public_pem) {
  int st = 0;
  const std::string out =
      run_capture("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out '" + key.string() + "' 2>&1", &st);
  if (st != 0) throw std::runtime_error("openssl genpkey failed: " + out);
  if (public_pem) {
    run_capture("openssl pkey -in '" + key.string() + "' -pubout -out '" + public_pem->string() + "' 2>&1", &st);
    if (st != 0) throw std::runtime_error("openssl pkey -pubout failed");
  }
  return read_file(key);
}

class GcsServiceAccountKeys {
 public:
  // Tokens the server issues live `token_lifetime_s` seconds.
  explicit GcsServiceAccountKeys(double token_lifetime_s)
      : private_key_(make_rsa_key(dir_.path() / "key.pem", &public_pem_)),
        wrong_private_key_(make_rsa_key(dir_.path() / "wrong.pem", nullptr)),
        issued_(write_empty(dir_.path() / "issued-tokens")),
        server_({"/usr/bin/python3", std::string(LAZYCUBE_SOURCE_DIR) + "/tests/servers/gcs_token_server.py",
                 public_pem_.string(), issued_.string(), "--expires-in", std::to_string(token_lifetime_s), "--scope",
                 "https://www.googleapis.com/auth/devstorage.read_only"},
                "gcs_token_server.py") {
    url_ = "http://127.0.0.1:" + std::to_string(server_.port());
    key_json_ = write_key("key.json", key_fields(private_key_));
    wrong_key_json_ = write_key("wrong-key.json", key_fields(wrong_private_key_));
  }

  const fs::path& key_json() const { return key_json_; }              // the key the server knows
  const fs::path& wrong_key_json() const { return wrong_key_json_; }  // same account, another key
  const std::string& private_key() const { return private_key_; }
  const std::string& wrong_private_key() const { return wrong_private_key_; }
  const fs::path& issued_tokens() const { return issued_; }
  const fs::path& dir() const { return dir_.path(); }
  std::string token_uri() const { return url_ + "/token"; }
  std::string host() const { return url_.substr(std::strlen("http://")); }

  // A key file's fields with `pem` as its private key (edit them to make broken keys).
  nlohmann::json key_fields(const std::string& pem) const {
    return {{"type", "service_account"},
            {"project_id", "lazycube-test"},
            {"private_key_id", "0123456789abcdef"},
            {"private_key", pem},
            {"client_email", "reader@lazycube-test.iam.gserviceaccount.com"},
            {"client_id", "1234567890"},
            {"token_uri", token_uri()}};
  }
  fs::path write_key(const std::string& name, const nlohmann::json& j) const {
    const fs::path p = dir_.path() / name;
    write_file(p, j.dump(2));
    return p;
  }
  // {"issued": N, "refused": M}, read through lazycube's own HTTP store.
  nlohmann::json stats() const {
    auto b = open_location(url_).store->get("stats");
    return nlohmann::json::parse(std::string(reinterpret_cast<const char*>(b->data()), b->size()));
  }

 private:
  static fs::path write_empty(const fs::path& p) {
    write_file(p, std::string());
    return p;
  }

  TempDir dir_;
  fs::path public_pem_ = dir_.path() / "public.pem";
  std::string private_key_, wrong_private_key_;
  fs::path issued_;
  ScriptServer server_;
  std::string url_;
  fs::path key_json_, wrong_key_json_;
};

}  // namespace lazycube::test
