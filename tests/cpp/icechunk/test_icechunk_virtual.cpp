// Virtual chunks of the Icechunk fixtures: group1/big_chunks c/0/0 is a reference to
// s3://testbucket/can_read_old/chunk-1 (19 bytes). moto serves it (SigV4 on); the reader must
// use the container the user authorised (endpoint overridden, credentials given) and refuse
// everything else with an error: never fill values for a virtual chunk it cannot read.
#include <gtest/gtest.h>

#include <cmath>

#include "lazycube/error.hpp"
#include "lazycube/icechunk/repository.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "moto_fixture.hpp"
#include "test_support.hpp"

namespace lazycube {
namespace {

using icechunk::IcechunkOptions;
using test::message_of;

constexpr const char* kVirtualUrl = "s3://testbucket/can_read_old/chunk-1";

NDArray read_big_chunks(const std::filesystem::path& repo_dir, const std::map<std::string, StoreOptions>& containers) {
  IcechunkOptions options;
  options.virtual_chunk_containers = containers;
  auto store = icechunk::make_icechunk_store(icechunk::Repository::open(open_location(repo_dir.string())), options);
  return zarr::Hierarchy::open(Location{store, "group1/big_chunks"}).array("")->read_all();
}

// Puts `bytes` at s3://testbucket/can_read_old/chunk-1 (authentication off while uploading).
void put_virtual_object(const test::MotoServer& moto, const std::string& bytes) {
  test::TempDir tmp;
  test::write_file(tmp.path() / "chunk-1", bytes);
  moto.create_bucket("testbucket");
  moto.upload(tmp.str(), "can_read_old", "testbucket");
}

// One case for the three repositories: each moto set-up step is a Python start-up (~0.7 s).
TEST(IcechunkVirtual, ReadsAuthorisedContainersOnly) {
  LAZYCUBE_REQUIRE_SHARED_DATA(shared);
  std::vector<std::filesystem::path> repos;
  for (const char* name : {"test-repo-v1", "test-repo-v2", "test-repo-v2-migrated"}) {
    repos.push_back(shared / "icechunk-fixtures" / name);
    if (!std::filesystem::exists(repos.back())) GTEST_SKIP() << "Icechunk fixture not found: " << repos.back().string();
  }
  LAZYCUBE_REQUIRE_MOTO(moto);
  // The virtual chunk's bytes are those of any native chunk of the repositories.
  const std::string chunk = test::read_file(std::filesystem::directory_iterator(repos[0] / "chunks")->path());
  ASSERT_EQ(chunk.size(), 19u);

  put_virtual_object(*moto, chunk.substr(0, 10));  // shorter than the reference first
  moto->set_auth(true);
  struct AuthOff {
    const test::MotoServer* m;
    ~AuthOff() { m->set_auth(false); }
  } auth_off{moto};
  const StoreOptions container{{"endpoint_url", moto->endpoint}, {"region_name", "us-east-1"},
                               {"key", moto->key_id}, {"secret", moto->secret}};
  for (const auto& dir : repos) {
    SCOPED_TRACE(dir.filename().string());
    // Not authorised: an error naming the URL, never NaN.
    auto refused = message_of<StoreError>([&] { read_big_chunks(dir, {}); });
    EXPECT_NE(refused.find(kVirtualUrl), std::string::npos) << refused;
    EXPECT_NE(refused.find("not authorised"), std::string::npos) << refused;
    // The container the repository's configuration declares (spec 1: config.yaml; spec 2: the
    // repo file), named in the refusal.
    EXPECT_NE(refused.find("the repository declares it as 's3://testbucket"), std::string::npos) << refused;
    auto other = message_of<StoreError>([&] { read_big_chunks(dir, {{"s3://otherbucket/", container}}); });
    EXPECT_NE(other.find("authorised: s3://otherbucket/"), std::string::npos) << other;
    auto sibling = message_of<StoreError>([&] { read_big_chunks(dir, {{"s3://testbucket/can_read_new", container}}); });
    EXPECT_NE(sibling.find("not authorised"), std::string::npos) << sibling;
    // Authorised, but the object is shorter than the reference: an error naming it.
    auto short_read = message_of<StoreError>([&] { read_big_chunks(dir, {{"s3://testbucket", container}}); });
    EXPECT_NE(short_read.find("reaches past the end of " + std::string(kVirtualUrl)), std::string::npos) << short_read;
    // Authorised with wrong credentials: the server's refusal, not fill values.
    StoreOptions bad = container;
    bad["secret"] = "wrong";
    EXPECT_THROW(read_big_chunks(dir, {{"s3://testbucket/", bad}}), AuthError);
  }

  // Authorised with the endpoint overridden and credentials: all 42.
  moto->set_auth(false);
  put_virtual_object(*moto, chunk);
  moto->set_auth(true);
  for (const auto& dir : repos) {
    SCOPED_TRACE(dir.filename().string());
    const NDArray all = read_big_chunks(dir, {{"s3://testbucket/", container}});
    auto v = all.values<float>();
    EXPECT_EQ(std::vector<float>(v.begin(), v.end()), std::vector<float>(100, 42.0f));
  }
}

}  // namespace
}  // namespace lazycube
