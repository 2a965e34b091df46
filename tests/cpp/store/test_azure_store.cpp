// Azure Blob Storage (az://, abfs[s]://, https://ACCOUNT.blob.core.windows.net) against a real
// Azurite on 127.0.0.1 (azurite_server.hpp): SharedKey from options, a connection string or the
// environment; listings beyond one page (markers); concurrent reads; reads at the object's end;
// wrong keys and SAS tokens refused with the HTTP status and Azure's error code, never showing a
// secret; the ERA5 samples read value for value like the local copies; NetCDF over /vsiaz/. The
// get/range/suffix/missing/listing contract and the conformance fixtures run in
// test_store_contract.cpp (backend "az").
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "netcdf/gdal_location.hpp"
#include "store/azure_protocol.hpp"
#include "store/azure_store.hpp"
#include "store/backend_registry.hpp"
#include "store/object_store.hpp"
#include "azurite_server.hpp"
#include "gdal_test_files.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/refs/references.hpp"
#include "util/text.hpp"
#include "moto_fixture.hpp"

using namespace lazycube;
using lazycube::test::AzuriteServer;
using lazycube::test::CleanCloudEnv;
using lazycube::test::message_of;
using lazycube::test::ScopedEnv;
using lazycube::test::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string kAzureSource = LAZYCUBE_SOURCE_DIR;
const std::string kContainer = AzuriteServer::kContainer;

std::string text(const std::optional<Buffer>& b) {
  return b ? std::string(reinterpret_cast<const char*>(b->data()), b->size()) : std::string("<absent>");
}

// Every variable of the dataset at `remote` equals the local sample's, byte for byte.
void azure_same_as_local(const std::string& remote, const std::string& local, const StoreOptions& options) {
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

class Azure : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string skip;
    az_ = AzuriteServer::instance(skip);
    if (!az_) GTEST_SKIP() << skip;
    env_ = std::make_unique<CleanCloudEnv>(home_.str());
    static bool uploaded = false;
    if (!uploaded) {
      az_->upload_tree(kContainer, kAzureSource + "/data/era5_sample_v2.zarr", "era5_v2.zarr");
      az_->upload_tree(kContainer, kAzureSource + "/data/era5_sample_v3.zarr", "era5_v3.zarr");
      az_->upload(kContainer, "objects/hello.txt", "hello, azure");
      uploaded = true;
    }
  }
  StoreOptions conn() const { return {{"connection_string", az_->connection_string()}}; }
  std::string url(const std::string& path) const { return "az://" + kContainer + "/" + path; }

  AzuriteServer* az_ = nullptr;
  TempDir home_;
  std::unique_ptr<CleanCloudEnv> env_;
};

TEST_F(Azure, SharedKeyReadsOfTheSamplesEqualLocal) {
  azure_same_as_local(url("era5_v2.zarr"), kAzureSource + "/data/era5_sample_v2.zarr", conn());
  azure_same_as_local(url("era5_v3.zarr"), kAzureSource + "/data/era5_sample_v3.zarr", conn());
}

// account_name + account_key as options; the connection string only says where the endpoint is.
TEST_F(Azure, AccountKeyOptionsAndEnvironment) {
  const std::string endpoint_only = "BlobEndpoint=" + az_->endpoint() + ";";
  azure_same_as_local(url("era5_v2.zarr"), kAzureSource + "/data/era5_sample_v2.zarr",
                       {{"account_name", AzuriteServer::kAccount},
                        {"account_key", AzuriteServer::kKey},
                        {"connection_string", endpoint_only}});
  ScopedEnv conn_env("AZURE_STORAGE_CONNECTION_STRING", endpoint_only);
  ScopedEnv account("AZURE_STORAGE_ACCOUNT_NAME", std::string(AzuriteServer::kAccount));
  ScopedEnv key("AZURE_STORAGE_ACCOUNT_KEY", std::string(AzuriteServer::kKey));
  azure_same_as_local(url("era5_v2.zarr"), kAzureSource + "/data/era5_sample_v2.zarr", {});
  // The whole connection string from the environment.
  ScopedEnv full("AZURE_STORAGE_CONNECTION_STRING", az_->connection_string());
  ScopedEnv no_account("AZURE_STORAGE_ACCOUNT_NAME", std::nullopt);
  ScopedEnv no_key("AZURE_STORAGE_ACCOUNT_KEY", std::nullopt);
  azure_same_as_local(url("era5_v3.zarr"), kAzureSource + "/data/era5_sample_v3.zarr", {});
}

