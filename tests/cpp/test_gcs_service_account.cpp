// GCS service accounts end to end on loopback: a throwaway RSA key (openssl CLI) in a key JSON
// whose token_uri is tests/servers/gcs_token_server.py (verifies the RS256 JWT against the public
// key, issues 2-second tokens), and nginx standing in for GCS's XML API, accepting only current
// tokens of that server (faults.lua `bearer_tokens`). Reads equal the local read, tokens are
// refreshed during a long read without a failed request, and bad keys are clear errors that
// show no secret.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include <thread>

#include "../../src/store/gcs_token.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "moto_fixture.hpp"
#include "nginx_server.hpp"
#include "test_support.hpp"

namespace lazycube {
namespace {

using test::message_of;
using test::ScopedEnv;
using test::TempDir;
namespace fs = std::filesystem;

const std::string kSource = LAZYCUBE_SOURCE_DIR;
constexpr double kTokenLifetime = 2.0;  // seconds: renewed after 1 s

// Why the token server cannot run here, or "".
std::string token_server_unavailable_reason() {
  int st = 0;
  test::run_capture("/usr/bin/python3 -c 'import cryptography' 2>&1", &st);
  if (st != 0) return "python3-cryptography is not installed for /usr/bin/python3";
  test::run_capture("openssl version 2>&1", &st);
  if (st != 0) return "the openssl command is not installed";
  return "";
}

// tests/servers/gcs_token_server.py, stopped by PID.
class TokenServer {
 public:
  TokenServer(const fs::path& public_key, const fs::path& tokens_file)
      : process_({"/usr/bin/python3", kSource + "/tests/servers/gcs_token_server.py", public_key.string(),
                  tokens_file.string(), "--expires-in", std::to_string(kTokenLifetime), "--scope",
                  "https://www.googleapis.com/auth/devstorage.read_only"}) {
    if (process_.first_line().empty()) throw std::runtime_error("gcs_token_server.py printed no port");
    url_ = "http://127.0.0.1:" + process_.first_line();
  }
  std::string token_uri() const { return url_ + "/token"; }
  std::string host() const { return url_.substr(std::strlen("http://")); }
  // {"issued": N, "refused": M}, read through lazycube's own HTTP store.
  nlohmann::json stats() const {
    auto b = open_location(url_).store->get("stats");
    return nlohmann::json::parse(std::string(reinterpret_cast<const char*>(b->data()), b->size()));
  }

 private:
  test::ServerProcess process_;
  std::string url_;
};

// A fresh RSA key: PEM private key text; its public half written to `public_pem`.
std::string make_rsa_key(const fs::path& dir, const std::string& name, const fs::path* public_pem) {
  const fs::path key = dir / (name + ".pem");
  int st = 0;
  const std::string out = test::run_capture("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out '" +
                                            key.string() + "' 2>&1", &st);
  if (st != 0) throw std::runtime_error("openssl genpkey failed: " + out);
  if (public_pem) {
    test::run_capture("openssl pkey -in '" + key.string() + "' -pubout -out '" + public_pem->string() + "' 2>&1", &st);
    if (st != 0) throw std::runtime_error("openssl pkey -pubout failed");
  }
  return test::read_file(key);
}

// Servers and keys, set up once per process.
struct World {
  TempDir dir;
  std::string private_key, wrong_private_key;
  fs::path key_json, wrong_key_json;
  std::unique_ptr<TokenServer> tokens;
  std::unique_ptr<test::NginxServer> gcs;

