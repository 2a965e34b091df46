// Hostile servers (tests/servers/hostile_server.py on 127.0.0.1): every response is bounded by
// what was asked (an endless body, a lying Content-Length), and redirect hops are checked as the
// first URL was (kerchunk allowed_prefixes, http(s) only, a hop limit) — issue 32.
#include <gtest/gtest.h>

#include <chrono>

#include <nlohmann/json.hpp>

#include "icechunk_test_writer.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/icechunk/repository.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "lazycube/store/store.hpp"
#include "hostile_server.hpp"
#include "test_support.hpp"
#include "read_helpers.hpp"

using namespace lazycube;
using namespace lazycube::test;
using nlohmann::json;

namespace {

// A reference set in `dir` whose one chunk (16 float32 values) lies at `target`.
void write_refs(const fs::path& dir, const std::string& target, const std::string& name) {
  json refs = {{".zgroup", R"({"zarr_format": 2})"},
               {"x/.zarray", json({{"chunks", {16}}, {"compressor", nullptr}, {"dtype", "<f4"}, {"fill_value", 0.0},
                                   {"filters", nullptr}, {"order", "C"}, {"shape", {16}}, {"zarr_format", 2}})
                                 .dump()},
               {"x/.zattrs", R"({"_ARRAY_DIMENSIONS": ["x"]})"},
               {"x/0", json::array({target, 0, 64})}};
  write_file(dir / name, json({{"version", 1}, {"refs", refs}}).dump());
}

}  // namespace

TEST(HttpHostile, EndlessBodyToARangeReadStopsAtTheRange) {
  TempDir root;
  HostileServer server(root.path());
  const auto t0 = std::chrono::steady_clock::now();
  const Location loc = open_location(server.url() + "/endless", {{"retries", "0"}});
  const std::string m = message_of<StoreError>([&] { loc.store->get("chunk", ByteRange::range(0, 1024)); });
  EXPECT_LT(seconds_since(t0), 10.0);
  EXPECT_NE(m.find("/endless/chunk"), std::string::npos) << m;
  EXPECT_NE(m.find("1024 bytes asked for"), std::string::npos) << m;
  EXPECT_NE(m.find("bytes received"), std::string::npos) << m;
}

TEST(HttpHostile, EndlessWholeObjectReadStopsAtMaxResponseBytes) {
  TempDir root;
  HostileServer server(root.path());
  const Location loc = open_location(server.url() + "/endless", {{"retries", "0"}, {"max_response_bytes", "1048576"}});
  const std::string m = message_of<StoreError>([&] { loc.store->get("repo"); });
  EXPECT_NE(m.find("1048576 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("max_response_bytes"), std::string::npos) << m;
  // A bad value of the option is an error naming it.
  const std::string bad = message_of<Error>([&] { open_location(server.url() + "/endless", {{"max_response_bytes", "lots"}}); });
  EXPECT_NE(bad.find("max_response_bytes"), std::string::npos) << bad;
}

TEST(HttpHostile, LyingContentLengthIsRefusedBeforeTheBody) {
  TempDir root;
  HostileServer server(root.path());
  const auto t0 = std::chrono::steady_clock::now();
  const Location loc = open_location(server.url() + "/liar", {{"retries", "0"}});
  const std::string m = message_of<StoreError>([&] { loc.store->get("chunk"); });
  EXPECT_LT(seconds_since(t0), 10.0);
  EXPECT_NE(m.find("1000000000000000 bytes (Content-Length)"), std::string::npos) << m;
  EXPECT_NE(m.find("0 bytes received"), std::string::npos) << m;
}

TEST(HttpHostile, RedirectOutsideTheAllowedPrefixesIsRefused) {
  TempDir root, secrets;
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i) + 0.25f;
  write_file(secrets.path() / "data.bin", x.data(), x.size() * sizeof(float));
  HostileServer server(root.path());
  HostileServer internal(secrets.path());  // "another service" on another port
  // The reference's target lies under its own directory on `server`, which redirects it to
  // the internal service.
  const std::string hop = "/redirect/" + std::to_string(internal.port()) + "/files/data.bin";
  fs::create_directories(root.path() / "redirect" / std::to_string(internal.port()) / "files");
  write_refs(root.path(), server.url() + hop, "refs.json");
  const std::string refs = server.url() + "/files/refs.json";
  const std::string m = message_of<StoreError>([&] {
    read_x(refs, {{"allowed_prefixes", server.url() + "/redirect/"}, {"retries", "0"}});
  });
  EXPECT_NE(m.find("redirect to " + internal.url() + "/files/data.bin refused"), std::string::npos) << m;
  EXPECT_NE(m.find(server.url() + hop), std::string::npos) << m;  // the original URL
  EXPECT_NE(m.find("allowed prefixes"), std::string::npos) << m;
  // Allowed when the target's prefix is allowed too.
  EXPECT_EQ(read_x(refs, {{"allowed_prefixes", server.url() + "/redirect/ " + internal.url() + "/files/"}}), x);
}

TEST(HttpHostile, RedirectToFileAndEndlessRedirectsAreRefused) {
  TempDir root;
  HostileServer server(root.path());
  const Location loc = open_location(server.url(), {{"retries", "0"}});
  const std::string file = message_of<StoreError>([&] { loc.store->get("redirect-file/x"); });
  EXPECT_NE(file.find("only http and https"), std::string::npos) << file;
  const std::string loop = message_of<StoreError>([&] { loc.store->get("loop/0"); });
  EXPECT_NE(loop.find("more than 5 redirects"), std::string::npos) << loop;
  // An allowed redirect still reads (plain HTTP stores follow http(s) hops).
  std::vector<float> x(4, 1.5f);
  write_file(root.path() / "a.bin", x.data(), 16);
  const auto got = loc.store->get("redirect/" + std::to_string(server.port()) + "/files/a.bin");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->size(), 16u);
}