TEST_F(Azure, ListingPaginatesWithMarkers) {
  const auto local = make_file_store(kAzureSource + "/data/era5_sample_v3.zarr");
  for (int page : {0, 3}) {
    SCOPED_TRACE(page);
    StoreOptions paged = conn();
    if (page > 0) paged["list_page_size"] = std::to_string(page);
    auto store = cloud::make_azure_store(parse_url_scheme(url("era5_v3.zarr")), paged);
    EXPECT_GT(local->list("").size(), 3u * 2);  // several pages
    EXPECT_EQ(store->list(""), local->list(""));
    EXPECT_EQ(store->list("t2m"), local->list("t2m"));
    EXPECT_EQ(store->list_dir(""), local->list_dir(""));
    EXPECT_EQ(store->list_dir("t2m/c/0"), local->list_dir("t2m/c/0"));
    EXPECT_TRUE(store->list("nosuch/").empty());
  }
  // Without consolidated metadata the v3 hierarchy is discovered by listing.
  OpenOptions o;
  o.storage_options = conn();
  o.format_options["consolidated"] = false;
  EXPECT_EQ(open(url("era5_v3.zarr"), o).variable_names(), open(kAzureSource + "/data/era5_sample_v3.zarr").variable_names());
}

TEST_F(Azure, RangesSuffixAndTheObjectsEnd) {
  const Location loc = open_location(url("objects"), conn());
  Store& s = *loc.store;
  const std::string hello = "hello, azure";
  EXPECT_EQ(s.url(), "az://" + kContainer + "/objects");
  EXPECT_EQ(text(s.get("hello.txt", ByteRange::range(7, 5))), "azure");
  EXPECT_EQ(text(s.get("hello.txt", ByteRange::suffix(5))), "azure");
  EXPECT_EQ(text(s.get("hello.txt", ByteRange::suffix(100))), hello);
  EXPECT_EQ(text(s.get("hello.txt", ByteRange::range(hello.size(), 3))), "");  // starts at the end
  EXPECT_THROW(s.get("hello.txt", ByteRange::range(hello.size() + 1, 3)), StoreError);
  EXPECT_EQ(s.size("hello.txt"), std::optional<std::uint64_t>(hello.size()));
  EXPECT_FALSE(s.get("missing.txt").has_value());
  EXPECT_FALSE(s.size("missing.txt").has_value());
  // A container that does not exist reads as missing keys; its listing is an error naming it.
  const Location none = open_location("az://no-such-container/x", conn());
  EXPECT_FALSE(none.store->get("k").has_value());
  const std::string msg = message_of<StoreError>([&] { none.store->list(""); });
  EXPECT_NE(msg.find("ContainerNotFound"), std::string::npos) << msg;
}

TEST_F(Azure, ConcurrentReadsFromManyThreads) {
  const std::string local_root = kAzureSource + "/data/era5_sample_v2.zarr";
  const auto local = make_file_store(local_root);
  const auto keys = local->list("");
  const Location loc = open_location(url("era5_v2.zarr"), conn());
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0}, reads{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::vector<ByteRequest> batch;
      for (std::size_t i = t; i < keys.size(); i += 2) batch.push_back({keys[i], ByteRange::full()});
      const auto got = loc.store->get_many(batch);
      for (std::size_t i = 0; i < batch.size(); ++i, ++reads)
        if (text(got[i]) != text(local->get(batch[i].key))) ++mismatches;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_GT(reads.load(), static_cast<int>(keys.size()));
}

