// Icechunk bad input: hand-made corrupt copies of the spec 2 fixture repository (truncated,
// wrong magic, spec version, file type or compression, garbage FlatBuffers, missing snapshot,
// manifest or chunk files, chunk files shorter than their references). Each is a typed error
// naming the file, never a crash or fill values. Also the object id names (Crockford base32),
// and integrity (issue 32): a snapshot or manifest file replaced by another file of the same
// repository (swapped, renamed over, a manifest under a snapshot's name) is a MetadataError naming
// the file and both ids, while every snapshot the replacement does not touch reads as before.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>

#include "icechunk/object_id.hpp"
#include "icechunk_test_writer.hpp"
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

  // Everything snapshot `id` presents, by key: the bytes of each key its store lists, or the
  // StoreError reading it gives (the virtual chunk: no container is authorised here). A
  // MetadataError (a replaced snapshot or manifest) propagates.
  std::map<std::string, std::string> content(const std::string& id) const {
    icechunk::IcechunkOptions options;
    options.version.snapshot = id;
    auto store = icechunk::make_icechunk_store(open_repo(), options);
    std::map<std::string, std::string> out;
    for (const auto& key : store->list("")) {
      try {
        const auto b = store->get(key);
        out[key] = b ? std::string(reinterpret_cast<const char*>(b->data()), b->size()) : "<absent>";
      } catch (const StoreError& e) {
        out[key] = std::string("StoreError: ") + e.what();
      }
    }
    return out;
  }

  std::vector<std::string> files_in(const std::string& sub) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_ / sub)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

  // The content of every snapshot of the repository, by id.
  std::map<std::string, std::map<std::string, std::string>> all_content() const {
    std::map<std::string, std::map<std::string, std::string>> out;
    for (const auto& id : files_in("snapshots")) out[id] = content(id);
    return out;
  }

  // With files under `sub` replaced (`replaced`: name -> the id the file under that name now
  // carries): every snapshot reads as `before`, or is a MetadataError naming one replaced file,
  // the id it was read as and the id it carries; returns how many snapshots raised it.
  int check_replaced(const std::map<std::string, std::map<std::string, std::string>>& before, const std::string& sub,
                     const std::map<std::string, std::string>& replaced) const {
    int refused = 0;
    for (const auto& [id, expected] : before) {
      SCOPED_TRACE(sub + ": " + ::testing::PrintToString(replaced) + ", reading snapshot " + id);
      try {
        EXPECT_EQ(content(id), expected);
      } catch (const MetadataError& e) {
        const std::string m = e.what();
        bool named = false;
        for (const auto& [name, carried] : replaced)
          named = named || (m.find((dir_ / sub / name).string() + ": ") != std::string::npos &&
                            m.find("carries id " + carried + ", not the id " + name + " it was read as") != std::string::npos);
        EXPECT_TRUE(named) << m;
        ++refused;
      } catch (const StoreError& e) {
        // A replacement larger than the size the snapshot records for the file is refused before
        // its id is read (issue 32: a manifest's fetch is bounded by its recorded size).
        const std::string m = e.what();
        bool named = false;
        for (const auto& [name, carried] : replaced)
          named = named || (m.find((dir_ / sub / name).string() + ": ") != std::string::npos &&
                            m.find("bytes the object may hold") != std::string::npos);
        EXPECT_TRUE(named) << m;
        ++refused;
      }
    }
    return refused;
  }

  // Every ordered pair of files under `sub` (manifests, snapshots): the first copied over the
  // second's name, then (`swap`) the two exchanged. Never other values: a MetadataError or the
  // same content.
  void check_replacements(const std::string& sub) {
    const auto before = all_content();
    const auto names = files_in(sub);
    ASSERT_GE(names.size(), 2u);
    std::map<std::string, std::string> original;
    for (const auto& n : names) original[n] = test::read_file(dir_ / sub / n);
    int refused = 0;
    for (const auto& a : names)
      for (const auto& b : names) {
        if (a == b) continue;
        test::write_file(dir_ / sub / b, original[a]);
        refused += check_replaced(before, sub, {{b, a}});
        test::write_file(dir_ / sub / b, original[b]);
      }
    EXPECT_GE(refused, static_cast<int>(names.size()));  // each file is read by some snapshot
    // A swap (each renamed over the other): both refused.
    fs::rename(dir_ / sub / names[0], dir_ / "tmp");
    fs::rename(dir_ / sub / names[1], dir_ / sub / names[0]);
    fs::rename(dir_ / "tmp", dir_ / sub / names[1]);
    EXPECT_GE(check_replaced(before, sub, {{names[0], names[1]}, {names[1], names[0]}}), 2);
    fs::rename(dir_ / sub / names[0], dir_ / "tmp");
    fs::rename(dir_ / sub / names[1], dir_ / sub / names[0]);
    fs::rename(dir_ / "tmp", dir_ / sub / names[1]);
    EXPECT_EQ(all_content(), before);  // restored: the same values
  }

  // Each manifest under each snapshot's name: the file type is checked before anything else.
  void check_manifest_as_snapshot() {
    const auto before = all_content();
    for (const auto& s : files_in("snapshots")) {
      const std::string original = test::read_file(dir_ / "snapshots" / s);
      for (const auto& m : files_in("manifests")) {
        SCOPED_TRACE("manifest " + m + " under snapshots/" + s);
        test::write_file(dir_ / "snapshots" / s, test::read_file(dir_ / "manifests" / m));
        const std::string msg = message_of<MetadataError>([&] { content(s); });
        EXPECT_NE(msg.find((dir_ / "snapshots" / s).string() +
                           ": an Icechunk manifest file (id " + m + ") where the snapshot file " + s + " was expected"),
                  std::string::npos)
            << msg;
      }
      test::write_file(dir_ / "snapshots" / s, original);
    }
    EXPECT_EQ(all_content(), before);
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
      {"file type", [](std::string& b) { b[37] = 1; }, "an Icechunk snapshot file (id "},
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

TEST_F(IcechunkCorrupt, ReplacedManifestsAreRefused) { check_replacements("manifests"); }
TEST_F(IcechunkCorrupt, ReplacedSnapshotsAreRefused) { check_replacements("snapshots"); }
TEST_F(IcechunkCorrupt, ManifestUnderASnapshotNameIsRefused) { check_manifest_as_snapshot(); }

// Spec 1: refs, snapshots and config.yaml as separate files.
class IcechunkCorruptV1 : public IcechunkCorrupt {
 protected:
  std::string source() const override { return "test-repo-v1"; }
};

// Icechunk 1.x files carry their ids too: the same checks hold (and the unmodified copy reads).
TEST_F(IcechunkCorruptV1, ReplacedManifestsAreRefused) { check_replacements("manifests"); }
TEST_F(IcechunkCorruptV1, ReplacedSnapshotsAreRefused) { check_replacements("snapshots"); }
TEST_F(IcechunkCorruptV1, ManifestUnderASnapshotNameIsRefused) { check_manifest_as_snapshot(); }

// Spec 2 migrated from 1: old snapshots keep the v1 encoding.
class IcechunkCorruptMigrated : public IcechunkCorrupt {
 protected:
  std::string source() const override { return "test-repo-v2-migrated"; }
};

TEST_F(IcechunkCorruptMigrated, ReplacedSnapshotsAreRefused) { check_replacements("snapshots"); }

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

// Without shared data: a repository of lazycube's test writer (two arrays, a manifest each,
// uncompressed payloads) with its manifests swapped, a manifest under the snapshot's name, and a
// snapshot whose stored id was changed.
TEST(IcechunkIdsGenerated, ReplacedFilesAreRefused) {
  namespace w = test::icechunk_writer;
  test::TempDir tmp;
  const fs::path dir = tmp.path() / "repo";
  auto array = [](int fill) {
    return R"({"zarr_format": 3, "node_type": "array", "shape": [2], "data_type": "int8",
      "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
      "chunk_key_encoding": {"name": "default"}, "fill_value": )" + std::to_string(fill) +
           R"(, "codecs": [{"name": "bytes"}]})";
  };
  w::ManifestSpec ma{{{0, 1}}, {{w::Ref::Kind::Inline, {0}, std::string("\1\2", 2)}}, ""};
  w::ManifestSpec mb{{{0, 1}}, {{w::Ref::Kind::Inline, {0}, std::string("\3\4", 2)}}, ""};
  w::write_repository(dir, {{"/", R"({"zarr_format": 3, "node_type": "group"})"},
                            {"/a", array(0), true, {ma}},
                            {"/b", array(0), true, {mb}}});
  auto read = [&](const std::string& path) {
    auto store = icechunk::make_icechunk_store(icechunk::Repository::open(open_location(dir.string())));
    const NDArray a = zarr::Hierarchy::open(Location{store, path}).array("")->read_all();
    const auto v = a.values<std::int8_t>();
    return std::vector<std::int8_t>(v.begin(), v.end());
  };
  EXPECT_EQ(read("a"), (std::vector<std::int8_t>{1, 2}));
  EXPECT_EQ(read("b"), (std::vector<std::int8_t>{3, 4}));
  const std::string m1 = w::crockford(w::id12(1)), m2 = w::crockford(w::id12(2)), s = w::crockford(w::id12(100));
  const fs::path f1 = dir / "manifests" / m1, f2 = dir / "manifests" / m2, fs_ = dir / "snapshots" / s;
  const std::string b1 = test::read_file(f1), b2 = test::read_file(f2), bs = test::read_file(fs_);
  // Swapped manifests: both arrays would read the other's values; both are refused.
  test::write_file(f1, b2);
  test::write_file(f2, b1);
  EXPECT_MESSAGE(MetadataError, read("a"),
                 f1.string() + ": the Icechunk manifest file carries id " + m2 + ", not the id " + m1 + " it was read as");
  EXPECT_MESSAGE(MetadataError, read("b"),
                 f2.string() + ": the Icechunk manifest file carries id " + m1 + ", not the id " + m2 + " it was read as");
  test::write_file(f1, b1);
  test::write_file(f2, b2);
  // A manifest under the snapshot's name.
  test::write_file(fs_, b1);
  EXPECT_MESSAGE(MetadataError, read("a"),
                 fs_.string() + ": an Icechunk manifest file (id " + m1 + ") where the snapshot file " + s + " was expected");
  // A snapshot carrying another id (its 12 id bytes changed in the uncompressed payload).
  std::string other = bs;
  const auto sid = w::id12(100);
  const std::string id_bytes(reinterpret_cast<const char*>(sid.bytes()->data()), 12);
  const auto at = other.find(id_bytes);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(other.find(id_bytes, at + 1), std::string::npos);
  other[at + 11] = static_cast<char>(other[at + 11] ^ 0x01);
  std::array<std::uint8_t, 12> changed{};
  std::memcpy(changed.data(), other.data() + at, 12);
  test::write_file(fs_, other);
  EXPECT_MESSAGE(MetadataError, read("a"),
                 fs_.string() + ": the Icechunk snapshot file carries id " + icechunk::encode_id(changed) +
                     ", not the id " + s + " it was read as");
  // Restored: the same values.
  test::write_file(fs_, bs);
  EXPECT_EQ(read("a"), (std::vector<std::int8_t>{1, 2}));
  EXPECT_EQ(read("b"), (std::vector<std::int8_t>{3, 4}));
}

}  // namespace
}  // namespace lazycube