  fs::path write_key(const std::string& name, const nlohmann::json& j) const {
    const fs::path p = dir.path() / name;
    test::write_file(p, j.dump(2));
    return p;
  }
  nlohmann::json key_fields(const std::string& pem) const {
    return {{"type", "service_account"},
            {"project_id", "lazycube-test"},
            {"private_key_id", "0123456789abcdef"},
            {"private_key", pem},
            {"client_email", "reader@lazycube-test.iam.gserviceaccount.com"},
            {"client_id", "1234567890"},
            {"token_uri", tokens->token_uri()}};
  }
  std::string endpoint() const { return gcs->url(); }
};

World* world(std::string& skip) {
  static std::string reason;
  static std::unique_ptr<World> w = [&]() -> std::unique_ptr<World> {
    if (reason = test::nginx_unavailable_reason(); !reason.empty()) return nullptr;
    if (reason = token_server_unavailable_reason(); !reason.empty()) return nullptr;
    auto w = std::make_unique<World>();
    const fs::path pub = w->dir.path() / "public.pem", issued = w->dir.path() / "issued-tokens";
    test::write_file(issued, std::string());
    w->private_key = make_rsa_key(w->dir.path(), "key", &pub);
    w->wrong_private_key = make_rsa_key(w->dir.path(), "wrong", nullptr);
    w->tokens = std::make_unique<TokenServer>(pub, issued);
    // The bucket "bkt" holds the ERA5 sample; only current tokens may read it.
    const fs::path www = w->dir.path() / "www";
    fs::create_directories(www / "bkt");
    fs::create_directory_symlink(kSource + "/data/era5_sample_v2.zarr", www / "bkt" / "era5_v2.zarr");
    w->gcs = std::make_unique<test::NginxServer>(www);
    w->gcs->set_faults("bearer_tokens = '" + issued.string() + "'");
    w->key_json = w->write_key("key.json", w->key_fields(w->private_key));
    w->wrong_key_json = w->write_key("wrong-key.json", w->key_fields(w->wrong_private_key));
    return w;
  }();
  skip = reason;
  return w.get();
}

class GcsServiceAccount : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string skip;
    w_ = world(skip);
    if (!w_) GTEST_SKIP() << skip;
    env_ = std::make_unique<test::CleanCloudEnv>(home_.str());
    w_->gcs->set_faults("bearer_tokens = '" + (w_->dir.path() / "issued-tokens").string() + "'");
  }
  StoreOptions options(const fs::path& key) const {
    return {{"token", key.string()}, {"endpoint_url", w_->endpoint()}};
  }
  static constexpr const char* kUrl = "gs://bkt/era5_v2.zarr";

  World* w_ = nullptr;
  TempDir home_;
  std::unique_ptr<test::CleanCloudEnv> env_;
};

void expect_same_as_local(const std::string& remote, const StoreOptions& options) {
  OpenOptions ro;
  ro.storage_options = options;
  const Dataset r = open(remote, ro);
  const Dataset l = open(kSource + "/data/era5_sample_v2.zarr");
  ASSERT_EQ(r.variable_names(), l.variable_names());
  for (const auto& name : l.variable_names()) {
    const NDArray a = r[name].read(), b = l[name].read();
    ASSERT_EQ(a.data.size(), b.data.size()) << name;
    EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size()), 0) << name;
  }
}

TEST_F(GcsServiceAccount, KeyFileTokenReadsLikeTheLocalRead) {
  const auto before = w_->tokens->stats();
  expect_same_as_local(kUrl, options(w_->key_json));
  EXPECT_GT(w_->tokens->stats()["issued"].get<int>(), before["issued"].get<int>());
}

TEST_F(GcsServiceAccount, GoogleApplicationCredentialsNamesTheKey) {
  ScopedEnv creds("GOOGLE_APPLICATION_CREDENTIALS", w_->key_json.string());
  expect_same_as_local(kUrl, {{"endpoint_url", w_->endpoint()}});
}

// The stand-in really checks tokens: without one, or with a made-up one, reads are refused.
TEST_F(GcsServiceAccount, RequestsWithoutACurrentTokenAreRefused) {
  const std::string msg = message_of<AuthError>([&] {
    OpenOptions o;
    o.storage_options = {{"endpoint_url", w_->endpoint()}};
    open(kUrl, o);
  });
  EXPECT_NE(msg.find("401"), std::string::npos) << msg;
  const std::string msg2 = message_of<AuthError>([&] {
    OpenOptions o;
    o.storage_options = {{"endpoint_url", w_->endpoint()}, {"token", "ya29.made-up"}};
    open(kUrl, o);
  });
  EXPECT_NE(msg2.find("401"), std::string::npos) << msg2;
  EXPECT_EQ(msg2.find("ya29.made-up"), std::string::npos) << msg2;
}

// Tokens live 2 s and are renewed after 1 s: a read of ~3.5 s sees several exchanges, and no
// request fails or is retried (each attempt carries a current token).
TEST_F(GcsServiceAccount, TokensAreRefreshedDuringALongRead) {
  w_->gcs->set_faults("latency_ms = 40, bearer_tokens = '" + (w_->dir.path() / "issued-tokens").string() + "'");
  const Location loc = open_location(kUrl, options(w_->key_json));
  const std::string local = test::read_file(kSource + "/data/era5_sample_v2.zarr/t2m/0.0.0");
  const int issued_before = w_->tokens->stats()["issued"].get<int>();
  const std::size_t log_before = w_->gcs->access_log().size();
  const auto start = std::chrono::steady_clock::now();
  int reads = 0;
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(3500)) {
    auto b = loc.store->get("t2m/0.0.0");
    ASSERT_TRUE(b.has_value());
    ASSERT_EQ(std::string(reinterpret_cast<const char*>(b->data()), b->size()), local);
    ++reads;
  }
  const int issued = w_->tokens->stats()["issued"].get<int>() - issued_before;
  EXPECT_GE(issued, 3) << reads << " reads";
  EXPECT_LE(issued, 6) << "a token per request instead of a cached one? " << reads << " reads";
  const StoreStats s = loc.store->stats();
  EXPECT_EQ(s.errors, 0u);
  EXPECT_EQ(s.retries, 0u);
  EXPECT_EQ(w_->gcs->access_log().find(" 401 ", log_before), std::string::npos);
}

