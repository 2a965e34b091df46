// Icechunk repositories: the three fixture repositories written by Icechunk itself (spec 1,
// spec 2, spec 2 migrated from 1; ../shared/data/icechunk-fixtures/README.md lists their
// contents): refs, history, hierarchy, attributes, inline and native chunks, and reading
// through lazycube::open with the Zarr v3 reader.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/icechunk/repository.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "test_support.hpp"

namespace lazycube {
namespace {

using icechunk::IcechunkOptions;
using icechunk::Repository;
using icechunk::VersionRef;
using test::message_of;

#define REQUIRE_FIXTURE(var, name)                                                                  \
  LAZYCUBE_REQUIRE_SHARED_DATA(shared_##var);                                                      \
  const auto var = shared_##var / "icechunk-fixtures" / (name);                                    \
  if (!std::filesystem::exists(var)) GTEST_SKIP() << "Icechunk fixture not found: " << var.string()

class IcechunkFixture : public ::testing::TestWithParam<const char*> {};

std::shared_ptr<Repository> open_repo(const std::filesystem::path& dir) {
  return Repository::open(open_location(dir.string()));
}

std::shared_ptr<Store> store_at(const std::shared_ptr<Repository>& repo, VersionRef version) {
  IcechunkOptions options;
  options.version = std::move(version);
  return icechunk::make_icechunk_store(repo, options);
}

std::vector<std::string> messages(const std::vector<icechunk::SnapshotInfo>& history) {
  std::vector<std::string> out;
  for (const auto& s : history) out.push_back(s.message);
  return out;
}

template <class T>
std::vector<T> values_of(const NDArray& a) {
  auto v = a.values<T>();
  return std::vector<T>(v.begin(), v.end());
}

std::vector<std::int8_t> small_chunks(const std::shared_ptr<Store>& store) {
  auto h = zarr::Hierarchy::open(Location{store, "group1"});
  return values_of<std::int8_t>(h.array("small_chunks")->read_all());
}

TEST_P(IcechunkFixture, RefsAndHistory) {
  REQUIRE_FIXTURE(dir, GetParam());
  auto repo = open_repo(dir);
  EXPECT_EQ(repo->spec_version(), std::string(GetParam()) == "test-repo-v1" ? 1 : 2);
  EXPECT_EQ(repo->branches(), (std::vector<std::string>{"main", "my-branch"}));
  EXPECT_EQ(repo->tags(), (std::vector<std::string>{"it also works!", "it works!"}));

  const std::vector<std::string> main_history = {"set virtual chunk", "fill data", "empty structure",
                                                 "Repository initialized"};
  const std::string main_id = repo->resolve({});
  EXPECT_EQ(repo->resolve({.branch = "main"}), main_id);
  EXPECT_EQ(messages(repo->history(main_id)), main_history);

  const std::string my_branch = repo->resolve({.branch = "my-branch"});
  EXPECT_EQ(repo->resolve({.tag = "it also works!"}), my_branch);
  EXPECT_EQ(messages(repo->history(my_branch)),
            (std::vector<std::string>{"some more structure", "delete a chunk", "set virtual chunk", "fill data",
                                      "empty structure", "Repository initialized"}));
  const auto works = repo->history(repo->resolve({.tag = "it works!"}));
  EXPECT_EQ(messages(works), (std::vector<std::string>{"delete a chunk", "set virtual chunk", "fill data",
                                                       "empty structure", "Repository initialized"}));
  // Newest first, and the times go back.
  for (std::size_t i = 1; i < works.size(); ++i) EXPECT_GT(works[i - 1].written_at_us, works[i].written_at_us);
  EXPECT_GT(works.back().written_at_us, 1'600'000'000'000'000u);  // after 2020

  // A snapshot id resolves to itself.
  EXPECT_EQ(repo->resolve({.snapshot = works[1].id}), works[1].id);
}

TEST_P(IcechunkFixture, UnknownAndDeletedRefsAreNotFound) {
  REQUIRE_FIXTURE(dir, GetParam());
  auto repo = open_repo(dir);
  auto deleted = message_of<NotFound>([&] { repo->resolve({.tag = "deleted"}); });
  EXPECT_NE(deleted.find("ref not found: tag 'deleted'"), std::string::npos) << deleted;
  EXPECT_NE(deleted.find("deleted"), std::string::npos) << deleted;
  auto branch = message_of<NotFound>([&] { repo->resolve({.branch = "no-such-branch"}); });
  EXPECT_NE(branch.find("ref not found: branch 'no-such-branch'"), std::string::npos) << branch;
  auto tag = message_of<NotFound>([&] { repo->resolve({.tag = "nope"}); });
  EXPECT_NE(tag.find("ref not found: tag 'nope'"), std::string::npos) << tag;
  auto snap = message_of<NotFound>([&] { repo->resolve({.snapshot = "AAAAAAAAAAAAAAAAAAAA"}); });
  EXPECT_NE(snap.find("snapshot 'AAAAAAAAAAAAAAAAAAAA'"), std::string::npos) << snap;
  auto bad = message_of<NotFound>([&] { repo->resolve({.snapshot = "not-an-id"}); });
  EXPECT_NE(bad.find("not a snapshot id"), std::string::npos) << bad;
  EXPECT_THROW(repo->resolve({.branch = "main", .tag = "it works!"}), UsageError);
  // The store refuses the same way.
  EXPECT_THROW(store_at(repo, {.tag = "deleted"}), NotFound);
}

TEST_P(IcechunkFixture, HierarchyAndAttributes) {
  REQUIRE_FIXTURE(dir, GetParam());
  auto store = store_at(open_repo(dir), {.branch = "my-branch"});
  EXPECT_EQ(store->list_dir(""), (std::vector<std::string>{"group1", "group2", "zarr.json"}));
  EXPECT_EQ(store->list_dir("group1"), (std::vector<std::string>{"big_chunks", "small_chunks", "zarr.json"}));
  EXPECT_EQ(store->list_dir("group2/group3/group4/group5/inner"), (std::vector<std::string>{"zarr.json"}));
  auto root = zarr::Hierarchy::open(Location{store, ""});
  EXPECT_EQ(root.group_names(), (std::vector<std::string>{"group1", "group2"}));
  EXPECT_EQ(root.attrs(), nlohmann::json::object());  // the root group has no attributes
  auto g1 = zarr::Hierarchy::open(Location{store, "group1"});
  EXPECT_EQ(g1.array_names(), (std::vector<std::string>{"big_chunks", "small_chunks"}));
  EXPECT_EQ(g1.attrs(), nlohmann::json({{"this", "is a nice group"}, {"icechunk", 1}, {"size", 42.0}}));
  auto g5 = zarr::Hierarchy::open(Location{store, "group2/group3/group4/group5"});
  EXPECT_EQ(g5.array_names(), std::vector<std::string>{"inner"});
  EXPECT_EQ(g5.attrs()["this"], "is a nice group");
  EXPECT_EQ(g1.array("big_chunks")->attrs(),
            nlohmann::json({{"this", "is a nice array"}, {"icechunk", 1}, {"size", 42.0}}));
  EXPECT_EQ(g1.array("big_chunks")->shape(), (Shape{10, 10}));
  EXPECT_EQ(g1.array("small_chunks")->shape(), (Shape{5}));
  // Every key list() gives can be read.
  for (const auto& key : store->list("group1/small_chunks")) EXPECT_TRUE(store->get(key)) << key;
  EXPECT_FALSE(store->get("group1/zarr.json.bak"));
  EXPECT_FALSE(store->get("group1/small_chunks/c/9"));
  EXPECT_FALSE(store->get("group1/small_chunks/c/x"));
}

TEST_P(IcechunkFixture, InlineChunksPerRef) {
  REQUIRE_FIXTURE(dir, GetParam());
  auto repo = open_repo(dir);
  const std::vector<std::int8_t> filled(5, 84), deleted = {84, 84, 84, 84, 8};
  EXPECT_EQ(small_chunks(store_at(repo, {})), filled);
  EXPECT_EQ(small_chunks(store_at(repo, {.branch = "my-branch"})), deleted);
  EXPECT_EQ(small_chunks(store_at(repo, {.tag = "it works!"})), deleted);
  EXPECT_EQ(small_chunks(store_at(repo, {.tag = "it also works!"})), deleted);
  const auto history = repo->history(repo->resolve({}));  // set virtual, fill, empty, init
  EXPECT_EQ(small_chunks(store_at(repo, {.snapshot = history[1].id})), filled);
  EXPECT_EQ(small_chunks(store_at(repo, {.snapshot = history[2].id})), std::vector<std::int8_t>(5, 8));
  // The initial snapshot holds no nodes.
  EXPECT_EQ(store_at(repo, {.snapshot = history[3].id})->list(""), std::vector<std::string>{});
}

TEST_P(IcechunkFixture, NativeChunksAndMissingOnes) {
  REQUIRE_FIXTURE(dir, GetParam());
  auto repo = open_repo(dir);
  // At "fill data" (before the virtual chunk): every value 42; at "empty structure": all NaN.
  const auto history = repo->history(repo->resolve({}));
  auto big = [&](const std::string& id) {
    return zarr::Hierarchy::open(Location{store_at(repo, {.snapshot = id}), "group1/big_chunks"}).array("");
  };
  EXPECT_EQ(values_of<float>(big(history[1].id)->read_all()), std::vector<float>(100, 42.0f));
  for (float v : values_of<float>(big(history[2].id)->read_all())) EXPECT_TRUE(std::isnan(v));
  // Native chunks are byte ranges of chunks/<id>: a partial read of one.
  auto store = store_at(repo, {.snapshot = history[1].id});
  const auto whole = store->get("group1/big_chunks/c/1/1");
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->size(), 19u);
  const auto part = store->get("group1/big_chunks/c/1/1", ByteRange::range(4, 100));
  ASSERT_TRUE(part);
  EXPECT_EQ(part->size(), 15u);
  EXPECT_EQ(std::memcmp(part->data(), whole->data() + 4, 15), 0);
  EXPECT_EQ(store->size("group1/big_chunks/c/1/1"), 19u);
  // `inner` has no chunks: all fill (NaN).
  auto inner = zarr::Hierarchy::open(Location{store_at(repo, {.branch = "my-branch"}), "group2/group3/group4/group5/inner"});
  for (float v : values_of<float>(inner.array("")->read_all())) EXPECT_TRUE(std::isnan(v));
}

TEST_P(IcechunkFixture, OpenRecognisesTheRepository) {
  REQUIRE_FIXTURE(dir, GetParam());
  EXPECT_TRUE(icechunk::is_repository(open_location(dir.string())));
  // lazycube::open reads branch main as a Zarr v3 hierarchy (the root group holds no arrays).
  Dataset root = open(dir.string());
  EXPECT_TRUE(root.variable_names().empty());
  EXPECT_EQ(root.attrs(), nlohmann::json::object());
  // Its store's nodes open as datasets: group1/small_chunks at main holds 84s.
  auto location = *icechunk::open_location_if_repository(open_location(dir.string()));
  location.path = "group1/small_chunks";
  Dataset small = open(location);
  EXPECT_EQ(small.attrs()["this"], "is a nice array");
  EXPECT_EQ(values_of<std::int8_t>(small["small_chunks"].read_raw()), std::vector<std::int8_t>(5, 84));
}

INSTANTIATE_TEST_SUITE_P(Repos, IcechunkFixture,
                         ::testing::Values("test-repo-v1", "test-repo-v2", "test-repo-v2-migrated"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (auto& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

TEST(Icechunk, PlainZarrIsNotARepository) {
  test::TempDir tmp;
  test::write_file(tmp.path() / "zarr.json", R"({"zarr_format": 3, "node_type": "group"})");
  EXPECT_FALSE(icechunk::is_repository(open_location(tmp.str())));
  EXPECT_FALSE(icechunk::open_location_if_repository(open_location(tmp.str())));
  auto m = message_of<NotFound>([&] { Repository::open(open_location(tmp.str())); });
  EXPECT_NE(m.find("no Icechunk repository"), std::string::npos) << m;
  // A Zarr store holding an unrelated key named "repo" is not one either.
  test::write_file(tmp.path() / "repo", "not an Icechunk file at all, long enough");
  EXPECT_FALSE(icechunk::is_repository(open_location(tmp.str())));
  EXPECT_TRUE(open(tmp.str()).variable_names().empty());
}

}  // namespace
}  // namespace lazycube
