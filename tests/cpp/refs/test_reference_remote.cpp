// Kerchunk references served over HTTP (nginx) and S3 (moto): chunk reads go through the
// target stores, batched and coalesced (fewer requests than chunks); hostile remote reference
// sets (file:// and absolute local targets, other hosts and buckets, ../ and sibling-prefix
// escapes) are refused; allowed_prefixes widens the policy.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/refs/references.hpp"
#include "moto_fixture.hpp"
#include "nginx_server.hpp"
#include "read_helpers.hpp"

using namespace lazycube;
using namespace lazycube::test;
using nlohmann::json;

namespace {

constexpr int kChunks = 32, kPerChunk = 16;

// data.bin (kChunks chunks of kPerChunk float32 values, back to back after an 8-byte header)
// and a reference set whose chunks point at `target`.
std::vector<float> write_cube(const fs::path& dir, const std::string& target, const std::string& refs_name = "refs.json") {
  std::vector<float> x(kChunks * kPerChunk);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.5f - 3.f;
  std::string bytes(8, 'H');
  bytes.append(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float));
  fs::create_directories(dir);
  write_file(dir / "data.bin", bytes);
  json refs = {{".zgroup", R"({"zarr_format": 2})"},
               {"x/.zarray", json({{"chunks", {kPerChunk}}, {"compressor", nullptr}, {"dtype", "<f4"},
                                   {"fill_value", 0.0}, {"filters", nullptr}, {"order", "C"},
                                   {"shape", {kChunks * kPerChunk}}, {"zarr_format", 2}})
                                 .dump()},
               {"x/.zattrs", R"({"_ARRAY_DIMENSIONS": ["x"]})"}};
  for (int c = 0; c < kChunks; ++c)
    refs["x/" + std::to_string(c)] = json::array({target, 8 + c * kPerChunk * 4, kPerChunk * 4});
  write_file(dir / refs_name, json({{"version", 1}, {"refs", refs}}).dump());
  return x;
}

}  // namespace

TEST(ReferenceHttp, ReadsThroughNginxWithCoalescedRequests) {
  LAZYCUBE_REQUIRE_NGINX();
  TempDir www;
  const auto x = write_cube(www.path() / "cube", "data.bin");
  NginxServer server(www.path());
  const std::string url = server.url() + "/cube/refs.json";
  EXPECT_EQ(read_x(url, {}), x);
  EXPECT_EQ(read_x("reference://" + url, {{"retries", "2"}}), x);  // options reach the targets
  // Stores that are not reference sets ignore allowed_prefixes (an HTTP store would refuse an
  // unknown option).
  EXPECT_NO_THROW(open_location(server.url() + "/cube", {{"allowed_prefixes", "/x"}}));

  auto requests = [&](const StoreOptions& options) {
    const Location loc = refs::open_references(url, options);
    EXPECT_TRUE(loc.store->prefers_batches());
    const Dataset ds = open(loc);
    const NDArray a = ds["x"].read_raw();
    auto v = a.values<float>();
    EXPECT_EQ(std::vector<float>(v.begin(), v.end()), x);
    return loc.store->stats().requests;
  };
  const std::uint64_t merged = requests({});
  const std::uint64_t apart = requests({{"coalesce_max", "0"}});
  EXPECT_EQ(apart, static_cast<std::uint64_t>(kChunks));  // one range request per chunk
  EXPECT_LT(merged, apart) << "adjacent chunk ranges were not coalesced";
  EXPECT_GE(merged, 1u);
}

TEST(ReferenceHttp, HostileRemoteReferencesAreRefused) {
  LAZYCUBE_REQUIRE_NGINX();
  TempDir www;
  NginxServer server(www.path());
  const std::string base = server.url();
  write_cube(www.path() / "cubex", "data.bin");
  const auto x = write_cube(www.path() / "other", "data.bin");
  const std::vector<std::pair<std::string, std::string>> hostile = {
      {"file:///etc/passwd", "'/etc/passwd'"},
      {"/etc/passwd", "'/etc/passwd'"},
      {"../other/data.bin", base + "/other/data.bin"},
      {"%2e%2e/other/data.bin", base + "/other/data.bin"},
      {base + "/cubex/data.bin", base + "/cubex/data.bin"},  // a sibling prefix of /cube
      {"http://127.0.0.2:" + base.substr(base.rfind(':') + 1) + "/cube/data.bin", "http://127.0.0.2:"},
      {"s3://bucket/cube/data.bin", "'s3://bucket/cube/data.bin'"},
  };
  int n = 0;
  for (const auto& [target, shown] : hostile) {
    const std::string name = "evil" + std::to_string(n++) + ".json";
    write_cube(www.path() / "cube", target, name);
    const std::string m = refused(base + "/cube/" + name, {});
    EXPECT_NE(m.find("refused"), std::string::npos) << target << ": " << m;
    EXPECT_NE(m.find(shown), std::string::npos) << target << ": " << m;
    EXPECT_NE(m.find("allowed prefixes: " + base + "/cube"), std::string::npos) << m;
  }
  // Widened by allowed_prefixes (and the option is not passed on to the HTTP targets).
  write_cube(www.path() / "cube", "../other/data.bin", "widened.json");
  EXPECT_EQ(read_x(base + "/cube/widened.json", {{"allowed_prefixes", base + "/other"}}), x);
}

TEST(ReferenceS3, S3ReferenceFileAndTargets) {
  std::string reason;
  MotoServer* moto = MotoServer::instance(reason);
  if (!moto) GTEST_SKIP() << reason;
  TempDir src;
  const std::string bucket = MotoServer::kBucket;
  const auto x = write_cube(src.path(), "data.bin");
  write_cube(src.path(), "s3://" + bucket + "/refs-s3/data.bin", "absolute.json");
  write_cube(src.path(), "s3://other-bucket/refs-s3/data.bin", "other_bucket.json");
  write_cube(src.path(), "s3://" + bucket + "/refs-s3-sibling/data.bin", "other_prefix.json");
  write_cube(src.path(), "gs://" + bucket + "/refs-s3/data.bin", "other_scheme.json");
  moto->upload(src.str(), "refs-s3");
  const StoreOptions options{{"anon", "true"}, {"endpoint_url", moto->endpoint}};
  const std::string root = "s3://" + bucket + "/refs-s3/";
  EXPECT_EQ(read_x(root + "refs.json", options), x);
  EXPECT_EQ(read_x("reference://" + root + "absolute.json", options), x);
  for (const char* name : {"other_bucket.json", "other_prefix.json", "other_scheme.json"}) {
    const std::string m = refused(root + name, options);
    EXPECT_NE(m.find("refused"), std::string::npos) << name << ": " << m;
    EXPECT_NE(m.find("allowed prefixes: s3://" + bucket + "/refs-s3"), std::string::npos) << m;
  }
  StoreOptions widened = options;
  widened["allowed_prefixes"] = "s3://" + bucket + "/refs-s3-sibling";
  moto->upload(src.str(), "refs-s3-sibling");
  EXPECT_EQ(read_x(root + "other_prefix.json", widened), x);
}