// Concurrent callers share one exchange (single flight); a token is reused until it is due.
TEST_F(GcsServiceAccount, ConcurrentCallersShareOneExchange) {
  auto source = std::make_shared<cloud::GcsTokenSource>(cloud::read_gcs_service_account_key(w_->key_json.string()),
                                                        cloud::kGcsReadOnlyScope, TransferOptions{});
  std::vector<std::string> tokens(8);
  std::vector<std::thread> threads;
  for (auto& t : tokens) threads.emplace_back([&source, &t] { t = source->token(); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(source->exchanges(), 1u);
  for (const auto& t : tokens) EXPECT_EQ(t, tokens[0]);
  EXPECT_EQ(source->token(), tokens[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(kTokenLifetime * 500) + 100));
  EXPECT_NE(source->token(), tokens[0]);  // half the lifetime gone: renewed
  EXPECT_EQ(source->exchanges(), 2u);
}

TEST_F(GcsServiceAccount, WrongKeyIsAClearAuthErrorWithoutSecrets) {
  const int refused_before = w_->tokens->stats()["refused"].get<int>();
  const std::string msg = message_of<AuthError>([&] {
    OpenOptions o;
    o.storage_options = options(w_->wrong_key_json);
    open(kUrl, o);
  });
  EXPECT_NE(msg.find(w_->tokens->host()), std::string::npos) << msg;
  EXPECT_NE(msg.find("HTTP 400"), std::string::npos) << msg;
  EXPECT_NE(msg.find("invalid_grant"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Invalid JWT Signature"), std::string::npos) << msg;
  for (const std::string& secret : {std::string("PRIVATE KEY"), w_->wrong_private_key.substr(40, 40),
                                   std::string("assertion"), std::string("eyJ")})
    EXPECT_EQ(msg.find(secret), std::string::npos) << msg;
  EXPECT_GT(w_->tokens->stats()["refused"].get<int>(), refused_before);
}

TEST_F(GcsServiceAccount, MalformedKeyFilesNameThePathAndTheField) {
  auto fields = w_->key_fields(w_->private_key);
  fields.erase("client_email");
  const fs::path no_email = w_->write_key("no-email.json", fields);
  std::string msg = message_of<StoreError>([&] { open_location(kUrl, options(no_email)); });
  EXPECT_NE(msg.find(no_email.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("client_email"), std::string::npos) << msg;

  const fs::path missing = w_->dir.path() / "absent.json";
  msg = message_of<StoreError>([&] { open_location(kUrl, options(missing)); });
  EXPECT_NE(msg.find(missing.string()), std::string::npos) << msg;

  const fs::path not_json = w_->dir.path() / "garbage.json";
  test::write_file(not_json, std::string("{not json"));
  msg = message_of<StoreError>([&] { open_location(kUrl, options(not_json)); });
  EXPECT_NE(msg.find("not a JSON object"), std::string::npos) << msg;

  fields = w_->key_fields(w_->private_key);
  fields["type"] = "authorized_user";
  const fs::path user = w_->write_key("user.json", fields);
  msg = message_of<StoreError>([&] { open_location(kUrl, options(user)); });
  EXPECT_NE(msg.find("authorized_user"), std::string::npos) << msg;

  fields = w_->key_fields("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n");
  const fs::path bad_pem = w_->write_key("bad-pem.json", fields);
  msg = message_of<AuthError>([&] { open(kUrl, OpenOptions{.storage_options = options(bad_pem)}); });
  EXPECT_NE(msg.find("private_key is not a PEM private key"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("not a key"), std::string::npos) << msg;

  ScopedEnv creds("GOOGLE_APPLICATION_CREDENTIALS", no_email.string());
  msg = message_of<StoreError>([&] { open_location(kUrl, {{"endpoint_url", w_->endpoint()}}); });
  EXPECT_NE(msg.find("client_email"), std::string::npos) << msg;
}

TEST_F(GcsServiceAccount, TokenMethodsNeedingGoogleAreRefusedClearly) {
  const std::string msg =
      message_of<StoreError>([&] { open_location(kUrl, {{"token", "google_default"}, {"endpoint_url", w_->endpoint()}}); });
  EXPECT_NE(msg.find("google_default"), std::string::npos) << msg;
  EXPECT_NE(msg.find("GOOGLE_APPLICATION_CREDENTIALS"), std::string::npos) << msg;
}

}  // namespace
}  // namespace lazycube
