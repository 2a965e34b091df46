// The persistent chunk cache under an Icechunk repository served by nginx: native chunks
// (chunks/<id>, named by their content) are cached without asking their version, and a second
// open reads them without any request. (Apart from test_disk_cache.cpp, which the TSan pass
// builds without the FlatBuffers headers the repository writer needs.)
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "icechunk_test_writer.hpp"
#include "lazycube/icechunk/repository.hpp"
#include "lazycube/store/store.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "nginx_server.hpp"

using namespace lazycube;
using namespace lazycube::test;

namespace {

std::size_t count_of(const std::string& log, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = 0; (at = log.find(what, at)) != std::string::npos; ++at) ++n;
  return n;
}

}  // namespace

TEST(IcechunkDiskCache, KeepsIcechunkChunksWithoutAskingTheirVersion) {
  LAZYCUBE_REQUIRE_NGINX();
  namespace w = icechunk_writer;
  TempDir www, cache;
  const std::string json = nlohmann::json{{"zarr_format", 3}, {"node_type", "array"}, {"shape", {8}}, {"data_type", "uint8"},
                                          {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {2}}}}}},
                                          {"chunk_key_encoding", {{"name", "default"}}}, {"fill_value", 0},
                                          {"codecs", {{{"name", "bytes"}}}}}
                               .dump();
  w::ManifestSpec m{{{0, 4}}, {}, ""};
  for (std::uint32_t c = 0; c < 4; ++c)
    m.refs.push_back({w::Ref::Kind::Native, {c}, std::string{char(10 * c), char(10 * c + 1)}});
  w::WriteOptions options;
  options.chunk_per_file = true;
  w::write_repository(www.path() / "repo", {{"/", R"({"zarr_format": 3, "node_type": "group"})"}, {"/a", json, true, {m}}},
                      options);
  NginxServer server(www.path());
  auto read = [&] {
    auto repo = icechunk::Repository::open(open_location(server.url() + "/repo", {{"cache_dir", cache.path().string()}}));
    auto store = icechunk::make_icechunk_store(repo, {});
    const auto result = zarr::Hierarchy::open(Location{store, "a"}).array("")->read_all();
    const auto values = result.values<std::uint8_t>();
    return std::vector<std::uint8_t>(values.begin(), values.end());
  };
  const std::vector<std::uint8_t> expected = {0, 1, 10, 11, 20, 21, 30, 31};
  EXPECT_EQ(read(), expected);
  const std::string first = server.settled_access_log();
  EXPECT_EQ(count_of(first, "\"HEAD /repo/chunks/"), 0u) << first;
  EXPECT_EQ(count_of(first, "\"GET /repo/chunks/"), 4u);
  EXPECT_EQ(read(), expected);
  const std::string second = server.settled_access_log();
  EXPECT_EQ(count_of(second, "\"GET /repo/chunks/"), 4u) << "the second open fetched chunks again";
  EXPECT_EQ(count_of(second, "\"HEAD /repo/chunks/"), 0u);
}
