// Icechunk bad input: hand-made corrupt copies of the spec 2 fixture repository (truncated,
// wrong magic, spec version, file type or compression, garbage FlatBuffers, missing snapshot,
// manifest or chunk files, chunk files shorter than their references). Each is a typed error
// naming the file, never a crash or fill values. Also the object id names (Crockford base32).
#include <gtest/gtest.h>

#include "../../src/icechunk/object_id.hpp"
#include "lazycube/error.hpp"
#include "lazycube/icechunk/repository.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "test_support.hpp"

namespace lazycube {
namespace {

namespace fs = std::filesystem;
using test::message_of;

TEST(IcechunkIds, CrockfordBase32) {
  // The spec's example: the initial snapshot id.
  const icechunk::Id12 initial = {0x0b, 0x1c, 0xc8, 0xd6, 0x78, 0x75, 0x80, 0xf0, 0xe3, 0x3a, 0x65, 0x34};
  EXPECT_EQ(icechunk::encode_id(initial), "1CECHNKREP0F1RSTCMT0");
  EXPECT_EQ(icechunk::decode_id12("1CECHNKREP0F1RSTCMT0"), initial);
  const icechunk::Id12 ones = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(icechunk::decode_id12(icechunk::encode_id(ones)), ones);
  EXPECT_FALSE(icechunk::decode_id12("1cechnkrep0f1rstcmt0"));  // lowercase
  EXPECT_FALSE(icechunk::decode_id12("1CECHNKREP0F1RSTCMTU"));  // U is not in the alphabet
  EXPECT_FALSE(icechunk::decode_id12("1CECHNKREP0F1RSTCMT"));   // 19 characters
  EXPECT_FALSE(icechunk::decode_id12("1CECHNKREP0F1RSTCMT1"));  // non-zero padding bits
}

// A writable copy of a fixture repository.
class IcechunkCorrupt : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto shared = test::shared_data_dir();
    const auto src = shared.empty() ? fs::path() : shared / "icechunk-fixtures" / source();
    if (src.empty() || !fs::exists(src)) GTEST_SKIP() << "Icechunk fixture not found (../shared/data/icechunk-fixtures)";
    fs::copy(src, tmp_.path() / "repo", fs::copy_options::recursive);
    for (const auto& e : fs::recursive_directory_iterator(tmp_.path()))
      fs::permissions(e.path(), fs::perms::owner_read | fs::perms::owner_write | fs::perms::owner_exec,
                      fs::perm_options::add);
    dir_ = tmp_.path() / "repo";
  }

  virtual std::string source() const { return "test-repo-v2"; }

  std::shared_ptr<icechunk::Repository> open_repo() const {
    return icechunk::Repository::open(open_location(dir_.string()));
  }

  // Rewrites file `rel` with `edit` applied to its bytes.
  void edit(const std::string& rel, const std::function<void(std::string&)>& f) const {
    std::string bytes = test::read_file(dir_ / rel);
    f(bytes);
    test::write_file(dir_ / rel, bytes);
  }

  std::string main_snapshot() const { return open_repo()->resolve({}); }

  NDArray read_big_chunks(const std::string& snapshot) const {
    icechunk::IcechunkOptions options;
    options.version.snapshot = snapshot;
    auto store = icechunk::make_icechunk_store(open_repo(), options);
    // The third commit ("fill data"): native chunks only.
    return zarr::Hierarchy::open(Location{store, "group1/big_chunks"}).array("")->read_all();
  }

  std::string fill_data_snapshot() const {
    auto repo = open_repo();
    return repo->history(repo->resolve({}))[1].id;
  }

  test::TempDir tmp_;
  fs::path dir_;
};

#define EXPECT_MESSAGE(E, statement, text)                                  \
  do {                                                                      \
    const std::string m = message_of<E>([&] { statement; });                \
    EXPECT_NE(m.find(text), std::string::npos) << m;                        \
  } while (0)

TEST_F(IcechunkCorrupt, RepoFileHeader) {
  const std::string original = test::read_file(dir_ / "repo");
  auto with = [&](const std::function<void(std::string&)>& f) {
    test::write_file(dir_ / "repo", original);
    edit("repo", f);
  };
  with([](std::string& b) { b.resize(20); });
  EXPECT_MESSAGE(MetadataError, open_repo(), "/repo: not an Icechunk file (20 bytes, shorter than the 39-byte header)");
  with([](std::string& b) { b[0] = 'X'; });
  EXPECT_MESSAGE(MetadataError, open_repo(), "/repo: not an Icechunk file (wrong magic bytes)");
  with([](std::string& b) { b[36] = 9; });
  EXPECT_MESSAGE(MetadataError, open_repo(), "/repo: unsupported Icechunk spec version 9");
  with([](std::string& b) { b[37] = 7; });
  EXPECT_MESSAGE(MetadataError, open_repo(), "/repo: unknown Icechunk file type 7");
  with([](std::string& b) { b[37] = 1; });
  EXPECT_MESSAGE(MetadataError, open_repo(), "/repo: an Icechunk snapshot file where a repo info file was expected");
  with([](std::string& b) { b[38] = 5; });
  EXPECT_MESSAGE(MetadataError, open_repo(), "/repo: unknown Icechunk compression 5");
  with([](std::string& b) { b.resize(b.size() - 10); });
  EXPECT_MESSAGE(CodecError, open_repo(), "/repo: cannot decompress");
  with([](std::string& b) {  // an uncompressed payload of garbage
    b.resize(39);
    b[38] = 0;
    b += std::string(64, '\x7f');
  });
  EXPECT_MESSAGE(MetadataError, open_repo(), "/repo: corrupt Icechunk repo info file (FlatBuffer verification failed)");
  with([](std::string& b) { b.resize(39); });  // nothing after the header
  EXPECT_THROW(open_repo(), Error);
}

