// One contract every store backend must honour, run against real servers on 127.0.0.1:
// file, http (nginx), s3 (moto), gcs (the XML API path through an endpoint override to moto,
// with a service account's tokens from tests/servers/gcs_token_server.py) and az (Azurite,
// SharedKey through a connection string). get / ranges incl. suffix and offset / a read starting
// at the object's end / missing keys / get_many / listing (in pages too) / concurrent reads, and every array of
// the shared conformance fixtures read remotely, value for value identical to the local read.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "lazycube/error.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "store_backends.hpp"
#include "test_support.hpp"

namespace lazycube {
namespace {

using test::TempDir;
namespace fs = std::filesystem;

std::string blob_bytes() {
  std::string s(1000, '\0');
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>((i * 7 + 3) & 0xff);
  return s;
}

// The small tree every backend serves under "contract/".
const TempDir& contract_tree() {
  static TempDir dir;
  static bool written = false;
  if (!written) {
    test::write_file(dir.path() / "contract" / "blob.bin", blob_bytes());
    test::write_file(dir.path() / "contract" / "a" / "b.txt", std::string("hello"));
    test::write_file(dir.path() / "contract" / "a" / "c" / "d.txt", std::string("world"));
    written = true;
  }
  return dir;
}

fs::path fixtures_dir() {
  const auto data = test::shared_data_dir();
  return data.empty() ? fs::path() : data / "zarr-fixtures";
}

// gs:// with a service account's tokens on every request (moto does not check them).
constexpr test::BackendChoices kChoices{.gcs_service_account = true};

struct ContractBackend {
  std::string contract_url;  // URL of the contract/ tree
  std::string fixtures_url;  // URL of the zarr-fixtures tree ("" when not served)
  StoreOptions options;
  bool lists = true;
};

// The backend named `name` (its servers started once per process, store_backends.hpp); nullopt +
// reason when it cannot run here.
std::optional<ContractBackend> backend(const std::string& name, std::string& skip, bool with_fixtures) {
  const auto contract = test::serve_folder(name, contract_tree().path() / "contract", "contract", kChoices);
  if (!contract) {
    skip = contract.skip;
    return std::nullopt;
  }
  std::string fixtures_url;
  if (with_fixtures && !fixtures_dir().empty()) fixtures_url = test::serve_folder(name, fixtures_dir(), "fixtures", kChoices).url;
  return ContractBackend{contract.url, fixtures_url, contract.read, contract.lists};
}

std::string text(const std::optional<Buffer>& b) {
  return b ? std::string(reinterpret_cast<const char*>(b->data()), b->size()) : std::string("<absent>");
}

std::string join_key(const std::string& path, const std::string& key) { return path.empty() ? key : path + "/" + key; }

class StoreContract : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string skip;
    env_ = std::make_unique<test::CleanCloudEnv>(home_.str());
    b_ = backend(GetParam(), skip, with_fixtures());
    if (!b_) GTEST_SKIP() << skip;
    loc_ = open_location(b_->contract_url, b_->options);
  }
  virtual bool with_fixtures() const { return false; }
  std::string key(const std::string& k) const { return join_key(loc_.path, k); }

  TempDir home_;
  std::unique_ptr<test::CleanCloudEnv> env_;  // no stray credentials from the environment
  std::optional<ContractBackend> b_;
  Location loc_;
};

