// S3 and GCS stores against a real moto server (tests/cpp/support/moto_fixture.hpp): SigV4-verified
// reads of the bundled ERA5 samples, authentication failures, session tokens, profiles,
// anonymous paginated listings, and the GCS XML-API path through an endpoint override.
#include <gtest/gtest.h>

#include <cstring>

#include "store/object_store.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "moto_fixture.hpp"
#include "test_support.hpp"

using namespace lazycube;
using lazycube::test::CleanCloudEnv;
using lazycube::test::MotoServer;
using lazycube::test::ScopedEnv;
using lazycube::test::TempDir;

namespace {

const std::string kS3Source = LAZYCUBE_SOURCE_DIR;

std::string bucket_url(const std::string& scheme, const std::string& prefix) {
  return scheme + "://" + MotoServer::kBucket + "/" + prefix;
}

// Every variable of `remote` equals the local sample's, byte for byte.
void s3_same_as_local(const std::string& remote, const std::string& local, const StoreOptions& options) {
  OpenOptions ro;
  ro.storage_options = options;
  const Dataset r = open(remote, ro);
  const Dataset l = open(local);
  ASSERT_EQ(r.variable_names(), l.variable_names());
  for (const auto& name : l.variable_names()) {
    const NDArray a = r[name].read(), b = l[name].read();
    ASSERT_EQ(a.data.size(), b.data.size()) << name;
    EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size()), 0) << name;
  }
}

// The message of the StoreError thrown by opening `url` with `options`.
template <class E = StoreError>
std::string open_error(const std::string& url, const StoreOptions& options) {
  OpenOptions o;
  o.storage_options = options;
  try {
    open(url, o);
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "opening " << url << " did not throw";
  return {};
}

class S3Moto : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason;
    moto_ = MotoServer::instance(reason);
    if (!moto_) GTEST_SKIP() << reason;
    env_ = std::make_unique<CleanCloudEnv>(home_.str());
    moto_->set_auth(true);
  }
  void TearDown() override {
    if (moto_) moto_->set_auth(false);
  }
  StoreOptions signed_options() const {
    return {{"key", moto_->key_id}, {"secret", moto_->secret}, {"endpoint_url", moto_->endpoint}};
  }

  MotoServer* moto_ = nullptr;
  TempDir home_;
  std::unique_ptr<CleanCloudEnv> env_;
};

TEST_F(S3Moto, SignedReadOfConsolidatedV2EqualsLocal) {
  s3_same_as_local(bucket_url("s3", "era5_v2.zarr"), kS3Source + "/data/era5_sample_v2.zarr", signed_options());
}

TEST_F(S3Moto, SignedReadOfShardedV3EqualsLocal) {
  s3_same_as_local(bucket_url("s3", "era5_v3.zarr"), kS3Source + "/data/era5_sample_v3.zarr", signed_options());
}