// The URL forms of one blob: az://, abfs:// with container@host, and the https:// blob host
// (claimed by the az backend in the registry).
TEST_F(Azure, UrlFormsResolveToTheSameBlob) {
  StorageOptions o = parse_storage_options(conn(), "az");
  const auto a = cloud::resolve_azure_settings(parse_url_scheme("az://lazycube/objects/"), o);
  EXPECT_EQ(a.container, "lazycube");
  EXPECT_EQ(a.prefix, "objects");
  EXPECT_EQ(a.endpoint, az_->endpoint());
  EXPECT_EQ(a.auth, cloud::AzureSettings::Auth::SharedKey);
  const StorageOptions none = parse_storage_options({}, "az");
  const auto b = cloud::resolve_azure_settings(parse_url_scheme("abfss://data@myacct.dfs.core.windows.net/a/b.zarr"), none);
  EXPECT_EQ(b.account, "myacct");
  EXPECT_EQ(b.container, "data");
  EXPECT_EQ(b.prefix, "a/b.zarr");
  EXPECT_EQ(b.endpoint, "https://myacct.blob.core.windows.net");
  EXPECT_EQ(b.auth, cloud::AzureSettings::Auth::Anonymous);
  const ParsedUrl https = parse_url_scheme("https://myacct.blob.core.windows.net/data/a/b.zarr");
  EXPECT_EQ(https.backend, backend_for_scheme("az"));
  EXPECT_EQ(https.canonical(), "https://myacct.blob.core.windows.net/data/a/b.zarr");
  const auto c = cloud::resolve_azure_settings(https, none);
  EXPECT_EQ(c.account, "myacct");
  EXPECT_EQ(c.container, "data");
  EXPECT_EQ(c.prefix, "a/b.zarr");
  // A signed URL: its query string is the SAS (never shown).
  const auto signed_url = cloud::resolve_azure_settings(
      parse_url_scheme("https://myacct.blob.core.windows.net/data/a.zarr?sv=2021-08-06&sig=SECRETSIG"), none);
  EXPECT_EQ(signed_url.prefix, "a.zarr");
  EXPECT_EQ(signed_url.auth, cloud::AzureSettings::Auth::Sas);
  EXPECT_EQ(signed_url.sas_token, "sv=2021-08-06&sig=SECRETSIG");
  EXPECT_EQ(signed_url.describe().find("SECRETSIG"), std::string::npos);
  EXPECT_EQ(parse_url_scheme("abfs://x/y").backend, backend_for_scheme("az"));
  EXPECT_EQ(parse_url_scheme("ABFSS://x/y").scheme, "az");
  EXPECT_TRUE(parse_url_scheme("https://example.com/x").is_http());  // other hosts stay plain HTTP
  EXPECT_TRUE(parse_url_scheme("https://evil.com/.blob.core.windows.net").is_http());
  // No account anywhere: a clear error.
  const std::string msg = message_of<StoreError>([&] { open_location("az://lazycube/x"); });
  EXPECT_NE(msg.find("account_name"), std::string::npos) << msg;
  EXPECT_NE(msg.find("AZURE_STORAGE_ACCOUNT_NAME"), std::string::npos) << msg;
}