TEST_P(StoreContract, GetRangesSuffixOffsetAndMissingKeys) {
  Store& s = *loc_.store;
  const std::string blob = blob_bytes();
  EXPECT_EQ(text(s.get(key("blob.bin"))), blob);
  EXPECT_EQ(text(s.get(key("blob.bin"), ByteRange::range(10, 20))), blob.substr(10, 20));
  EXPECT_EQ(text(s.get(key("blob.bin"), ByteRange::suffix(16))), blob.substr(984));
  EXPECT_EQ(text(s.get(key("blob.bin"), ByteRange::from(990))), blob.substr(990));
  EXPECT_EQ(text(s.get(key("blob.bin"), ByteRange::range(995, 100))), blob.substr(995));  // clipped
  EXPECT_EQ(text(s.get(key("a/b.txt"))), "hello");
  EXPECT_FALSE(s.get(key("no/such/key")).has_value());
  EXPECT_FALSE(s.get(key("blob.bin.missing"), ByteRange::range(0, 4)).has_value());
  EXPECT_EQ(s.size(key("blob.bin")), std::optional<std::uint64_t>(1000));
  EXPECT_FALSE(s.size(key("nope")).has_value());
  EXPECT_THROW(s.get(key("blob.bin"), ByteRange::range(2000, 4)), StoreError);
}

// A read starting exactly at the object's end is empty on every backend (as the file store
// does); one starting past the end is an error on every backend.
TEST_P(StoreContract, ReadStartingAtTheEndIsEmpty) {
  Store& s = *loc_.store;
  for (const ByteRange r : {ByteRange::from(1000), ByteRange::range(1000, 4)}) {
    SCOPED_TRACE(r.describe());
    auto at_end = s.get(key("blob.bin"), r);
    ASSERT_TRUE(at_end.has_value());
    EXPECT_EQ(at_end->size(), 0u);
    auto many = s.get_many({{key("blob.bin"), r}, {key("blob.bin"), ByteRange::range(0, 4)}});
    ASSERT_TRUE(many[0].has_value());
    EXPECT_EQ(many[0]->size(), 0u);
    EXPECT_EQ(text(many[1]), blob_bytes().substr(0, 4));
  }
  EXPECT_THROW(s.get(key("blob.bin"), ByteRange::from(1001)), StoreError);
  EXPECT_THROW(s.get(key("blob.bin"), ByteRange::range(1001, 4)), StoreError);
  EXPECT_FALSE(s.get(key("missing.bin"), ByteRange::from(1000)).has_value());
}

TEST_P(StoreContract, GetManyMixesRequestKinds) {
  const std::string blob = blob_bytes();
  auto r = loc_.store->get_many({{key("blob.bin"), ByteRange::range(0, 8)},
                                 {key("blob.bin"), ByteRange::range(12, 8)},  // near the first: may coalesce
                                 {key("blob.bin"), ByteRange::suffix(4)},
                                 {key("missing"), ByteRange::full()},
                                 {key("a/c/d.txt"), ByteRange::full()}});
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(text(r[0]), blob.substr(0, 8));
  EXPECT_EQ(text(r[1]), blob.substr(12, 8));
  EXPECT_EQ(text(r[2]), blob.substr(996));
  EXPECT_FALSE(r[3].has_value());
  EXPECT_EQ(text(r[4]), "world");
}

TEST_P(StoreContract, ListsLikeTheFileStore) {
  if (!b_->lists) {
    try {
      loc_.store->list(loc_.path);
      FAIL() << "listing over plain HTTP should be refused";
    } catch (const StoreError& e) {
      EXPECT_NE(std::string(e.what()).find("listing"), std::string::npos) << e.what();
    }
    return;
  }
  std::vector<std::string> keys;
  for (const auto& k : loc_.store->list(loc_.path)) keys.push_back(loc_.path.empty() ? k : k.substr(loc_.path.size() + 1));
  EXPECT_EQ(keys, (std::vector<std::string>{"a/b.txt", "a/c/d.txt", "blob.bin"}));
  EXPECT_EQ(loc_.store->list_dir(loc_.path), (std::vector<std::string>{"a", "blob.bin"}));
  EXPECT_EQ(loc_.store->list_dir(key("a")), (std::vector<std::string>{"b.txt", "c"}));
}

