// Icechunk 2.1/2.2 reading rules in repositories written by icechunk_test_writer.hpp: relative
// virtual chunk locations (vcc://NAME/PATH under the url_prefix of the container the repository
// declares as NAME, still authorised by prefix), and zero-length chunk references refused as
// corruption (never read as fill values); amended and anonymous (detached) snapshots in the
// history; the repository's status and feature flags reported, an offline repository refused.
#include <gtest/gtest.h>

#include <cstring>
#include <flatbuffers/flexbuffers.h>
#include <nlohmann/json.hpp>

#include "icechunk_test_writer.hpp"
#include "lazycube/error.hpp"
#include "lazycube/icechunk/repository.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "test_support.hpp"

namespace lazycube {
namespace {

namespace w = test::icechunk_writer;
namespace fs = std::filesystem;  // (not from another file of the unity batch)
using test::message_of;


std::string one_dim_array() {
  return nlohmann::json{{"zarr_format", 3},
                        {"node_type", "array"},
                        {"shape", {4}},
                        {"data_type", "int32"},
                        {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {2}}}}}},
                        {"chunk_key_encoding", {{"name", "default"}}},
                        {"fill_value", -1},
                        {"codecs", {{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}}}}
      .dump();
}

// The repository configuration declaring the local folder `prefix` as container `name`.
std::vector<std::uint8_t> config_naming(const std::string& name, const std::string& prefix) {
  flexbuffers::Builder b;
  b.Map([&] {
    b.Map("virtual_chunk_containers", [&] {
      b.Map(prefix.c_str(), [&] {
        b.String("name", name);
        b.String("url_prefix", prefix);
        b.String("store", "local_file_system");
      });
    });
  });
  b.Finish();
  return b.GetBuffer();
}

class Icechunk2x : public ::testing::Test {
 protected:
  // Array "a": chunk 0 virtual at `location` (bytes 2..10 of outside/data.bin), chunk 1 inline.
  std::vector<std::int32_t> read(const std::string& location, const std::map<std::string, StoreOptions>& authorised) {
    test::write_file(tmp_.path() / "outside" / "data.bin", "xx" + w::int32_bytes({5, 6}) + "yy");
    test::write_file(tmp_.path() / "secret.bin", "xx" + w::int32_bytes({66, 66}) + "yy");
    w::ManifestSpec m{{{0, 2}}, {}, ""};
    m.refs.push_back({w::Ref::Kind::Virtual, {0}, "", location, 2, 8});
    m.refs.push_back({w::Ref::Kind::Inline, {1}, w::int32_bytes({7, 8})});
    const fs::path repo = tmp_.path() / "repo";
    fs::remove_all(repo);
    w::write_repository(repo, {{"/", R"({"zarr_format": 3, "node_type": "group"})"}, {"/a", one_dim_array(), true, {m}}},
                        {.config = config_naming("local", prefix())});
    icechunk::IcechunkOptions options;
    options.virtual_chunk_containers = authorised;
    const auto store = icechunk::make_icechunk_store(icechunk::Repository::open(open_location(repo.string())), options);
    const auto r = zarr::Hierarchy::open(Location{store, "a"}).array("")->read_all();
    const auto v = r.values<std::int32_t>();
    return {v.begin(), v.end()};
  }
  std::string prefix() const { return "file://" + (tmp_.path() / "outside").string() + "/"; }

  test::TempDir tmp_;
};

TEST_F(Icechunk2x, RelativeVirtualLocationsResolveThroughTheNamedContainer) {
  EXPECT_EQ(read("vcc://local/data.bin", {{prefix(), {}}}), (std::vector<std::int32_t>{5, 6, 7, 8}));
  // The absolute form of the same location reads the same.
  EXPECT_EQ(read(prefix() + "data.bin", {{prefix(), {}}}), (std::vector<std::int32_t>{5, 6, 7, 8}));
}

TEST_F(Icechunk2x, RelativeLocationsAreStillAuthorisedByPrefix) {
  const std::string m = message_of<StoreError>([&] { read("vcc://local/data.bin", {}); });
  EXPECT_NE(m.find("not authorised"), std::string::npos) << m;
  EXPECT_NE(m.find("outside/data.bin"), std::string::npos) << m;
}

