// What OpenOptions choose inside a hierarchy: `group` (a node path, Zarr and Icechunk alike) and
// `icechunk` (version and virtual chunk containers), and the errors when a choice does not apply.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/icechunk/repository.hpp"
#include "test_support.hpp"
#include "zarr_test_writer.hpp"

namespace lazycube {
namespace {

using nlohmann::json;
using test::message_of;
using test::TempDir;

// A Zarr v3 store: root group, group "g1" holding arrays "a" (4 x 3, dims y, x) and "b"
// (4, dim y), and "g1/g2" holding "c" (5, dim z).
void write_grouped_store(const std::filesystem::path& root) {
  const json group = {{"zarr_format", 3}, {"node_type", "group"}, {"attributes", json::object()}};
  test::write_file(root / "zarr.json", group.dump());
  json g1 = group;
  g1["attributes"] = {{"name", "g1"}};
  test::write_file(root / "g1" / "zarr.json", g1.dump());
  test::write_file(root / "g1" / "g2" / "zarr.json", group.dump());
  auto array = [&](const std::filesystem::path& dir, const Shape& shape, const std::vector<std::string>& dims) {
    json meta = test::v3_array_json(shape, shape, "float32", json::array({test::bytes_codec()}));
    meta["dimension_names"] = dims;
    const auto values = test::ramp(shape_size(shape));
    test::write_v3_array(dir, meta, values.data(), 4);
  };
  array(root / "g1" / "a", {4, 3}, {"y", "x"});
  array(root / "g1" / "b", {4}, {"y"});
  array(root / "g1" / "g2" / "c", {5}, {"z"});
}

TEST(OpenChoices, GroupOpensANodeOfAZarrStore) {
  TempDir tmp;
  write_grouped_store(tmp.path());
  OpenOptions options;
  options.group = "g1";
  const Dataset g1 = open(tmp.str(), options);
  EXPECT_EQ(g1.data_var_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(g1.attrs().at("name"), "g1");
  options.group = "/g1//g2/";  // slashes around and between components do not matter
  const Dataset g2 = open(tmp.str(), options);
  EXPECT_EQ(g2.data_var_names(), (std::vector<std::string>{"c"}));
  // an array's path: a dataset of that array, named after it
  options.group = "g1/a";
  const Dataset a = open(open_location(tmp.str()), options);
  EXPECT_EQ(a.data_var_names(), (std::vector<std::string>{"a"}));
  const NDArray read = a["a"].read();
  const auto values = read.values<float>();
  EXPECT_EQ(std::vector<float>(values.begin(), values.end()), test::ramp(12));
  // relative to a URL that is itself a node
  options.group = "g2";
  EXPECT_EQ(open((tmp.path() / "g1").string(), options).data_var_names(), (std::vector<std::string>{"c"}));
}

TEST(OpenChoices, BadGroupsAreNamed) {
  TempDir tmp;
  write_grouped_store(tmp.path());
  OpenOptions options;
  options.group = "g1/nope";
  auto m = message_of<NotFound>([&] { open(tmp.str(), options); });
  EXPECT_NE(m.find("g1/nope"), std::string::npos) << m;
  options.group = "g1/../g1";
  m = message_of<UsageError>([&] { open(tmp.str(), options); });
  EXPECT_NE(m.find("'..' is not a node name"), std::string::npos) << m;
  // the gdal engine reads files, which have no such choice here
  options.group = "g1";
  options.engine = "gdal";
  m = message_of<UsageError>([&] { open(tmp.str(), options); });
  EXPECT_NE(m.find("group 'g1'"), std::string::npos) << m;
  EXPECT_NE(m.find("not with the gdal engine"), std::string::npos) << m;
}

TEST(OpenChoices, IcechunkChoicesNeedARepository) {
  TempDir tmp;
  write_grouped_store(tmp.path());
  OpenOptions options;
  options.format_options["tag"] = "v1";
  auto m = message_of<UsageError>([&] { open(tmp.str(), options); });
  EXPECT_NE(m.find("format option 'tag' = \"v1\" applies to Icechunk repositories only; " + tmp.str() + " is not one"),
            std::string::npos) << m;
  options.format_options = {{"virtual_chunk_containers", {{"s3://b/", json::object()}}}};
  m = message_of<UsageError>([&] { open(open_location(tmp.str()), options); });
  EXPECT_NE(m.find("format option 'virtual_chunk_containers' applies to Icechunk repositories only"), std::string::npos)
      << m;
}

TEST(OpenChoices, IcechunkVersionAndGroup) {
  LAZYCUBE_REQUIRE_SHARED_DATA(shared);
  const auto fixtures = shared / "icechunk-fixtures";
  if (!std::filesystem::exists(fixtures)) GTEST_SKIP() << "Icechunk fixtures not found: " << fixtures.string();
  for (const char* name : {"test-repo-v1", "test-repo-v2", "test-repo-v2-migrated"}) {
    SCOPED_TRACE(name);
    const std::string url = (fixtures / name).string();
    auto small_chunks = [&](json version) {
      OpenOptions options;
      options.group = "group1/small_chunks";
      options.format_options = std::move(version);
      const NDArray read = open(url, options)["small_chunks"].read();
      const auto v = read.values<std::int8_t>();
      return std::vector<std::int8_t>(v.begin(), v.end());
    };
    const std::vector<std::int8_t> deleted{84, 84, 84, 84, 8};
    EXPECT_EQ(small_chunks(json::object()), std::vector<std::int8_t>(5, 84));
    EXPECT_EQ(small_chunks({{"branch", "my-branch"}}), deleted);
    EXPECT_EQ(small_chunks({{"tag", "it works!"}}), deleted);
    auto m = message_of<NotFound>([&] { small_chunks({{"tag", "deleted"}}); });
    EXPECT_NE(m.find("ref not found: tag 'deleted'"), std::string::npos) << m;
    // group2/.../inner exists on my-branch only
    OpenOptions options;
    options.group = "group2/group3/group4/group5";
    EXPECT_THROW(open(url, options), NotFound);
    options.format_options["branch"] = "my-branch";
    EXPECT_EQ(open(url, options).data_var_names(), (std::vector<std::string>{"inner"}));
    EXPECT_TRUE(icechunk::Repository::open(open_location(url))->refs_listed());  // a local directory lists
  }
}

}  // namespace
}  // namespace lazycube