TEST_F(IcechunkCorrupt, SnapshotFiles) {
  const std::string id = main_snapshot();
  fs::remove(dir_ / "snapshots" / id);
  EXPECT_MESSAGE(NotFound, icechunk::make_icechunk_store(open_repo()), "snapshots/" + id);
  // Garbage inside the compressed payload: a decompression or verification error naming it.
  const std::string other = fill_data_snapshot();
  edit("snapshots/" + other, [](std::string& b) {
    for (std::size_t i = 45; i < b.size(); i += 7) b[i] = static_cast<char>(b[i] ^ 0x5a);
  });
  icechunk::IcechunkOptions options;
  options.version.snapshot = other;
  EXPECT_MESSAGE(Error, icechunk::make_icechunk_store(open_repo(), options), "snapshots/" + other);
}

TEST_F(IcechunkCorrupt, ManifestAndChunkFiles) {
  const std::string snapshot = fill_data_snapshot();
  ASSERT_EQ(read_big_chunks(snapshot).values<float>()[0], 42.0f);
  // A chunk file shorter than its reference, then a missing one: errors naming the file.
  std::vector<fs::path> chunks;
  for (const auto& e : fs::directory_iterator(dir_ / "chunks")) chunks.push_back(e.path());
  for (const auto& c : chunks) test::write_file(c, std::string(5, '\0'));
  EXPECT_MESSAGE(StoreError, read_big_chunks(snapshot), "reaches past the end of");
  for (const auto& c : chunks) fs::remove(c);
  EXPECT_MESSAGE(StoreError, read_big_chunks(snapshot), "does not exist");
  // Missing manifests: NotFound naming the manifest file, not fill values.
  for (const auto& e : fs::directory_iterator(dir_ / "manifests")) fs::remove(e.path());
  EXPECT_MESSAGE(NotFound, read_big_chunks(snapshot), "Icechunk manifest file not found");
}

// Every way a manifest file can be broken: a typed error naming manifests/ID, never fill values.
TEST_F(IcechunkCorrupt, ManifestFileBytes) {
  const std::string snapshot = fill_data_snapshot();
  std::vector<std::string> manifests;
  for (const auto& e : fs::directory_iterator(dir_ / "manifests")) manifests.push_back("manifests/" + e.path().filename().string());
  std::map<std::string, std::string> original;
  for (const auto& m : manifests) original[m] = test::read_file(dir_ / m);
  auto with = [&](const std::function<void(std::string&)>& f) {
    for (const auto& m : manifests) {
      test::write_file(dir_ / m, original[m]);
      edit(m, f);
    }
  };
  struct Case {
    const char* what;
    std::function<void(std::string&)> edit;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"truncated header", [](std::string& b) { b.resize(30); }, "shorter than the 39-byte header"},
      {"wrong magic", [](std::string& b) { b[3] = 'X'; }, "wrong magic bytes"},
      {"spec version", [](std::string& b) { b[36] = 3; }, "unsupported Icechunk spec version 3"},
      {"file type", [](std::string& b) { b[37] = 1; }, "an Icechunk snapshot file where a manifest file was expected"},
      {"compression", [](std::string& b) { b[38] = 2; }, "unknown Icechunk compression 2"},
      {"truncated payload", [](std::string& b) { b.resize(b.size() / 2); }, "cannot decompress"},
      {"not zstd", [](std::string& b) { b[38] = 0; }, "FlatBuffer verification failed"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    with(c.edit);
    const std::string m = message_of<Error>([&] { read_big_chunks(snapshot); });
    EXPECT_NE(m.find("/manifests/"), std::string::npos) << m;
    EXPECT_NE(m.find(c.message), std::string::npos) << m;
  }
}

// Spec 1: refs, snapshots and config.yaml as separate files.
class IcechunkCorruptV1 : public IcechunkCorrupt {
 protected:
  std::string source() const override { return "test-repo-v1"; }
};

TEST_F(IcechunkCorruptV1, RefAndConfigFiles) {
  ASSERT_EQ(open_repo()->spec_version(), 1);
  const std::string config = test::read_file(dir_ / "config.yaml");
  test::write_file(dir_ / "config.yaml", "virtual_chunk_containers:\n  s3:\n    - not a mapping\n");
  EXPECT_MESSAGE(MetadataError, open_repo(), "config.yaml:3: cannot read the virtual chunk containers");
  test::write_file(dir_ / "config.yaml", config);
  test::write_file(dir_ / "refs" / "branch.main" / "ref.json", "{\"snapshot\": 12}");
  EXPECT_MESSAGE(MetadataError, open_repo(), "refs/branch.main/ref.json: not an Icechunk ref file");
  test::write_file(dir_ / "refs" / "branch.main" / "ref.json", "{\"snapshot\": \"AAAAAAAAAAAAAAAAAAA0\"}");
  EXPECT_MESSAGE(NotFound, icechunk::make_icechunk_store(open_repo()), "snapshots/AAAAAAAAAAAAAAAAAAA0");
  // A truncated snapshot of spec 1 (its history is read from the snapshot files).
  auto repo = open_repo();
  const std::string tip = repo->resolve({.branch = "my-branch"});
  edit("snapshots/" + tip, [](std::string& b) { b.resize(b.size() - 7); });
  EXPECT_MESSAGE(CodecError, open_repo()->history(tip), "snapshots/" + tip);
}

}  // namespace
}  // namespace lazycube