TEST_F(Icechunk2x, BadRelativeLocationsNameWhatIsWrong) {
  const std::string unknown = message_of<MetadataError>([&] { read("vcc://nowhere/data.bin", {{prefix(), {}}}); });
  EXPECT_NE(unknown.find("'nowhere'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("named: local"), std::string::npos) << unknown;
  const std::string climbing = message_of<MetadataError>([&] { read("vcc://local/../secret.bin", {{prefix(), {}}}); });
  EXPECT_NE(climbing.find("leaves its container"), std::string::npos) << climbing;
  const std::string empty = message_of<MetadataError>([&] { read("vcc://local/", {{prefix(), {}}}); });
  EXPECT_NE(empty.find("names no object"), std::string::npos) << empty;
}

TEST(Icechunk2xZeroLength, AZeroLengthChunkIsCorruptionNotFill) {
  for (const auto kind : {w::Ref::Kind::Inline, w::Ref::Kind::Native, w::Ref::Kind::Virtual}) {
    test::TempDir tmp;
    test::write_file(tmp.path() / "outside" / "data.bin", w::int32_bytes({1, 2}));
    w::ManifestSpec m{{{0, 2}}, {}, ""};
    w::Ref zero{kind, {0}, ""};
    if (kind == w::Ref::Kind::Virtual) zero.url = "file://" + (tmp.path() / "outside" / "data.bin").string();
    m.refs.push_back(zero);
    m.refs.push_back({w::Ref::Kind::Inline, {1}, w::int32_bytes({7, 8})});
    w::write_repository(tmp.path() / "repo", {{"/", R"({"zarr_format": 3, "node_type": "group"})"}, {"/a", one_dim_array(), true, {m}}});
    icechunk::IcechunkOptions options;
    options.virtual_chunk_containers = {{"file://" + (tmp.path() / "outside").string(), {}}};
    const auto store = icechunk::make_icechunk_store(icechunk::Repository::open(open_location((tmp.path() / "repo").string())), options);
    const std::string msg = message_of<MetadataError>([&] { zarr::Hierarchy::open(Location{store, "a"}).array("")->read_all(); });
    EXPECT_NE(msg.find("chunk 'a/c/0'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("length 0"), std::string::npos) << msg;
  }
}

// A repository whose history (repo file) is: generated (written, branch main) <- first, with
// "replaced" (amended away by generated) and "anon" (a detached snapshot on top of generated).
std::shared_ptr<icechunk::Repository> history_repo(const fs::path& dir, w::WriteOptions options) {
  options.history = {{1, -1, "first"}, {2, 1, "replaced"}, {3, 0, "anon"}};
  options.parent = 1;
  options.amended = {{100, 2}};
  options.detached = {3};
  w::write_repository(dir, {{"/", R"({"zarr_format": 3, "node_type": "group"})"}, {"/a", one_dim_array(), true, {}}}, options);
  return icechunk::Repository::open(open_location(dir.string()));
}

TEST(Icechunk2xHistory, AmendedAndDetachedSnapshotsAreMarked) {
  test::TempDir tmp;
  const auto repo = history_repo(tmp.path() / "repo", {});
  const std::string generated = w::crockford(w::id12(100)), first = w::crockford(w::id12(1)),
                    replaced = w::crockford(w::id12(2)), anon = w::crockford(w::id12(3));
  const auto main = repo->history(repo->resolve({}));
  ASSERT_EQ(main.size(), 2u);
  EXPECT_EQ(main[0].id, generated);
  EXPECT_EQ(main[0].amends, replaced);
  EXPECT_FALSE(main[0].detached);
  EXPECT_EQ(main[1].message, "first");
  EXPECT_TRUE(main[1].amends.empty());
  // The anonymous snapshot is found by id, its history through the branch's.
  const auto detached = repo->history(repo->resolve({.snapshot = anon}));
  ASSERT_EQ(detached.size(), 3u);
  EXPECT_TRUE(detached[0].detached);
  EXPECT_EQ(detached[0].message, "anon");
  EXPECT_EQ(detached[1].id, generated);
  // The replaced commit is still in the repository, reachable by id.
  EXPECT_EQ(repo->history(repo->resolve({.snapshot = replaced})).front().message, "replaced");
  EXPECT_EQ(repo->status().availability, "online");
  EXPECT_TRUE(repo->enabled_feature_flags().empty());
}

TEST(Icechunk2xHistory, StatusAndFeatureFlagsAreReadAndRespected) {
  test::TempDir tmp;
  w::WriteOptions read_only;
  read_only.availability = icechunk::fb::Availability_ReadOnly;
  read_only.status_reason = "archived";
  read_only.flags_on = {1, 3};
  read_only.flags_off = {2};
  const auto repo = history_repo(tmp.path() / "ro", read_only);
  EXPECT_EQ(repo->status().availability, "read_only");
  EXPECT_EQ(repo->status().reason, "archived");
  EXPECT_EQ(repo->status().since_us, 1'700'000'000'000'000u);
  EXPECT_EQ(repo->enabled_feature_flags(), (std::vector<std::uint16_t>{1, 3}));
  EXPECT_EQ(repo->disabled_feature_flags(), (std::vector<std::uint16_t>{2}));
  // Read-only still reads.
  const auto store = icechunk::make_icechunk_store(repo, {});
  EXPECT_EQ(zarr::Hierarchy::open(Location{store, "a"}).array("")->read_all().values<std::int32_t>()[0], -1);
  // Offline refuses, naming the state and the reason.
  w::WriteOptions offline;
  offline.availability = icechunk::fb::Availability_Offline;
  offline.status_reason = "migrating to spec 3";
  const auto down = history_repo(tmp.path() / "off", offline);
  const std::string m = message_of<StoreError>([&] { icechunk::make_icechunk_store(down, {}); });
  EXPECT_NE(m.find("is offline (migrating to spec 3)"), std::string::npos) << m;
}

}  // namespace
}  // namespace lazycube
