// The missing chunks policy (format option "missing_chunks"): "fill" (default) reads an absent
// chunk or shard as the fill value; "error" is a MissingDataError naming the chunk and the
// array, on local stores and over HTTP (the batched fetch path), plain and sharded, and through
// the process-wide chunk cache (a fill chunk cached for one policy never answers the other).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "nginx_server.hpp"
#include "test_support.hpp"
#include "zarr_test_writer.hpp"

namespace lazycube {
namespace {

using namespace lazycube::test;
using nlohmann::json;

OpenOptions missing_policy(const std::string& policy) {
  OpenOptions o;
  o.format_options = {{"missing_chunks", policy}};
  return o;
}

// A group with `t` (y, x) = (4, 6) int32 in chunks (2, 3), chunk (1, 0) absent, fill -7; and
// `s`, the same values sharded (shards (2, 6) of inner chunks (2, 3)), shard (1, 0) absent.
void write_store(const fs::path& root) {
  std::vector<std::int32_t> values(24);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::int32_t>(i);
  json t = v3_array_json({4, 6}, {2, 3}, "int32", json::array({bytes_codec()}), -7);
  t["dimension_names"] = {"y", "x"};
  write_v3_array(root / "t", t, values.data(), 4, [](const std::vector<std::uint64_t>& c) { return c == std::vector<std::uint64_t>{1, 0}; });
  json s = v3_array_json({4, 6}, {2, 6}, "int32", json::array({sharding_codec({2, 3}, json::array({bytes_codec()}))}), -7);
  s["dimension_names"] = {"y", "x"};
  write_v3_array(root / "s", s, values.data(), 4, [](const std::vector<std::uint64_t>& c) { return c[0] == 1; });
  // Consolidated, so that HTTP (which cannot list) finds the arrays.
  const json group = {{"zarr_format", 3},
                      {"node_type", "group"},
                      {"consolidated_metadata", {{"kind", "inline"}, {"must_understand", false}, {"metadata", {{"t", t}, {"s", s}}}}}};
  write_file(root / "zarr.json", group.dump());
}

std::vector<std::int32_t> ints(const NDArray& a) {
  const auto v = a.values<std::int32_t>();
  return {v.begin(), v.end()};
}

void expect_policy(const std::string& url) {
  const Dataset fill = open(url), error = open(url, missing_policy("error"));
  // "fill": the absent chunk reads as -7 (rows 2-3, columns 0-2 of t; rows 2-3 of s).
  const auto t = ints(fill["t"].read_raw());
  EXPECT_EQ(t[12], -7);
  EXPECT_EQ(t[15], 15);
  EXPECT_EQ(ints(fill["s"].read_raw())[12], -7);
  // "error": a read touching the absent chunk names it; one beside it reads.
  const std::string msg = message_of<MissingDataError>([&] { error["t"].read_raw(); });
  EXPECT_NE(msg.find("chunk 't/c/1/0'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing_chunks"), std::string::npos) << msg;
  EXPECT_NE(msg.find("/t"), std::string::npos) << msg;
  const NDArray right = error["t"].isel({{"y", Indexer(Slice{2, 4, 1})}, {"x", Indexer(Slice{3, 6, 1})}}).read_raw();
  EXPECT_EQ(ints(right), (std::vector<std::int32_t>{15, 16, 17, 21, 22, 23}));
  const std::string shard = message_of<MissingDataError>([&] { error["s"].isel({{"y", Indexer(Slice{3, 4, 1})}}).read_raw(); });
  EXPECT_NE(shard.find("shard 's/c/1/0'"), std::string::npos) << shard;
  EXPECT_EQ(ints(error["s"].isel({{"y", Indexer(Slice{0, 2, 1})}}).read_raw())[7], 7);
  // The fill chunk read above (now in the chunk cache) does not answer the "error" dataset.
  EXPECT_THROW(error["t"].read_raw(), MissingDataError);
}

TEST(MissingChunks, LocalStoreFillOrError) {
  TempDir tmp;
  write_store(tmp.path() / "m.zarr");
  expect_policy((tmp.path() / "m.zarr").string());
}

TEST(MissingChunks, OverHttpFillOrError) {
  LAZYCUBE_REQUIRE_NGINX();
  TempDir www;
  write_store(www.path() / "m.zarr");
  NginxServer server(www.path());
  expect_policy(server.url() + "/m.zarr");
}

TEST(MissingChunks, BadValuesAreUsageErrors) {
  TempDir tmp;
  write_store(tmp.path() / "m.zarr");
  const std::string bad = message_of<UsageError>([&] { open((tmp.path() / "m.zarr").string(), missing_policy("skip")); });
  EXPECT_NE(bad.find("'missing_chunks'"), std::string::npos) << bad;
  EXPECT_NE(bad.find("\"skip\""), std::string::npos) << bad;
  // A format without chunks of its own (GDAL's NetCDF) refuses it: tests/python/test_missing_chunks.py.
}

}  // namespace
}  // namespace lazycube
