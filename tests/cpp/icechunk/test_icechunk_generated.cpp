// Icechunk layouts the fixtures lack, in repositories written by icechunk_test_writer.hpp:
// split manifests (each covering an extent of the chunk grid), native chunks at offsets inside a
// shared file, virtual chunks at local file:// locations (plain and dictionary-compressed), the
// v2 chunk key encoding, and listing.
#include <gtest/gtest.h>

#include <cstring>
#include <atomic>
#include <thread>
#include <nlohmann/json.hpp>

#include "icechunk_test_writer.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/icechunk/repository.hpp"
#include "lazycube/zarr/hierarchy.hpp"

namespace lazycube {
namespace {

namespace w = test::icechunk_writer;
using test::message_of;


std::string array_json(const std::vector<int>& shape, const std::vector<int>& chunks, const std::string& encoding) {
  return nlohmann::json{{"zarr_format", 3},
                        {"node_type", "array"},
                        {"shape", shape},
                        {"data_type", "int32"},
                        {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", chunks}}}}},
                        {"chunk_key_encoding", {{"name", encoding}}},
                        {"fill_value", -1},
                        {"codecs", {{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}}},
                        {"attributes", {{"units", "K"}}}}
      .dump();
}

class IcechunkGenerated : public ::testing::Test {
 protected:
  void SetUp() override {
    // split: shape (4, 6), chunks (2, 3): a 2x2 grid; manifest A covers grid row 0, B row 1.
    // (0,0) native, (0,1) inline, (1,0) virtual (B's locations are dictionary-compressed),
    // (1,1) has no reference: fill. A also holds a stray ref for (1,1) outside its extent,
    // which must not be served.
    test::write_file(tmp_.path() / "outside" / "virtual.bin", "xx" + w::int32_bytes({30, 31, 32, 40, 41, 42}) + "yy");
    const std::string virtual_url = "file://" + (tmp_.path() / "outside" / "virtual.bin").string();
    w::ManifestSpec a{{{0, 1}, {0, 2}}, {}, ""};
    a.refs.push_back({w::Ref::Kind::Native, {0, 0}, w::int32_bytes({10, 11, 12, 20, 21, 22})});
    a.refs.push_back({w::Ref::Kind::Inline, {0, 1}, w::int32_bytes({13, 14, 15, 23, 24, 25})});
    a.refs.push_back({w::Ref::Kind::Inline, {1, 1}, w::int32_bytes({99, 99, 99, 99, 99, 99})});
    w::ManifestSpec b{{{1, 2}, {0, 2}}, {}, "file:///tmp/some/dictionary/content/virtual.bin"};
    b.refs.push_back({w::Ref::Kind::Virtual, {1, 0}, "", virtual_url, 2, 24});
    w::ManifestSpec dotted{{{0, 2}}, {}, ""};
    dotted.refs.push_back({w::Ref::Kind::Native, {1}, w::int32_bytes({7, 8})});
    w::write_repository(dir(), {
                                   {"/", R"({"zarr_format": 3, "node_type": "group", "attributes": {"title": "gen"}})"},
                                   {"/dotted", array_json({4}, {2}, "v2"), true, {dotted}},
                                   {"/split", array_json({4, 6}, {2, 3}, "default"), true, {a, b}},
                               });
    outside_ = "file://" + (tmp_.path() / "outside").string();
  }

  std::filesystem::path dir() const { return tmp_.path() / "repo"; }

  std::shared_ptr<Store> store(const std::map<std::string, StoreOptions>& containers) const {
    icechunk::IcechunkOptions options;
    options.virtual_chunk_containers = containers;
    return icechunk::make_icechunk_store(icechunk::Repository::open(open_location(dir().string())), options);
  }

  static std::vector<std::int32_t> values(const std::shared_ptr<Store>& s, const std::string& path) {
    auto r = zarr::Hierarchy::open(Location{s, path}).array("")->read_all();
    auto v = r.values<std::int32_t>();
    return {v.begin(), v.end()};
  }

  test::TempDir tmp_;
  std::string outside_;
};

TEST_F(IcechunkGenerated, SplitManifestsAndEveryChunkKind) {
  auto s = store({{outside_, {}}});
  EXPECT_EQ(values(s, "split"), (std::vector<std::int32_t>{10, 11, 12, 13, 14, 15,  //
                                                          20, 21, 22, 23, 24, 25,  //
                                                          30, 31, 32, -1, -1, -1,  //
                                                          40, 41, 42, -1, -1, -1}));
  EXPECT_EQ(values(s, "dotted"), (std::vector<std::int32_t>{-1, -1, 7, 8}));
  // Keys as the chunk key encodings spell them; list() holds only refs their manifest covers.
  EXPECT_EQ(s->list("split"), (std::vector<std::string>{"split/c/0/0", "split/c/0/1", "split/c/1/0", "split/zarr.json"}));
  EXPECT_EQ(s->list_dir("split"), (std::vector<std::string>{"c", "zarr.json"}));
  EXPECT_EQ(s->list_dir("split/c"), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(s->list_dir("dotted"), (std::vector<std::string>{"1", "zarr.json"}));
  EXPECT_TRUE(s->get("dotted/1"));
  EXPECT_FALSE(s->get("dotted/c/1"));
  EXPECT_FALSE(s->get("split/c/1/1"));
  // Range reads inside a virtual chunk (offset 2 in its file) and a native one.
  auto part = s->get("split/c/1/0", ByteRange::suffix(8));
  ASSERT_TRUE(part);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(part->data()), part->size()), w::int32_bytes({41, 42}));
  auto batch = s->get_many({{"split/c/0/0", ByteRange::range(4, 4)}, {"split/c/1/1", {}}, {"split/c/0/1", ByteRange::from(20)}});
  ASSERT_TRUE(batch[0] && !batch[1] && batch[2]);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(batch[0]->data()), 4), w::int32_bytes({11}));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(batch[2]->data()), 4), w::int32_bytes({25}));
  EXPECT_THROW(s->get("split/c/0/0", ByteRange::range(25, 1)), StoreError);
  // Through lazycube::open as a dataset.
  Dataset ds = open(Location{s, ""});
  EXPECT_EQ(ds.attrs()["title"], "gen");
  EXPECT_EQ(ds["split"].attrs()["units"], "K");
}

