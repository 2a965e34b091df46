// Chunk key encodings beyond default/v2 (zarr-extensions: fanout, suffix, prefix): keys as the
// registry's own examples spell them, stores written by hand at those keys read through Zarr and
// through an Icechunk repository, and bad configurations refused by name.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "icechunk_test_writer.hpp"
#include "lazycube/error.hpp"
#include "lazycube/icechunk/repository.hpp"
#include "lazycube/zarr/chunk_key_encoding.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "test_support.hpp"
#include "zarr_test_writer.hpp"

namespace lazycube {
namespace {

using namespace lazycube::test;
using nlohmann::json;
using zarr::ChunkKeyEncoding;

ChunkKeyEncoding cke_of(const json& j) { return ChunkKeyEncoding::parse(j, "arr"); }

TEST(ChunkKeyEncodings, FanoutAsTheRegistryExampleSpellsIt) {
  const auto e = cke_of({{"name", "fanout"}, {"configuration", {{"max_children", 101}}}});
  const std::vector<std::pair<std::vector<std::uint64_t>, std::string>> cases = {
      {{}, "c"}, {{123}, "d0/1/23/c"}, {{1234, 5, 67890}, "d0/12/34/d1/5/d2/6/78/90/c"}, {{0, 100}, "d0/0/d1/1/0/c"}};
  for (const auto& [index, key] : cases) {
    EXPECT_EQ(e.key(index), key);
    const auto back = e.index_of(key, index.size());
    ASSERT_TRUE(back) << key;
    EXPECT_EQ(*back, index) << key;
  }
  // max_children defaults to 1001 (base 1000).
  EXPECT_EQ(cke_of({{"name", "fanout"}}).key(std::vector<std::uint64_t>{1234567}), "d0/1/234/567/c");
  // Not this encoding's keys: a leading zero digit, a digit >= the base, a missing or misplaced
  // dimension marker, another rank, the chunk marker missing.
  for (const char* k : {"d0/01/23/c", "d0/100/c", "d1/5/c", "d0/1/d0/2/c", "d0/1/23", "0/1/23/c", "d0/c", "zarr.json"})
    EXPECT_FALSE(e.index_of(k, 1)) << k;
  EXPECT_FALSE(e.index_of("d0/1/23/c", 2));
  EXPECT_EQ(cke_of(e.to_json()).key(std::vector<std::uint64_t>{1234, 5}), e.key(std::vector<std::uint64_t>{1234, 5}));
}

TEST(ChunkKeyEncodings, SuffixAndPrefixWrapABaseEncoding) {
  const auto tiff = cke_of({{"name", "suffix"}, {"configuration", {{"suffix", ".tiff"}, {"base_encoding", {{"name", "default"}}}}}});
  EXPECT_EQ(tiff.key(std::vector<std::uint64_t>{1, 2}), "c/1/2.tiff");
  EXPECT_EQ(*tiff.index_of("c/1/2.tiff", 2), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_FALSE(tiff.index_of("c/1/2", 2));
  // The proposal's first example spells the member base-encoding.
  const auto zip = cke_of({{"name", "suffix"}, {"configuration", {{"suffix", ".shard.zip"}, {"base-encoding", {{"name", "v2"}}}}}});
  EXPECT_EQ(zip.key(std::vector<std::uint64_t>{3, 4}), "3.4.shard.zip");
  // prefix, with its base given as a bare name as in the registry's example.
  const auto x = cke_of({{"name", "prefix"}, {"configuration", {{"prefix", "x/"}, {"base_encoding", "v2"}}}});
  EXPECT_EQ(x.key(std::vector<std::uint64_t>{0, 0, 0}), "x/0.0.0");
  EXPECT_EQ(*x.index_of("x/7.0.1", 3), (std::vector<std::uint64_t>{7, 0, 1}));
  EXPECT_FALSE(x.index_of("y/7.0.1", 3));
  // Nested: a suffix over a fanout.
  const auto nested = cke_of({{"name", "suffix"},
                              {"configuration", {{"suffix", ".bin"}, {"base_encoding", {{"name", "fanout"}, {"configuration", {{"max_children", 11}}}}}}}});
  EXPECT_EQ(nested.key(std::vector<std::uint64_t>{25}), "d0/2/5/c.bin");
  EXPECT_EQ(*nested.index_of("d0/2/5/c.bin", 1), (std::vector<std::uint64_t>{25}));
  EXPECT_EQ(cke_of(nested.to_json()).key(std::vector<std::uint64_t>{25}), "d0/2/5/c.bin");
}

TEST(ChunkKeyEncodings, BadConfigurationsAreRefusedByName) {
  const std::vector<std::pair<json, std::string>> bad = {
      {{{"name", "fanout"}, {"configuration", {{"max_children", 3}}}}, "max_children"},
      {{{"name", "fanout"}, {"configuration", {{"max_children", "10"}}}}, "max_children"},
      {{{"name", "suffix"}, {"configuration", {{"base_encoding", "default"}}}}, "'suffix'"},
      {{{"name", "suffix"}, {"configuration", {{"suffix", ".x"}}}}, "base_encoding"},
      {{{"name", "suffix"}, {"configuration", {{"suffix", "/../../etc"}, {"base_encoding", "default"}}}}, "'..'"},
      {{{"name", "prefix"}, {"configuration", {{"prefix", "/abs/"}, {"base_encoding", "default"}}}}, "begins with '/'"},
      {{{"name", "prefix"}, {"configuration", {{"prefix", "a/zarr.json/"}, {"base_encoding", "default"}}}}, "zarr.json"},
      {{{"name", "prefix"}, {"configuration", {{"prefix", ""}, {"base_encoding", "default"}}}}, "is empty"},
      {{{"name", "prefix"}, {"configuration", {{"prefix", "p/"}, {"base_encoding", "hilbert"}}}}, "'hilbert'"},
      {{{"name", "default"}, {"configuration", {{"separator", "-"}}}}, "separator"},
      {{{"name", "morton"}}, "'morton'"},
      {{{"configuration", json::object()}}, "'name'"},
      {json(7), "must be an object"},
  };
  for (const auto& entry : bad) {
    const auto& [j, expect] = entry;
    const std::string msg = message_of<MetadataError>([&] { cke_of(entry.first); });
    EXPECT_NE(msg.find(expect), std::string::npos) << j.dump() << ": " << msg;
    EXPECT_NE(msg.find("arr"), std::string::npos) << msg;
  }
}

// Values of a 1-d int32 array of 8 elements in chunks of 1, chunk i holding 10 * i; the chunks
// are written by hand at `keys[i]` (empty: absent, read as the fill value -1).
std::vector<std::int32_t> read_hand_written(const json& encoding, const std::vector<std::string>& keys) {
  TempDir tmp;
  json meta = v3_array_json({8}, {1}, "int32", json::array({bytes_codec()}), -1);
  meta["chunk_key_encoding"] = encoding;
  write_file(tmp.path() / "zarr.json", meta.dump());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].empty()) continue;
    const std::int32_t v = static_cast<std::int32_t>(10 * i);
    write_file(tmp.path() / keys[i], &v, 4);
  }
  const auto r = zarr::Hierarchy::open(open_location(tmp.path().string())).array("")->read_all();
  const auto v = r.values<std::int32_t>();
  return {v.begin(), v.end()};
}

