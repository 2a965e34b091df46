// Unit tests of the object-store pieces that need no server: the AWS credential chain (temp
// HOME, environment restored after each test), storage_options parsing, ListObjectsV2/error XML
// parsing, URI encoding and bucket URLs.
#include <gtest/gtest.h>

#include "store/credentials.hpp"
#include "store/http_util.hpp"
#include "store/object_store.hpp"
#include "store/s3_protocol.hpp"
#include "store/storage_options.hpp"
#include "lazycube/error.hpp"
#include "moto_fixture.hpp"
#include "test_support.hpp"

using namespace lazycube;
using namespace lazycube::cloud;
using lazycube::test::CleanCloudEnv;
using lazycube::test::ScopedEnv;
using lazycube::test::TempDir;
using lazycube::test::write_file;

namespace {

const char* kSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRETKEY";

TEST(Credentials, NothingFoundIsAnonymous) {
  TempDir home;
  CleanCloudEnv env(home.str());
  auto s = resolve_aws_settings({});
  EXPECT_TRUE(s.credentials.anonymous());
  EXPECT_EQ(s.region, "us-east-1");
  EXPECT_EQ(s.endpoint_url, "");
  EXPECT_NE(s.credentials.describe().find("anonymous"), std::string::npos);
}

TEST(Credentials, ExplicitOptionsWinOverEnvironment) {
  TempDir home;
  CleanCloudEnv env(home.str());
  ScopedEnv a("AWS_ACCESS_KEY_ID", "AKIAENVENVENVENV"), b("AWS_SECRET_ACCESS_KEY", "envsecret");
  StorageOptions o;
  o.key = "AKIAOPTIONSOPTION";
  o.secret = kSecret;
  o.token = "tok123";
  auto c = resolve_aws_settings(o).credentials;
  EXPECT_EQ(c.access_key_id, "AKIAOPTIONSOPTION");
  EXPECT_EQ(c.secret_access_key, kSecret);
  EXPECT_EQ(c.session_token, "tok123");
  EXPECT_EQ(c.source, "options");
  const std::string d = c.describe();
  EXPECT_EQ(d.find(kSecret), std::string::npos) << d;
  EXPECT_EQ(d.find("AKIAOPTIONSOPTION"), std::string::npos) << d;
  EXPECT_EQ(d.find("tok123"), std::string::npos) << d;
  EXPECT_NE(d.find("AKIA****"), std::string::npos) << d;
}

TEST(Credentials, AnonOptionBeatsEverything) {
  TempDir home;
  CleanCloudEnv env(home.str());
  ScopedEnv a("AWS_ACCESS_KEY_ID", "AKIAENVENVENVENV"), b("AWS_SECRET_ACCESS_KEY", "envsecret");
  StorageOptions o;
  o.anon = true;
  EXPECT_TRUE(resolve_aws_settings(o).credentials.anonymous());
}

TEST(Credentials, HalfGivenKeyIsAnErrorWithoutTheSecret) {
  TempDir home;
  CleanCloudEnv env(home.str());
  StorageOptions o;
  o.secret = kSecret;
  try {
    resolve_aws_settings(o);
    FAIL() << "expected StoreError";
  } catch (const StoreError& e) {
    EXPECT_EQ(std::string(e.what()).find(kSecret), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("'key'"), std::string::npos) << e.what();
  }
}

TEST(Credentials, EnvironmentWithSessionToken) {
  TempDir home;
  CleanCloudEnv env(home.str());
  ScopedEnv a("AWS_ACCESS_KEY_ID", "ASIAENVENVENVENV"), b("AWS_SECRET_ACCESS_KEY", "envsecret"),
      t("AWS_SESSION_TOKEN", "envtoken"), r("AWS_DEFAULT_REGION", "eu-west-3");
  auto s = resolve_aws_settings({});
  EXPECT_EQ(s.credentials.access_key_id, "ASIAENVENVENVENV");
  EXPECT_EQ(s.credentials.session_token, "envtoken");
  EXPECT_EQ(s.credentials.source, "environment");
  EXPECT_EQ(s.region, "eu-west-3");
  ScopedEnv r2("AWS_REGION", "ap-south-1");
  EXPECT_EQ(resolve_aws_settings({}).region, "ap-south-1");
}

TEST(Credentials, DefaultProfileFromHomeFiles) {
  TempDir home;
  CleanCloudEnv env(home.str());
  write_file(home.path() / ".aws/credentials",
             "# comment\n[default]\naws_access_key_id = AKIADEFAULTDEFAULT\naws_secret_access_key = " +
                 std::string(kSecret) + "\n\n[other]\naws_access_key_id=AKIAOTHEROTHER\naws_secret_access_key=x\n");
  write_file(home.path() / ".aws/config", "[default]\nregion = eu-central-1\ns3 =\n  addressing_style = path\n");
  auto s = resolve_aws_settings({});
  EXPECT_EQ(s.credentials.access_key_id, "AKIADEFAULTDEFAULT");
  EXPECT_EQ(s.credentials.secret_access_key, kSecret);
  EXPECT_EQ(s.region, "eu-central-1");
  EXPECT_NE(s.credentials.source.find("profile 'default'"), std::string::npos);
}

TEST(Credentials, NamedProfileFromConfigFileAndOverrides) {
  TempDir home, other;
  CleanCloudEnv env(home.str());
  // Credentials in the config file under "[profile name]", files named by the env variables.
  write_file(other.path() / "creds", "[default]\naws_access_key_id = AKIADEFAULTDEFAULT\naws_secret_access_key = d\n");
  write_file(other.path() / "conf",
             "[profile dev]\nregion = us-west-2\naws_access_key_id = AKIADEVDEVDEVDEV\naws_secret_access_key = devsecret\n"
             "aws_session_token = devtoken\n");
  ScopedEnv f1("AWS_SHARED_CREDENTIALS_FILE", (other.path() / "creds").string()),
      f2("AWS_CONFIG_FILE", (other.path() / "conf").string()), p("AWS_PROFILE", "dev");
  auto s = resolve_aws_settings({});
  EXPECT_EQ(s.credentials.access_key_id, "AKIADEVDEVDEVDEV");
  EXPECT_EQ(s.credentials.secret_access_key, "devsecret");
  EXPECT_EQ(s.credentials.session_token, "devtoken");
  EXPECT_EQ(s.region, "us-west-2");
  // The option names another profile; region_name beats the profile's region.
  StorageOptions o;
  o.profile = "default";
  o.region_name = "sa-east-1";
  auto d = resolve_aws_settings(o);
  EXPECT_EQ(d.credentials.access_key_id, "AKIADEFAULTDEFAULT");
  EXPECT_EQ(d.region, "sa-east-1");
}

TEST(Credentials, MissingNamedProfileIsAnError) {
  TempDir home;
  CleanCloudEnv env(home.str());
  ScopedEnv p("AWS_PROFILE", "nosuch");
  EXPECT_THROW(resolve_aws_settings({}), StoreError);
}

TEST(Credentials, EndpointFromEnvironment) {
  TempDir home;
  CleanCloudEnv env(home.str());
  ScopedEnv e("AWS_ENDPOINT_URL", "http://127.0.0.1:9000/");
  EXPECT_EQ(resolve_aws_settings({}).endpoint_url, "http://127.0.0.1:9000");
  StorageOptions o;
  o.endpoint_url = "http://localhost:1";
  EXPECT_EQ(resolve_aws_settings(o).endpoint_url, "http://localhost:1");
}

TEST(Credentials, MaskKeyId) {
  EXPECT_EQ(mask_key_id("AKIAIOSFODNN7EXAMPLE"), "AKIA****");
  EXPECT_EQ(mask_key_id("short"), "****");
}

TEST(S3Options, ParsesKnownOptions) {
  auto o = parse_storage_options({{"anon", "1"}, {"requester_pays", "true"}, {"max_concurrency", "8"},
                                  {"timeout", "2.5"}, {"retries", "3"}, {"endpoint_url", "http://x:1/"}},
                                 "s3");
  EXPECT_EQ(o.anon, true);
  EXPECT_TRUE(o.requester_pays);
  EXPECT_EQ(o.transfer.engine.max_in_flight, 8u);
  EXPECT_DOUBLE_EQ(o.transfer.engine.timeout_s, 2.5);
  EXPECT_EQ(o.transfer.retry.max_attempts, 4);
  EXPECT_EQ(o.endpoint_url, "http://x:1");
  EXPECT_EQ(parse_storage_options({{"anon", "False"}}, "s3").anon, false);
}

TEST(S3Options, UnknownOrBadOptionIsNamed) {
  try {
    parse_storage_options({{"acl", "x"}}, "s3");
    FAIL();
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("'acl'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_storage_options({{"anon", "maybe"}}, "s3"), StoreError);
  EXPECT_THROW(parse_storage_options({{"retries", "-1"}}, "s3"), StoreError);
  EXPECT_THROW(parse_storage_options({{"timeout", "soon"}}, "gs"), StoreError);
}

TEST(S3Protocol, UriEncode) {
  EXPECT_EQ(http::percent_encode("a/b c+d~e_f.g-h", true), "a/b%20c%2Bd~e_f.g-h");
  EXPECT_EQ(http::percent_encode("a/b", false), "a%2Fb");
  EXPECT_EQ(http::percent_encode("\xc3\xa9", true), "%C3%A9");
}

TEST(S3Protocol, XmlDecode) {
  EXPECT_EQ(s3::xml_decode("a&amp;b&lt;c&gt;&quot;&apos;&#65;&#x42;&#xe9;"), "a&b<c>\"'AB\xc3\xa9");
  EXPECT_EQ(s3::xml_decode("lone & amp"), "lone & amp");
  EXPECT_EQ(s3::xml_decode("&bogus;"), "&bogus;");
}

TEST(S3Protocol, ParsesListPage) {
  const std::string xml = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>b</Name><Prefix>root/</Prefix><KeyCount>3</KeyCount><MaxKeys>3</MaxKeys>
  <Delimiter>/</Delimiter><IsTruncated>true</IsTruncated>
  <Contents><Key>root/a&amp;b.txt</Key><Size>1</Size></Contents>
  <Contents><Key>root/.zattrs</Key><Size>2</Size></Contents>
  <CommonPrefixes><Prefix>root/sub/</Prefix></CommonPrefixes>
  <NextContinuationToken>tok+/=&lt;</NextContinuationToken>
</ListBucketResult>)";
  auto p = s3::parse_list_page(xml);
  EXPECT_EQ(p.keys, (std::vector<std::string>{"root/a&b.txt", "root/.zattrs"}));
  EXPECT_EQ(p.prefixes, (std::vector<std::string>{"root/sub/"}));
  EXPECT_TRUE(p.truncated);
  EXPECT_EQ(p.next_token, "tok+/=<");
  auto last = s3::parse_list_page("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>");
  EXPECT_FALSE(last.truncated);
  EXPECT_TRUE(last.keys.empty());
  EXPECT_THROW(s3::parse_list_page("<html>nope</html>"), StoreError);
  EXPECT_THROW(s3::parse_list_page("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>"),
               StoreError);
}

TEST(S3Protocol, ParsesErrorBody) {
  auto e = s3::parse_error_body(
      "<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><Message>bad &amp; wrong</Message></Error>");
  EXPECT_EQ(e.code, "SignatureDoesNotMatch");
  EXPECT_EQ(e.message, "bad & wrong");
  EXPECT_TRUE(s3::parse_error_body("").code.empty());
}

TEST(S3Protocol, Redact) {
  EXPECT_EQ(s3::redact("a SECRET b SECRET", {"SECRET", ""}), "a *** b ***");
}

TEST(S3Protocol, BucketUrls) {
  EXPECT_EQ(s3_bucket_url("era5", "eu-west-1", ""), "https://era5.s3.eu-west-1.amazonaws.com");
  EXPECT_EQ(s3_bucket_url("my.bucket", "us-east-1", ""), "https://s3.us-east-1.amazonaws.com/my.bucket");
  EXPECT_EQ(s3_bucket_url("b", "us-east-1", "http://127.0.0.1:9000"), "http://127.0.0.1:9000/b");
}

}  // namespace