TEST_F(Azure, WrongKeyIs403AuthenticationFailedWithoutTheKey) {
  const std::string wrong = lazycube::base64_encode("not-the-right-key-not-the-right-key!");
  OpenOptions o;
  o.storage_options = {{"connection_string", az_->connection_string(wrong)}};
  const std::string msg = message_of<AuthError>([&] { open(url("era5_v2.zarr"), o); });
  // Azure answers AuthenticationFailed, Azurite AuthorizationFailure: the code is the server's.
  EXPECT_TRUE(msg.find("HTTP 403 AuthenticationFailed") != std::string::npos ||
              msg.find("HTTP 403 AuthorizationFailure") != std::string::npos)
      << msg;
  EXPECT_NE(msg.find("SharedKey for account 'lazycubeacct'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(wrong), std::string::npos) << msg;
  EXPECT_EQ(msg.find(AzuriteServer::kKey), std::string::npos) << msg;
  // A key that is not base64 is refused before any request, without echoing it.
  o.storage_options = {{"account_name", "a"}, {"account_key", "not base64!"}, {"connection_string", "BlobEndpoint=" + az_->endpoint()}};
  const std::string bad = message_of<StoreError>([&] { open(url("era5_v2.zarr"), o); });
  EXPECT_NE(bad.find("not valid base64"), std::string::npos) << bad;
  EXPECT_EQ(bad.find("not base64!"), std::string::npos) << bad;
}

// Writes are signed like reads: a wrong key is refused (HTTP 403), nothing is written, and the
// key never shows.
TEST_F(Azure, WritesWithWrongCredentialsAreAuthErrors) {
  const std::string wrong = lazycube::base64_encode("not-the-right-key-not-the-right-key!");
  const std::string blob = "written/refused.bin";
  const Location bad = open_location(url(""), {{"connection_string", az_->connection_string(wrong)}});
  const std::string data(100, 'x');
  const ByteView bytes(reinterpret_cast<const std::byte*>(data.data()), data.size());
  const std::string msg = message_of<AuthError>([&] { bad.store->put(blob, bytes); });
  EXPECT_NE(msg.find("HTTP 403"), std::string::npos) << msg;
  EXPECT_NE(msg.find("writing"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(wrong), std::string::npos) << msg;
  const Location good = open_location(url(""), {{"connection_string", az_->connection_string()}});
  EXPECT_FALSE(good.store->get(blob).has_value());
  EXPECT_THROW(bad.store->remove(blob), AuthError);
}

// A service SAS for the test container (read + list), signed like Azure's SDKs do.
std::string container_sas(const std::string& permissions) {
  const std::string version(azure::kApiVersion), expiry = "2099-01-01T00:00:00Z";
  const std::string to_sign = permissions + "\n\n" + expiry + "\n/blob/" + AzuriteServer::kAccount + "/" + kContainer +
                              "\n\n\n\n" + version + "\nc\n\n\n\n\n\n\n";
  const std::string sig = lazycube::base64_encode(
      azure::hmac_sha256(azure::base64_decode(AzuriteServer::kKey, "key"), to_sign));
  return "sv=" + version + "&sr=c&sp=" + permissions + "&se=" + http::percent_encode(expiry, false) +
         "&sig=" + http::percent_encode(sig, false);
}

TEST_F(Azure, SasTokenReadsAndLists) {
  const std::string sas = container_sas("rl");
  const StoreOptions o = {{"sas_token", sas},
                          {"connection_string", "AccountName=lazycubeacct;BlobEndpoint=" + az_->endpoint()}};
  azure_same_as_local(url("era5_v3.zarr"), kAzureSource + "/data/era5_sample_v3.zarr", o);
  StoreOptions paged = o;
  paged["list_page_size"] = "4";
  auto store = cloud::make_azure_store(parse_url_scheme(url("era5_v3.zarr")), paged);
  EXPECT_EQ(store->list(""), make_file_store(kAzureSource + "/data/era5_sample_v3.zarr")->list(""));
  EXPECT_EQ(text(store->get("zarr.json", ByteRange::suffix(2))).size(), 2u);
  // Read-only: a SAS without 'l' cannot list, and the refusal does not show the signature.
  const std::string read_only = container_sas("r");
  auto no_list = cloud::make_azure_store(parse_url_scheme(url("era5_v3.zarr")),
                                         {{"sas_token", read_only}, {"connection_string", o.at("connection_string")}});
  const std::string msg = message_of<AuthError>([&] { no_list->list(""); });
  EXPECT_NE(msg.find("HTTP 403"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(read_only.substr(read_only.find("sig=") + 4)), std::string::npos) << msg;
}

TEST_F(Azure, ForgedSasIsRefusedWithoutTheSignature) {
  const std::string sig = "c2lnbmF0dXJlLXRoYXQtaXMtbm90LXZhbGlk";
  const std::string sas = "sv=2021-08-06&ss=b&srt=sco&sp=rl&se=2099-01-01T00:00:00Z&sig=" + sig;
  OpenOptions o;
  o.storage_options = {{"sas_token", "?" + sas}, {"connection_string", "AccountName=lazycubeacct;BlobEndpoint=" + az_->endpoint()}};
  const std::string msg = message_of<AuthError>([&] { open(url("era5_v2.zarr"), o); });
  EXPECT_NE(msg.find("HTTP 403"), std::string::npos) << msg;
  EXPECT_NE(msg.find("SAS token"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(sig), std::string::npos) << msg;
  // Anonymous access to a private container is refused too.
  o.storage_options = {{"anon", "true"}, {"connection_string", az_->connection_string()}};
  EXPECT_THROW(open(url("era5_v2.zarr"), o), StoreError);
}

// The SharedKey string-to-sign of a ranged GET with a query, in the documented layout.
TEST(AzureSharedKey, CanonicalStringLayout) {
  const azure::SharedKeySigner signer("acct", lazycube::base64_encode("key"));
  const std::vector<std::string> headers = {"x-ms-version: 2021-08-06", "Range: bytes=0-9",
                                            "X-MS-Date: Wed, 25 Nov 2026 03:07:39 GMT"};
  EXPECT_EQ(signer.string_to_sign("GET", "http://127.0.0.1:1/acct/c?restype=container&comp=list&prefix=a%2Fb", headers),
            "GET\n\n\n\n\n\n\n\n\n\n\nbytes=0-9\n"
            "x-ms-date:Wed, 25 Nov 2026 03:07:39 GMT\nx-ms-version:2021-08-06\n"
            "/acct/acct/c\ncomp:list\nprefix:a/b\nrestype:container");
  EXPECT_EQ(azure::base64_decode(lazycube::base64_encode("any bytes\x01\xff"), "x"), "any bytes\x01\xff");
  EXPECT_THROW(azure::base64_decode("abc", "x"), StoreError);
  const auto conn = azure::parse_connection_string("AccountName=a;AccountKey=k==;;BlobEndpoint=http://h/a;");
  EXPECT_EQ(conn.at("AccountKey"), "k==");
  EXPECT_EQ(conn.at("BlobEndpoint"), "http://h/a");
  EXPECT_THROW(azure::parse_connection_string("AccountName=a;secretwithoutequals"), StoreError);
  const std::string msg = message_of<StoreError>([] { azure::parse_connection_string("x=1;secretwithoutequals"); });
  EXPECT_EQ(msg.find("secretwithoutequals"), std::string::npos) << msg;
}

TEST(AzureListing, PageParsing) {
  const auto page = azure::parse_list_page(
      "<?xml version=\"1.0\"?><EnumerationResults ServiceEndpoint=\"x\" ContainerName=\"c\"><Prefix>p/</Prefix>"
      "<Marker>m0</Marker><MaxResults>2</MaxResults><Delimiter>/</Delimiter><Blobs>"
      "<Blob><Name>p/a&amp;b</Name><Properties><Content-Length>3</Content-Length></Properties></Blob>"
      "<BlobPrefix><Name>p/sub/</Name></BlobPrefix></Blobs><NextMarker>m1</NextMarker></EnumerationResults>");
  EXPECT_EQ(page.keys, std::vector<std::string>{"p/a&b"});
  EXPECT_EQ(page.prefixes, std::vector<std::string>{"p/sub/"});
  EXPECT_TRUE(page.truncated);
  EXPECT_EQ(page.next_token, "m1");
  EXPECT_FALSE(azure::parse_list_page("<EnumerationResults><Blobs/><NextMarker/></EnumerationResults>").truncated);
  EXPECT_THROW(azure::parse_list_page("<html>"), StoreError);
}

// NetCDF through GDAL's /vsiaz/ with the account and Azurite endpoint mapped: anonymously, from a
// public container. (GDAL 3.6 signs SharedKey requests without the endpoint's path, which
// path-style Azurite refuses; real accounts are host-style. SAS over /vsiaz/ is read in
// tests/python/test_azure.py, which makes SAS tokens with azure-storage-blob.)
TEST_F(Azure, NetcdfOverVsiazEqualsLocal) {
  TempDir src;
  std::string skip;
  if (lazycube::test::make_netcdf4_fixture(src.path(), skip).empty()) GTEST_SKIP() << skip;
  az_->create_container("lazycube-public", true);
  az_->upload("lazycube-public", "gdal/fixture_nc4.nc", lazycube::test::read_file(src.path() / "fixture_nc4.nc"));
  const StoreOptions anon = {{"anon", "true"},
                             {"connection_string", "AccountName=lazycubeacct;BlobEndpoint=" + az_->endpoint()}};
  const auto loc = netcdf::gdal_location("az://lazycube-public/gdal/fixture_nc4.nc", anon);
  EXPECT_EQ(loc.path, "/vsiaz/lazycube-public/gdal/fixture_nc4.nc");
  OpenOptions o;
  o.storage_options = anon;
  const Dataset local = open((src.path() / "fixture_nc4.nc").string());
  const Dataset remote = open("az://lazycube-public/gdal/fixture_nc4.nc", o);
  ASSERT_EQ(local.variable_names(), remote.variable_names());
  for (const auto& name : local.variable_names()) {
    const NDArray a = local[name].read(), b = remote[name].read();
    ASSERT_EQ(a.data.size(), b.data.size()) << name;
    EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size()), 0) << name;
  }
  // Our own store reads the public container anonymously too.
  EXPECT_EQ(text(open_location("az://lazycube-public/gdal", anon).store->get("fixture_nc4.nc")),
            lazycube::test::read_file(src.path() / "fixture_nc4.nc"));
}

// A kerchunk reference set whose targets are az:// blobs: the reference store opens them through
// the registry with the same storage options.
TEST_F(Azure, KerchunkTargetsOnAzure) {
  TempDir dir;
  lazycube::test::write_file(dir.path() / "refs.json",
                             R"({"version": 1, "refs": {"greeting": ["az://lazycube/objects/hello.txt", 7, 5],
                                 "whole": ["az://lazycube/objects/hello.txt"]}})");
  StoreOptions o = conn();
  o["allowed_prefixes"] = "az://lazycube/objects/";
  const Location loc = refs::open_references((dir.path() / "refs.json").string(), o);
  EXPECT_EQ(text(loc.store->get("greeting")), "azure");
  EXPECT_EQ(text(loc.store->get("whole")), "hello, azure");
  // Without the prefix allowed, the target is refused.
  const Location strict = refs::open_references((dir.path() / "refs.json").string(), conn());
  EXPECT_THROW(strict.store->get("greeting"), StoreError);
}

// The registry: one entry per scheme, messages generated from it.
TEST(BackendRegistry, SchemesAreRegisteredOnce) {
  std::set<std::string> seen;
  for (const auto& b : backend_registry().backends())
    for (const auto& s : b.schemes) EXPECT_TRUE(seen.insert(s).second) << "scheme registered twice: " << s;
  for (const char* s : {"file", "http", "https", "s3", "gs", "gcs", "az", "abfs", "abfss", "reference"})
    EXPECT_TRUE(seen.count(s)) << s;
  const std::string msg = message_of<StoreError>([] { open_location("ftp://h/x"); });
  for (const char* s : {"'ftp'", "s3://", "gs://", "az://", "abfs://", "reference://"})
    EXPECT_NE(msg.find(s), std::string::npos) << msg;
}

}  // namespace
