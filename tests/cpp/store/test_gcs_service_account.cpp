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

#include "store/gcs_token.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "gcs_token_fixture.hpp"
#include "moto_fixture.hpp"
#include "nginx_server.hpp"
#include "test_support.hpp"

namespace lazycube {
namespace {

using test::message_of;
using test::ScopedEnv;
using test::TempDir;
namespace fs = std::filesystem;

const std::string kGcsSource = LAZYCUBE_SOURCE_DIR;
constexpr double kTokenLifetime = 2.0;  // seconds: renewed after 1 s

// The token server and keys, and nginx serving gs://bkt/era5_v2.zarr: set up once per process.
struct World {
  test::GcsServiceAccountKeys keys{kTokenLifetime};
  TempDir www;
  std::unique_ptr<test::NginxServer> gcs;
  std::string endpoint() const { return gcs->url(); }
};

World* world(std::string& skip) {
  static std::string reason;
  static std::unique_ptr<World> w = [&]() -> std::unique_ptr<World> {
    if (reason = test::nginx_unavailable_reason(); !reason.empty()) return nullptr;
    if (reason = test::gcs_token_server_unavailable_reason(); !reason.empty()) return nullptr;
    auto w = std::make_unique<World>();
    fs::create_directories(w->www.path() / "bkt");
    fs::create_directory_symlink(kGcsSource + "/data/era5_sample_v2.zarr", w->www.path() / "bkt" / "era5_v2.zarr");
    w->gcs = std::make_unique<test::NginxServer>(w->www.path());
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
    w_->gcs->set_faults("bearer_tokens = '" + w_->keys.issued_tokens().string() + "'");
  }
  StoreOptions options(const fs::path& key) const {
    return {{"token", key.string()}, {"endpoint_url", w_->endpoint()}};
  }
  static constexpr const char* kUrl = "gs://bkt/era5_v2.zarr";

  World* w_ = nullptr;
  TempDir home_;
  std::unique_ptr<test::CleanCloudEnv> env_;
};

void gcs_same_as_local(const std::string& remote, const StoreOptions& options) {
  OpenOptions ro;
  ro.storage_options = options;
  const Dataset r = open(remote, ro);
  const Dataset l = open(kGcsSource + "/data/era5_sample_v2.zarr");
  ASSERT_EQ(r.variable_names(), l.variable_names());
  for (const auto& name : l.variable_names()) {
    const NDArray a = r[name].read(), b = l[name].read();
    ASSERT_EQ(a.data.size(), b.data.size()) << name;
    EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size()), 0) << name;
  }
}

TEST_F(GcsServiceAccount, KeyFileTokenReadsLikeTheLocalRead) {
  const auto before = w_->keys.stats();
  gcs_same_as_local(kUrl, options(w_->keys.key_json()));
  EXPECT_GT(w_->keys.stats()["issued"].get<int>(), before["issued"].get<int>());
}

TEST_F(GcsServiceAccount, GoogleApplicationCredentialsNamesTheKey) {
  ScopedEnv creds("GOOGLE_APPLICATION_CREDENTIALS", w_->keys.key_json().string());
  gcs_same_as_local(kUrl, {{"endpoint_url", w_->endpoint()}});
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
  w_->gcs->set_faults("latency_ms = 40, bearer_tokens = '" + w_->keys.issued_tokens().string() + "'");
  const Location loc = open_location(kUrl, options(w_->keys.key_json()));
  const std::string local = test::read_file(kGcsSource + "/data/era5_sample_v2.zarr/t2m/0.0.0");
  const int issued_before = w_->keys.stats()["issued"].get<int>();
  const std::size_t log_before = w_->gcs->access_log().size();
  const auto start = std::chrono::steady_clock::now();
  int reads = 0;
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(3500)) {
    auto b = loc.store->get("t2m/0.0.0");
    ASSERT_TRUE(b.has_value());
    ASSERT_EQ(std::string(reinterpret_cast<const char*>(b->data()), b->size()), local);
    ++reads;
  }
  const int issued = w_->keys.stats()["issued"].get<int>() - issued_before;
  EXPECT_GE(issued, 3) << reads << " reads";
  EXPECT_LE(issued, 6) << "a token per request instead of a cached one? " << reads << " reads";
  const StoreStats s = loc.store->stats();
  EXPECT_EQ(s.errors, 0u);
  EXPECT_EQ(s.retries, 0u);
  // The status field: it alone is followed by the quoted request (" 401 " alone also matched
  // the 401st request of a kept-alive connection, "$connection $connection_requests $status").
  EXPECT_EQ(w_->gcs->access_log().find(" 401 \"", log_before), std::string::npos);
}

// Concurrent callers share one exchange (single flight); a token is reused until it is due.
TEST_F(GcsServiceAccount, ConcurrentCallersShareOneExchange) {
  auto source = std::make_shared<cloud::GcsTokenSource>(cloud::read_gcs_service_account_key(w_->keys.key_json().string()),
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
  const int refused_before = w_->keys.stats()["refused"].get<int>();
  const std::string msg = message_of<AuthError>([&] {
    OpenOptions o;
    o.storage_options = options(w_->keys.wrong_key_json());
    open(kUrl, o);
  });
  EXPECT_NE(msg.find(w_->keys.host()), std::string::npos) << msg;
  EXPECT_NE(msg.find("HTTP 400"), std::string::npos) << msg;
  EXPECT_NE(msg.find("invalid_grant"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Invalid JWT Signature"), std::string::npos) << msg;
  for (const std::string& secret : {std::string("PRIVATE KEY"), w_->keys.wrong_private_key().substr(40, 40),
                                   std::string("assertion"), std::string("eyJ")})
    EXPECT_EQ(msg.find(secret), std::string::npos) << msg;
  EXPECT_GT(w_->keys.stats()["refused"].get<int>(), refused_before);
}

TEST_F(GcsServiceAccount, MalformedKeyFilesNameThePathAndTheField) {
  auto fields = w_->keys.key_fields(w_->keys.private_key());
  fields.erase("client_email");
  const fs::path no_email = w_->keys.write_key("no-email.json", fields);
  std::string msg = message_of<StoreError>([&] { open_location(kUrl, options(no_email)); });
  EXPECT_NE(msg.find(no_email.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("client_email"), std::string::npos) << msg;

  const fs::path missing = w_->keys.dir() / "absent.json";
  msg = message_of<StoreError>([&] { open_location(kUrl, options(missing)); });
  EXPECT_NE(msg.find(missing.string()), std::string::npos) << msg;

  const fs::path not_json = w_->keys.dir() / "garbage.json";
  test::write_file(not_json, std::string("{not json"));
  msg = message_of<StoreError>([&] { open_location(kUrl, options(not_json)); });
  EXPECT_NE(msg.find("not a JSON object"), std::string::npos) << msg;

  fields = w_->keys.key_fields(w_->keys.private_key());
  fields["type"] = "authorized_user";
  const fs::path user = w_->keys.write_key("user.json", fields);
  msg = message_of<StoreError>([&] { open_location(kUrl, options(user)); });
  EXPECT_NE(msg.find("authorized_user"), std::string::npos) << msg;

  fields = w_->keys.key_fields("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n");
  const fs::path bad_pem = w_->keys.write_key("bad-pem.json", fields);
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