TEST(HttpHostile, IcechunkVirtualChunkRedirectOutsideTheContainersIsRefused) {
  namespace w = lazycube::test::icechunk_writer;
  TempDir root, internal_root, repo;
  const std::vector<std::int32_t> values{1, 2, 3, 4};
  write_file(internal_root.path() / "chunk.bin", values.data(), 16);
  HostileServer server(root.path());
  HostileServer internal(internal_root.path());
  // The virtual chunk lies on `server`, which redirects it to `internal` (another service).
  const std::string chunk_url = server.url() + "/redirect/" + std::to_string(internal.port()) + "/files/chunk.bin";
  w::ManifestSpec m{{{0, 1}}, {}, ""};
  m.refs.push_back({w::Ref::Kind::Virtual, {0}, "", chunk_url, 0, 16});
  const std::string array = nlohmann::json{{"zarr_format", 3}, {"node_type", "array"}, {"shape", {4}}, {"data_type", "int32"},
                                           {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {4}}}}}},
                                           {"chunk_key_encoding", {{"name", "default"}}}, {"fill_value", -1},
                                           {"codecs", {{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}}}}
                                .dump();
  w::write_repository(repo.path(), {{"/", R"({"zarr_format": 3, "node_type": "group"})"}, {"/v", array, true, {m}}});
  const auto read = [&](const std::map<std::string, StoreOptions>& containers) {
    icechunk::IcechunkOptions options;
    options.virtual_chunk_containers = containers;
    auto store = icechunk::make_icechunk_store(icechunk::Repository::open(open_location(repo.str())), options);
    const NDArray a = zarr::Hierarchy::open(Location{store, "v"}).array("")->read_all();
    auto v = a.values<std::int32_t>();
    return std::vector<std::int32_t>(v.begin(), v.end());
  };
  const std::string m1 = message_of<StoreError>([&] { read({{server.url() + "/", {{"retries", "0"}}}}); });
  EXPECT_NE(m1.find("redirect to " + internal.url() + "/files/chunk.bin refused"), std::string::npos) << m1;
  EXPECT_NE(m1.find("outside the authorised virtual chunk containers"), std::string::npos) << m1;
  EXPECT_EQ(read({{server.url() + "/", {}}, {internal.url() + "/files/", {}}}), values);
}