// Listing in pages of two keys: the continuation tokens are followed to the end.
TEST_P(StoreContract, ListsAcrossPages) {
  if (!b_->lists) GTEST_SKIP() << "plain HTTP does not list";
  StoreOptions paged = b_->options;
  if (GetParam() != "file") paged["list_page_size"] = "2";
  const Location loc = open_location(b_->contract_url, paged);
  std::vector<std::string> keys;
  const std::uint64_t before = loc.store->stats().requests;
  for (const auto& k : loc.store->list(loc.path)) keys.push_back(loc.path.empty() ? k : k.substr(loc.path.size() + 1));
  EXPECT_EQ(keys, (std::vector<std::string>{"a/b.txt", "a/c/d.txt", "blob.bin"}));
  if (GetParam() != "file") {
    EXPECT_GE(loc.store->stats().requests - before, 2u) << "three keys, two a page";
  }
  EXPECT_EQ(loc.store->list_dir(loc.path), (std::vector<std::string>{"a", "blob.bin"}));
}

// Sixteen threads reading different ranges of one object at once get their own bytes.
TEST_P(StoreContract, ConcurrentReadsGetTheirOwnBytes) {
  const std::string blob = blob_bytes();
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 4; ++k) {
        const std::uint64_t off = static_cast<std::uint64_t>(t * 50 + k * 7);
        if (text(loc_.store->get(key("blob.bin"), ByteRange::range(off, 33))) != blob.substr(off, 33)) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

ByteView bytes_of(const std::string& s) { return {reinterpret_cast<const std::byte*>(s.data()), s.size()}; }

// The writer's store API: put, overwrite, read back (ranges across part boundaries too),
// uploads in parts above part_size (S3/GCS multipart, Azure block lists), empty objects,
// remove (a missing key too); plain HTTP is read-only. Written under "written/" beside the
// contract tree, so the read tests' listings are unchanged.
TEST_P(StoreContract, PutOverwriteReadBackAndRemove) {
  // The bucket reads anonymously; s3 writes are signed (SigV4) with moto's IAM user.
  const auto root = test::backend_root(GetParam(), "written-" + GetParam(), kChoices);
  StoreOptions options = root.write;
  if (GetParam() != "file") options["part_size"] = std::to_string(5 << 20);
  const Location w = open_location(root.url, options);
  Store& s = *w.store;
  if (GetParam() == "http") {
    EXPECT_FALSE(s.writable());
    const std::string msg = test::message_of<StoreError>([&] { s.put("x.bin", bytes_of("x")); });
    EXPECT_NE(msg.find("read-only"), std::string::npos) << msg;
    EXPECT_THROW(s.remove("x.bin"), StoreError);
    return;
  }
  ASSERT_TRUE(s.writable());
  s.put("x/small.bin", bytes_of("first version"));
  EXPECT_EQ(text(s.get("x/small.bin")), "first version");
  s.put("x/small.bin", bytes_of("second"));
  EXPECT_EQ(text(s.get("x/small.bin")), "second");
  // 11 MiB + 3 bytes in 5 MiB parts: three parts, the last one short.
  std::string big((11u << 20) + 3, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 131 + i / 4096) & 0xff);
  s.put("x/big.bin", bytes_of(big));
  EXPECT_EQ(s.size("x/big.bin"), std::optional<std::uint64_t>(big.size()));
  EXPECT_TRUE(text(s.get("x/big.bin")) == big);
  const std::uint64_t seam = (5u << 20) - 2;
  EXPECT_EQ(text(s.get("x/big.bin", ByteRange::range(seam, 4))), big.substr(seam, 4));
  s.put("x/empty.bin", {});
  EXPECT_EQ(s.size("x/empty.bin"), std::optional<std::uint64_t>(0));
  if (b_->lists) {
    EXPECT_EQ(s.list("x"), (std::vector<std::string>{"x/big.bin", "x/empty.bin", "x/small.bin"}));
  }
  s.remove("x/small.bin");
  EXPECT_FALSE(s.get("x/small.bin").has_value());
  EXPECT_NO_THROW(s.remove("x/small.bin"));  // already gone
  s.remove("x/big.bin");
  s.remove("x/empty.bin");
  if (b_->lists) {
    EXPECT_TRUE(s.list("x").empty());
  }
}