TEST_F(S3Moto, WrongSecretIs403SignatureDoesNotMatch) {
  const std::string bad = "WrongSecretWrongSecretWrongSecret0123456";
  auto opts = signed_options();
  opts["secret"] = bad;
  const std::string msg = open_error<AuthError>(bucket_url("s3", "era5_v2.zarr"), opts);
  EXPECT_NE(msg.find("403"), std::string::npos) << msg;
  EXPECT_NE(msg.find("SignatureDoesNotMatch"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(bad), std::string::npos) << msg;
  EXPECT_EQ(msg.find(moto_->key_id), std::string::npos) << msg;
  // The store's URL never carries credentials either.
  auto store = cloud::make_s3_store(MotoServer::kBucket, "era5_v2.zarr", opts);
  EXPECT_EQ(store->url(), "s3://lazycube-test/era5_v2.zarr");
  try {
    store->size(".zgroup");
    ADD_FAILURE() << "HEAD with a wrong secret succeeded";
  } catch (const AuthError& e) {
    EXPECT_NE(std::string(e.what()).find("SignatureDoesNotMatch"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
}

TEST_F(S3Moto, UnknownKeyIdIsInvalidAccessKeyId) {
  auto opts = signed_options();
  opts["key"] = "AKIANOSUCHKEYNOSUCH1";
  const std::string msg = open_error<AuthError>(bucket_url("s3", "era5_v2.zarr"), opts);
  EXPECT_NE(msg.find("403"), std::string::npos) << msg;
  EXPECT_NE(msg.find("InvalidAccessKeyId"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(moto_->secret), std::string::npos) << msg;
}

TEST_F(S3Moto, SessionTokenFromEnvironment) {
  ScopedEnv a("AWS_ACCESS_KEY_ID", moto_->session_key_id), s("AWS_SECRET_ACCESS_KEY", moto_->session_secret),
      t("AWS_SESSION_TOKEN", moto_->session_token), e("AWS_ENDPOINT_URL", moto_->endpoint);
  s3_same_as_local(bucket_url("s3", "era5_v2.zarr"), kS3Source + "/data/era5_sample_v2.zarr", {});
  // A wrong token is refused, and the message shows neither token nor secret.
  ScopedEnv t2("AWS_SESSION_TOKEN", "not-the-token-" + moto_->session_token.substr(0, 20));
  const std::string msg = open_error<AuthError>(bucket_url("s3", "era5_v2.zarr"), {});
  EXPECT_NE(msg.find("InvalidToken"), std::string::npos) << msg;  // S3 and moto: 400 InvalidToken
  EXPECT_EQ(msg.find("not-the-token-"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(moto_->session_secret), std::string::npos) << msg;
}

TEST_F(S3Moto, ProfileFromHomeCredentialsFile) {
  lazycube::test::write_file(home_.path() / ".aws/credentials",
                             "[default]\naws_access_key_id = AKIAWRONGWRONGWRONG1\naws_secret_access_key = x\n"
                             "[moto]\naws_access_key_id = " + moto_->key_id + "\naws_secret_access_key = " +
                                 moto_->secret + "\n");
  lazycube::test::write_file(home_.path() / ".aws/config", "[profile moto]\nregion = us-east-1\n");
  ScopedEnv p("AWS_PROFILE", "moto"), e("AWS_ENDPOINT_URL", moto_->endpoint);
  s3_same_as_local(bucket_url("s3", "era5_v2.zarr"), kS3Source + "/data/era5_sample_v2.zarr", {});
}

TEST_F(S3Moto, MissingChunkIsAbsentAndRangesWork) {
  auto store = cloud::make_s3_store(MotoServer::kBucket, "era5_v2.zarr", signed_options());
  EXPECT_FALSE(store->get("t2m/9.9.9").has_value());
  EXPECT_FALSE(store->size("t2m/9.9.9").has_value());
  const std::string local = lazycube::test::read_file(kS3Source + "/data/era5_sample_v2.zarr/t2m/.zarray");
  ASSERT_EQ(store->size("t2m/.zarray"), local.size());
  auto part = store->get("t2m/.zarray", ByteRange::range(2, 5));
  ASSERT_TRUE(part);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(part->data()), part->size()), local.substr(2, 5));
  auto tail = store->get("t2m/.zarray", ByteRange::suffix(4));
  ASSERT_TRUE(tail);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(tail->data()), tail->size()), local.substr(local.size() - 4));
  EXPECT_GT(store->stats().requests, 0u);
}

// Listing with authentication off (moto rejects signed listings whose query strings carry
// percent-encoded characters), with tiny pages to exercise continuation tokens.
TEST_F(S3Moto, AnonymousListingPaginates) {
  moto_->set_auth(false);
  const std::string local_root = kS3Source + "/data/era5_sample_v3.zarr";
  auto local = make_file_store(local_root);
  for (int page : {0, 7}) {
    cloud::ObjectStoreConfig c;
    c.scheme = "s3";
    c.bucket = MotoServer::kBucket;
    c.prefix = "era5_v3.zarr";
    c.base_url = moto_->endpoint + "/" + MotoServer::kBucket;
    c.auth_description = "anonymous";
    c.transfer.list_page_size = page;
    auto store = cloud::make_object_store(c);
    EXPECT_EQ(store->list(""), local->list("")) << "page size " << page;
    EXPECT_EQ(store->list("t2m"), local->list("t2m")) << "page size " << page;
    EXPECT_EQ(store->list_dir(""), local->list_dir("")) << "page size " << page;
    EXPECT_EQ(store->list_dir("t2m/c/0"), local->list_dir("t2m/c/0")) << "page size " << page;
    EXPECT_TRUE(store->list("nosuch/").empty());
  }
  // Without consolidated metadata the v3 hierarchy is discovered by listing.
  OpenOptions o;
  o.storage_options = {{"anon", "true"}, {"endpoint_url", moto_->endpoint}};
  o.format_options["consolidated"] = false;
  const Dataset r = open(bucket_url("s3", "era5_v3.zarr"), o);
  EXPECT_EQ(r.variable_names(), open(local_root).variable_names());
}

TEST(S3Open, RejectsUnknownOptionAndMissingBucket) {
  OpenOptions o;
  o.storage_options = {{"no_such_option", "1"}};
  try {
    open("s3://bucket/x.zarr", o);
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_option"), std::string::npos) << e.what();
  }
  EXPECT_THROW(open("s3:///x.zarr"), StoreError);
  EXPECT_THROW(open("gs://b/x", {.storage_options = {{"requester_pays", "true"}}}), StoreError);
}

// GCS through its XML API, pointed at moto with an endpoint override (path-style
// ENDPOINT/BUCKET/OBJECT, exactly the request shape of storage.googleapis.com).
TEST_F(S3Moto, GcsBearerTokenReadsAndNeverLeaks) {
  moto_->set_auth(false);  // moto ignores the bearer token when not checking
  const std::string token = "ya29.secret-oauth-token-value";
  s3_same_as_local(bucket_url("gs", "era5_v2.zarr"), kS3Source + "/data/era5_sample_v2.zarr",
                       {{"token", token}, {"endpoint_url", moto_->endpoint}});
  auto store = cloud::make_gcs_store(MotoServer::kBucket, "era5_v2.zarr",
                                     {{"token", token}, {"endpoint_url", moto_->endpoint}});
  EXPECT_EQ(store->url(), "gs://lazycube-test/era5_v2.zarr");
  EXPECT_EQ(store->list_dir(""), make_file_store(kS3Source + "/data/era5_sample_v2.zarr")->list_dir(""));
  // With checking on, moto fails requests carrying a bearer token: the error must not show it.
  moto_->set_auth(true);
  ScopedEnv env_token("GOOGLE_OAUTH_ACCESS_TOKEN", token);
  const std::string msg =
      open_error(bucket_url("gs", "era5_v2.zarr"), {{"endpoint_url", moto_->endpoint}, {"retries", "0"}});
  EXPECT_FALSE(msg.empty());
  EXPECT_EQ(msg.find(token), std::string::npos) << msg;
}

TEST_F(S3Moto, GcsHmacKeysSignLikeS3) {
  StoreOptions opts = signed_options();
  s3_same_as_local(bucket_url("gs", "era5_v2.zarr"), kS3Source + "/data/era5_sample_v2.zarr", opts);
  opts["secret"] = "WrongHmacSecretWrongHmacSecret";
  const std::string msg = open_error<AuthError>(bucket_url("gs", "era5_v2.zarr"), opts);
  EXPECT_NE(msg.find("SignatureDoesNotMatch"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("WrongHmacSecret"), std::string::npos) << msg;
}

TEST(GcsOptions, AnonymousWithoutToken) {
  TempDir home;
  CleanCloudEnv env(home.str());
  auto store = cloud::make_gcs_store("pub", "a/b", {});
  EXPECT_EQ(store->url(), "gs://pub/a/b");
}

}  // namespace