TEST(ChunkKeyEncodings, ZarrArraysReadTheirChunksAtTheEncodedKeys) {
  // fanout, max_children 4 (base 3): 5 = "12" in base 3.
  EXPECT_EQ(read_hand_written({{"name", "fanout"}, {"configuration", {{"max_children", 4}}}},
                              {"d0/0/c", "d0/1/c", "d0/2/c", "d0/1/0/c", "", "d0/1/2/c", "d0/2/0/c", "d0/2/1/c"}),
            (std::vector<std::int32_t>{0, 10, 20, 30, -1, 50, 60, 70}));
  EXPECT_EQ(read_hand_written({{"name", "suffix"}, {"configuration", {{"suffix", ".bin"}, {"base_encoding", {{"name", "default"}}}}}},
                              {"c/0.bin", "c/1.bin", "", "c/3.bin", "c/4.bin", "c/5.bin", "c/6.bin", "c/7.bin"}),
            (std::vector<std::int32_t>{0, 10, -1, 30, 40, 50, 60, 70}));
  EXPECT_EQ(read_hand_written({{"name", "prefix"}, {"configuration", {{"prefix", "chunks/"}, {"base_encoding", "v2"}}}},
                              {"chunks/0", "chunks/1", "chunks/2", "chunks/3", "chunks/4", "chunks/5", "chunks/6", ""}),
            (std::vector<std::int32_t>{0, 10, 20, 30, 40, 50, 60, -1}));
  // An unknown encoding is refused when the array is opened, naming it.
  const std::string msg = message_of<MetadataError>([] { read_hand_written({{"name", "morton"}}, {}); });
  EXPECT_NE(msg.find("'morton'"), std::string::npos) << msg;
}

TEST(ChunkKeyEncodings, IcechunkMapsEncodedKeysToManifestCoordinates) {
  namespace w = test::icechunk_writer;
  TempDir tmp;
  const auto array = [](const json& encoding) {
    return json{{"zarr_format", 3},
                {"node_type", "array"},
                {"shape", {4, 4}},
                {"data_type", "int32"},
                {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {2, 2}}}}}},
                {"chunk_key_encoding", encoding},
                {"fill_value", -1},
                {"codecs", {{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}}}}
        .dump();
  };
  const auto chunk = [](std::int32_t base) {
    std::string out(16, '\0');
    const std::int32_t v[4] = {base, base + 1, base + 2, base + 3};
    std::memcpy(out.data(), v, 16);
    return out;
  };
  w::ManifestSpec m{{{0, 2}, {0, 2}}, {}, ""};
  m.refs.push_back({w::Ref::Kind::Inline, {0, 1}, chunk(10)});
  m.refs.push_back({w::Ref::Kind::Native, {1, 0}, chunk(20)});
  w::ManifestSpec n = m;
  const json fanout = {{"name", "fanout"}, {"configuration", {{"max_children", 4}}}};
  const json suffix = {{"name", "suffix"}, {"configuration", {{"suffix", ".c"}, {"base_encoding", "v2"}}}};
  w::write_repository(tmp.path() / "repo", {{"/", R"({"zarr_format": 3, "node_type": "group"})"},
                                            {"/fan", array(fanout), true, {m}},
                                            {"/suf", array(suffix), true, {n}}});
  const auto store = icechunk::make_icechunk_store(icechunk::Repository::open(open_location((tmp.path() / "repo").string())), {});
  const std::vector<std::int32_t> expect = {-1, -1, 10, 11, -1, -1, 12, 13, 20, 21, -1, -1, 22, 23, -1, -1};
  for (const std::string name : {"fan", "suf"}) {
    const auto r = zarr::Hierarchy::open(Location{store, name}).array("")->read_all();
    const auto v = r.values<std::int32_t>();
    EXPECT_EQ(std::vector<std::int32_t>(v.begin(), v.end()), expect) << name;
  }
  EXPECT_TRUE(store->get("fan/d0/0/d1/1/c"));
  EXPECT_FALSE(store->get("fan/c/0/1"));
  EXPECT_TRUE(store->get("suf/1.0.c"));
  EXPECT_FALSE(store->get("suf/1.0"));
}

}  // namespace
}  // namespace lazycube
