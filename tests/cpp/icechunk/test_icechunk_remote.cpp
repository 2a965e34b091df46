// The Icechunk fixture repositories over HTTP (nginx), S3 (moto, SigV4 on), GCS and Azure, served
// by the store backend fixtures (store_backends.hpp): refs with spaces and punctuation ("it
// works!"), the deleted tag refused, inline chunks per ref, and lazycube::open recognising a
// remote repository.
#include <gtest/gtest.h>

#include <sstream>

#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/icechunk/repository.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "hostile_server.hpp"
#include "nginx_server.hpp"
#include "store_backends.hpp"
#include "test_support.hpp"

namespace lazycube {
namespace {

using test::message_of;

const char* const kRepos[] = {"test-repo-v1", "test-repo-v2", "test-repo-v2-migrated"};

// `fixtures`: the Icechunk fixture repositories (../shared/data/icechunk-fixtures).
#define LAZYCUBE_REQUIRE_ICECHUNK_FIXTURES(fixtures)                                                  \
  LAZYCUBE_REQUIRE_SHARED_DATA(fixtures##_shared);                                                   \
  const auto fixtures = fixtures##_shared / "icechunk-fixtures";                                     \
  if (!std::filesystem::exists(fixtures)) GTEST_SKIP() << "Icechunk fixtures not found: " << fixtures.string()

std::vector<std::int8_t> small_chunks(const std::shared_ptr<icechunk::Repository>& repo, icechunk::VersionRef v) {
  icechunk::IcechunkOptions options;
  options.version = std::move(v);
  auto store = icechunk::make_icechunk_store(repo, options);
  auto r = zarr::Hierarchy::open(Location{store, "group1/small_chunks"}).array("")->read_all();
  auto values = r.values<std::int8_t>();
  return {values.begin(), values.end()};
}

// The checks every remote copy passes (`url` opened through the store registry).
void check_remote_repository(const std::string& url, const StoreOptions& options) {
  SCOPED_TRACE(url);
  auto repo = icechunk::Repository::open(open_location(url, options));
  const std::vector<std::int8_t> deleted = {84, 84, 84, 84, 8};
  EXPECT_EQ(small_chunks(repo, {}), std::vector<std::int8_t>(5, 84));
  EXPECT_EQ(small_chunks(repo, {.tag = "it works!"}), deleted);
  EXPECT_EQ(small_chunks(repo, {.tag = "it also works!"}), deleted);
  EXPECT_EQ(small_chunks(repo, {.branch = "my-branch"}), deleted);
  EXPECT_EQ(repo->history(repo->resolve({.tag = "it works!"})).size(), 5u);
  auto m = message_of<NotFound>([&] { repo->resolve({.tag = "deleted"}); });
  EXPECT_NE(m.find("ref not found: tag 'deleted'"), std::string::npos) << m;
  EXPECT_THROW(repo->resolve({.branch = "nope"}), NotFound);
  OpenOptions open_options;
  open_options.storage_options = options;
  EXPECT_TRUE(open(url, open_options).variable_names().empty());  // the root group, at main
}

TEST(IcechunkRemote, Http) {
  LAZYCUBE_REQUIRE_ICECHUNK_FIXTURES(fixtures);
  LAZYCUBE_SERVE_OR_SKIP(http, "http", fixtures, "icechunk");
  for (const char* name : kRepos) check_remote_repository(http.url + "/" + name, http.read);
}

// Icechunk 2.2 serves repositories over HTTP(S) behind redirects (a CDN or a presigning
// front): every request here answers 302 to the nginx that holds the files, and every check of
// the plain HTTP test passes through it (refs, tags, branches, snapshots, manifests, chunks).
TEST(IcechunkRemote, HttpBehindRedirects) {
  LAZYCUBE_REQUIRE_ICECHUNK_FIXTURES(fixtures);
  LAZYCUBE_REQUIRE_NGINX();
  test::NginxServer files(fixtures);
  test::HostileServer front(fixtures);
  const std::string port = std::to_string(files.port());
  for (const char* name : kRepos) check_remote_repository(front.url() + "/redirect/" + port + "/" + name, {});
  // A redirect out of http(s) is refused naming both URLs, as for any HTTP store.
  const std::string m = message_of<Error>([&] {
    icechunk::Repository::open(open_location(front.url() + "/redirect-file/test-repo-v2"));
  });
  EXPECT_NE(m.find("file://"), std::string::npos) << m;
}

// Snapshot and manifest files are fetched once per repository: several stores (and versions
// sharing files) of one Repository read each over the network once.
// (A private nginx: the test counts the requests in its access log.)
TEST(IcechunkRemote, FilesFetchedOncePerRepository) {
  LAZYCUBE_REQUIRE_ICECHUNK_FIXTURES(fixtures);
  LAZYCUBE_REQUIRE_NGINX();
  test::NginxServer server(fixtures);
  auto repo = icechunk::Repository::open(open_location(server.url() + "/test-repo-v2"));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(small_chunks(repo, {}), std::vector<std::int8_t>(5, 84));
    EXPECT_EQ(small_chunks(repo, {.tag = "it works!"}), (std::vector<std::int8_t>{84, 84, 84, 84, 8}));
  }
  // Native chunks of big_chunks (19-byte objects), through get and get_each.
  icechunk::IcechunkOptions tagged;
  tagged.version.tag = "it works!";  // a snapshot already fetched above
  auto store = icechunk::make_icechunk_store(repo, tagged);
  EXPECT_EQ(store->get("group1/big_chunks/c/1/1")->size(), 19u);
  for (const auto& got : store->get_many({{"group1/big_chunks/c/0/1", {}}, {"group1/big_chunks/c/1/0", {}}}))
    EXPECT_EQ(got->size(), 19u);
  const std::string log = server.access_log();
  std::map<std::string, int> fetches;  // "GET /test-repo-v2/manifests/ID" -> times
  for (std::size_t at = log.find("\"GET "); at != std::string::npos; at = log.find("\"GET ", at + 1)) {
    const std::string request = log.substr(at + 1, log.find(' ', at + 5) - at - 1);
    if (request.find("/snapshots/") != std::string::npos || request.find("/manifests/") != std::string::npos)
      ++fetches[request];
  }
  EXPECT_EQ(fetches.size(), 5u) << log;  // two snapshots, two manifests of small_chunks, big_chunks' manifest
  for (const auto& [request, n] : fetches) EXPECT_EQ(n, 1) << request;
  // Whole native chunks go as plain GETs of their objects (no Range header, 200), which nginx
  // serves faster than 206 ranges. Log lines: CONN N STATUS "REQUEST" RANGE BYTES PROTOCOL.
  std::istringstream lines(log);
  int chunk_gets = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("\"GET ") == std::string::npos || line.find("/chunks/") == std::string::npos) continue;
    ++chunk_gets;
    const std::string after = line.substr(line.rfind('"') + 2);  // RANGE BYTES PROTOCOL
    EXPECT_TRUE(after.starts_with("- ")) << line;
    EXPECT_NE(line.find(" 200 \""), std::string::npos) << line;
  }
  EXPECT_EQ(chunk_gets, 3) << log;
}