TEST_F(IcechunkGenerated, VirtualChunksNeedTheirContainer) {
  auto refused = message_of<StoreError>([&] { values(store({}), "split"); });
  EXPECT_NE(refused.find("virtual.bin"), std::string::npos) << refused;
  EXPECT_NE(refused.find("not authorised"), std::string::npos) << refused;
  // A sibling directory sharing the prefix's characters is not under it.
  auto sibling = message_of<StoreError>([&] { values(store({{outside_ + "-not", {}}}), "split"); });
  EXPECT_NE(sibling.find("not authorised"), std::string::npos) << sibling;
  // The virtual file removed: an error, not fill values.
  std::filesystem::remove(tmp_.path() / "outside" / "virtual.bin");
  auto missing = message_of<StoreError>([&] { values(store({{outside_, {}}}), "split"); });
  EXPECT_NE(missing.find("does not exist"), std::string::npos) << missing;
}

TEST_F(IcechunkGenerated, ConcurrentReadsOfOneStore) {
  // Manifests load on first use, from whichever thread asks first: eight threads at once.
  auto s = store({{outside_, {}}});
  const std::vector<std::int32_t> expected = values(store({{outside_, {}}}), "split");
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i)
        if (values(s, "split") != expected || s->list("split").size() != 4) ++wrong;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

// Manifests are verified down to their reference offsets when loaded and each reference when a
// lookup first reads it: every single-byte corruption of every manifest reads correct values or
// fails with a lazycube error, never a crash or out-of-bounds read (the ASan pass runs this too;
// every third byte, to keep it under a second).
TEST_F(IcechunkGenerated, EveryManifestByteCorrupted) {
  std::vector<std::filesystem::path> manifests;
  for (const auto& e : std::filesystem::directory_iterator(dir() / "manifests")) manifests.push_back(e.path());
  ASSERT_EQ(manifests.size(), 3u);
  const auto expected = values(store({{outside_, {}}}), "split");
  int failed = 0, read = 0;
  for (const auto& path : manifests) {
    const std::string original = test::read_file(path);
    for (std::size_t i = 39; i < original.size(); i += 3) {  // the header's checks have their own tests
      std::string bytes = original;
      bytes[i] = static_cast<char>(bytes[i] ^ 0xA5);
      test::write_file(path, bytes);
      try {
        auto s = store({{outside_, {}}});
        values(s, "split");
        values(s, "dotted");
        s->list("");
        ++read;
      } catch (const Error&) {
        ++failed;
      }
    }
    test::write_file(path, original);
  }
  EXPECT_GT(failed, 0);
  EXPECT_EQ(values(store({{outside_, {}}}), "split"), expected);
}

}  // namespace
}  // namespace lazycube
