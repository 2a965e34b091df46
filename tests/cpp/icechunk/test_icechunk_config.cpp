// The virtual chunk containers a repository's configuration declares: spec 1's config.yaml and
// spec 2's repo file (FlexBuffers), as the fixtures hold them; malformed configurations are
// MetadataErrors naming the file (and the line, for YAML).
#include <gtest/gtest.h>

#include "icechunk/repo_config.hpp"
#include "icechunk/repository_state.hpp"
#include "lazycube/error.hpp"
#include "test_support.hpp"

namespace lazycube {
namespace {

using icechunk::DeclaredContainer;
using test::message_of;

const DeclaredContainer* find(const std::vector<DeclaredContainer>& cs, const std::string& prefix) {
  for (const auto& c : cs)
    if (c.url_prefix == prefix) return &c;
  return nullptr;
}

TEST(IcechunkConfig, FixtureDeclarations) {
  LAZYCUBE_REQUIRE_SHARED_DATA(shared);
  const auto dir = shared / "icechunk-fixtures";
  if (!std::filesystem::exists(dir / "test-repo-v1")) GTEST_SKIP() << "Icechunk fixtures not found: " << dir.string();
  const StoreOptions s3{{"endpoint_url", "http://localhost:4200"}, {"region_name", "us-east-1"}};
  for (const char* name : {"test-repo-v1", "test-repo-v2", "test-repo-v2-migrated"}) {
    SCOPED_TRACE(name);
    auto repo = icechunk::Repository::open(open_location((dir / name).string()));
    const auto& cs = icechunk::state_of(*repo).containers;
    const bool v2 = std::string(name) == "test-repo-v2";
    // Spec 1 (and the repository migrated from it) declares Icechunk 1's defaults plus "s3".
    ASSERT_EQ(cs.size(), v2 ? 1u : 5u);
    const DeclaredContainer* c = find(cs, v2 ? "s3://testbucket/" : "s3://testbucket");
    ASSERT_TRUE(c);
    EXPECT_EQ(c->kind, "s3_compatible");
    EXPECT_EQ(c->options, s3);
    EXPECT_EQ(c->name, v2 ? "" : "s3");
    if (!v2) {
      EXPECT_EQ(find(cs, "file")->kind, "local_file_system");
      EXPECT_EQ(find(cs, "az")->kind, "azure");
      EXPECT_EQ(find(cs, "tigris")->options, (StoreOptions{{"endpoint_url", "https://fly.storage.tigris.dev"}}));
    }
  }
}

TEST(IcechunkConfig, YamlSubset) {
  const std::string yaml =
      "inline_chunk_threshold_bytes: 12\n"
      "manifest:\n  preload:\n    - one\n    - two\n"  // other sections: whatever YAML, not read
      "virtual_chunk_containers:\n"
      "  'my data':\n"
      "    name: \"my data\"\n"
      "    url_prefix: s3://bucket/data/\n"
      "    store: !s3\n"
      "      region: eu-west-1\n"
      "      anonymous: true\n"
      "  # a comment\n"
      "  web:\n"
      "    url_prefix: 'https://example.org/it''s/'\n"
      "    store: !http {}\n"
      "storage: null\n";
  const auto cs = icechunk::containers_from_yaml(yaml, "config.yaml");
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_EQ(cs[0].name, "my data");
  EXPECT_EQ(cs[0].url_prefix, "s3://bucket/data/");
  EXPECT_EQ(cs[0].kind, "s3");
  EXPECT_EQ(cs[0].options, (StoreOptions{{"region_name", "eu-west-1"}, {"anon", "true"}}));
  EXPECT_EQ(cs[1].url_prefix, "https://example.org/it's/");
  EXPECT_EQ(cs[1].kind, "http");
  EXPECT_TRUE(icechunk::containers_from_yaml("virtual_chunk_containers: {}\n", "c").empty());
  EXPECT_TRUE(icechunk::containers_from_yaml("storage: null\n", "c").empty());

  auto bad = [](const std::string& text) { return message_of<MetadataError>([&] { icechunk::containers_from_yaml(text, "repo/config.yaml"); }); };
  EXPECT_NE(bad("virtual_chunk_containers:\n  - s3\n").find("repo/config.yaml:2: cannot read the virtual chunk containers (sequences"), std::string::npos);
  EXPECT_NE(bad("virtual_chunk_containers:\n  s3:\n    store: !s3 [1]\n").find("repo/config.yaml:3"), std::string::npos);
  EXPECT_NE(bad("virtual_chunk_containers:\n  s3:\n    url_prefix: 's3://x\n").find("unterminated"), std::string::npos);
  EXPECT_NE(bad("virtual_chunk_containers:\n  s3:\n    url_prefix: s3://x/\n").find("'s3' has no store"), std::string::npos);
  EXPECT_NE(bad("virtual_chunk_containers:\n    a: 1\n  b: 2\n").find("unexpected indentation"), std::string::npos);
  EXPECT_NE(bad("virtual_chunk_containers:\n  just text\n").find("expected 'key: value'"), std::string::npos);
  EXPECT_NE(bad("virtual_chunk_containers: [a]\n").find("cannot read virtual_chunk_containers"), std::string::npos);
}

// GCS and Azure declarations hold the object_store crate's string options: the ones lazycube
// has (a service-account key file, the storage account) become defaults, the rest are ignored.
TEST(IcechunkConfig, GcsAndAzureDeclarations) {
  const std::string yaml =
      "virtual_chunk_containers:\n"
      "  gcs:\n"
      "    url_prefix: gs://era5/\n"
      "    store: !gcs\n"
      "      GOOGLE_SERVICE_ACCOUNT: /keys/reader.json\n"
      "      google_bucket: era5\n"
      "  az:\n"
      "    url_prefix: az://cmip6/\n"
      "    store: !azure\n"
      "      azure_storage_account_name: planetary\n"
      "      azure_storage_use_emulator: 'false'\n";
  const auto cs = icechunk::containers_from_yaml(yaml, "config.yaml");
  ASSERT_EQ(cs.size(), 2u);  // in key order: az, gcs
  EXPECT_EQ(cs[0].kind, "azure");
  EXPECT_EQ(cs[0].options, (StoreOptions{{"account_name", "planetary"}}));
  EXPECT_EQ(cs[1].kind, "gcs");
  EXPECT_EQ(cs[1].options, (StoreOptions{{"token", "/keys/reader.json"}}));
}

TEST(IcechunkConfig, CorruptFlexBuffers) {
  const std::vector<std::uint8_t> garbage = {0xff, 0x13, 0x77, 0x01, 0x02, 0x09};
  const std::string m = message_of<MetadataError>(
      [&] { icechunk::containers_from_flexbuffers(garbage.data(), garbage.size(), "memory://repo"); });
  EXPECT_NE(m.find("memory://repo: corrupt repository configuration"), std::string::npos) << m;
  EXPECT_TRUE(icechunk::containers_from_flexbuffers(nullptr, 0, "memory://repo").empty());
}

}  // namespace
}  // namespace lazycube