// With moto checking every signature: writes signed with the right key (a plain PUT, and a
// multipart upload whose initiate/part/complete/abort requests carry query strings) land; a wrong
// secret is refused (HTTP 403), writes nothing and is never shown.
TEST(S3Writes, SignedWritesLandAndAWrongSecretIsRefused) {
  const auto root = test::backend_root("s3", "written-signed");
  if (!root) GTEST_SKIP() << root.skip;
  TempDir home;
  test::CleanCloudEnv env(home.str());
  test::MotoSignatureChecks checks(root.moto);
  const std::string& url = root.url;
  StoreOptions good = root.write;
  good["part_size"] = std::to_string(5 << 20);
  const Location w = open_location(url, good);
  std::string big((6u << 20) + 1, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 31 + i / 1000) & 0xff);
  w.store->put("small.bin", bytes_of("signed"));
  w.store->put("big.bin", bytes_of(big));
  EXPECT_EQ(text(w.store->get("small.bin")), "signed");
  EXPECT_TRUE(text(w.store->get("big.bin")) == big);

  StoreOptions wrong = good;
  wrong["secret"] = "wrong-secret-x";
  const Location bad = open_location(url, wrong);
  const std::string msg = test::message_of<AuthError>([&] { bad.store->put("refused.bin", bytes_of("data")); });
  EXPECT_NE(msg.find("HTTP 403"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("wrong-secret-x"), std::string::npos) << msg;
  EXPECT_THROW(bad.store->put("refused-big.bin", bytes_of(big)), AuthError);
  EXPECT_FALSE(w.store->get("refused.bin").has_value());
  EXPECT_FALSE(w.store->get("refused-big.bin").has_value());
  w.store->remove("small.bin");
  w.store->remove("big.bin");
  EXPECT_FALSE(w.store->get("big.bin").has_value());
}

class FixtureContract : public StoreContract {
 protected:
  bool with_fixtures() const override { return true; }
};

TEST_P(FixtureContract, ReadsEveryFixtureArrayLikeTheLocalRead) {
  if (b_->fixtures_url.empty()) GTEST_SKIP() << "shared conformance data not found (../shared/data)";
  std::size_t arrays = 0;
  for (auto it = fs::recursive_directory_iterator(fixtures_dir()); it != fs::recursive_directory_iterator(); ++it) {
    if (!it->is_directory()) continue;
    const bool v3 = fs::exists(it->path() / "zarr.json") &&
                    test::read_file(it->path() / "zarr.json").find("\"array\"") != std::string::npos;
    if (!v3 && !fs::exists(it->path() / ".zarray")) continue;
    const std::string rel = fs::relative(it->path(), fixtures_dir()).generic_string();
    SCOPED_TRACE(rel);
    const NDArray local = zarr::Hierarchy::open(open_location(it->path().string())).array("")->read_all();
    const NDArray remote =
        zarr::Hierarchy::open(open_location(b_->fixtures_url + "/" + rel, b_->options)).array("")->read_all();
    ASSERT_EQ(remote.shape, local.shape);
    ASSERT_EQ(remote.dtype, local.dtype);
    EXPECT_EQ(remote.strings, local.strings);
    ASSERT_EQ(remote.data.size(), local.data.size());
    if (!local.data.empty()) {  // string arrays have no byte buffer (memcmp on null is UB)
      EXPECT_EQ(0, std::memcmp(remote.data.data(), local.data.data(), local.data.size()));
    }
    ++arrays;
  }
  EXPECT_GE(arrays, 50u);
}

const auto kBackends = ::testing::Values("file", "http", "s3", "gcs", "az");
std::string backend_name(const ::testing::TestParamInfo<std::string>& i) { return i.param; }
INSTANTIATE_TEST_SUITE_P(Backends, StoreContract, kBackends, backend_name);
INSTANTIATE_TEST_SUITE_P(Backends, FixtureContract, kBackends, backend_name);

}  // namespace
}  // namespace lazycube