TEST(IcechunkRemote, S3) {
  LAZYCUBE_REQUIRE_ICECHUNK_FIXTURES(fixtures);
  LAZYCUBE_SERVE_OR_SKIP(s3, "s3", fixtures, "icechunk");
  const std::string root = s3.url + "/";
  // Spec 1 keeps refs in keys like "refs/tag.it works!/ref.json". Read anonymously (moto's
  // checking off): SigV4-signed requests for keys holding '!' get 403 SignatureDoesNotMatch from
  // moto today (libcurl's signing and moto disagree on '!'; a store-layer issue, see
  // docs/icechunk.md), which spec 2 repositories never hit (their refs live in the `repo` file).
  check_remote_repository(root + "test-repo-v1", s3.read);
  auto v1 = icechunk::Repository::open(open_location(root + "test-repo-v1", s3.read));
  EXPECT_EQ(v1->tags(), (std::vector<std::string>{"it also works!", "it works!"}));  // S3 lists

  test::MotoSignatureChecks checks(s3.moto);
  check_remote_repository(root + "test-repo-v2", s3.write);
  check_remote_repository(root + "test-repo-v2-migrated", s3.write);
}

}  // namespace
}  // namespace lazycube

namespace lazycube {
namespace {

// gs:// (GCS's XML API, here moto through endpoint_url) and az:// (Azurite, SharedKey): an
// Icechunk repository is recognised at every URL the registry opens.
TEST(IcechunkRemote, GcsAndAzure) {
  LAZYCUBE_REQUIRE_ICECHUNK_FIXTURES(fixtures);
  LAZYCUBE_SERVE_OR_SKIP(gcs, "gcs", fixtures, "icechunk-gs");
  for (const char* name : kRepos) check_remote_repository(gcs.url + "/" + name, gcs.read);
  LAZYCUBE_SERVE_OR_SKIP(az, "az", fixtures, "icechunk");
  for (const char* name : kRepos) check_remote_repository(az.url + "/" + name, az.read);
}

}  // namespace
}  // namespace lazycube
