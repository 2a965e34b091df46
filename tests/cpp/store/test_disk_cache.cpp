// The persistent chunk cache (storage option cache_dir) over a real nginx: hits cost no GET,
// a changed object is fetched again, versions/keys/ranges are kept apart, the byte budget holds
// with LRU eviction, a corrupt file is refetched, an unusable directory is a clear error.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <array>
#include <atomic>
#include <filesystem>
#include <set>
#include <thread>

#include "lazycube/error.hpp"
#include "lazycube/store/store.hpp"
#include "nginx_server.hpp"
#include "read_helpers.hpp"

using namespace lazycube;
using namespace lazycube::test;
namespace fs = std::filesystem;

namespace {

std::string pattern(std::size_t n, int seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + i / 7 + seed * 17) & 0xff);
  return s;
}

std::size_t gets_of(const std::string& log, const std::string& key) {
  std::size_t n = 0;
  for (std::size_t at = 0; (at = log.find("\"GET /" + key + " ", at)) != std::string::npos; ++at) ++n;
  return n;
}

std::size_t heads_of(const std::string& log, const std::string& key) {
  std::size_t n = 0;
  for (std::size_t at = 0; (at = log.find("\"HEAD /" + key + " ", at)) != std::string::npos; ++at) ++n;
  return n;
}

std::uint64_t dir_bytes(const fs::path& dir) {
  std::uint64_t n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".lcc") n += e.file_size();
  return n;
}

struct DiskCacheFixture : ::testing::Test {
  void SetUp() override {
    LAZYCUBE_REQUIRE_NGINX();
    for (int i = 0; i < 8; ++i) write_file(www.path() / ("c" + std::to_string(i)), pattern(10000, i));
    server = std::make_unique<NginxServer>(www.path());
  }
  std::shared_ptr<Store> open(std::uint64_t budget = 0) {
    StoreOptions o{{"cache_dir", cache.path().string()}};
    if (budget) o["cache_size"] = std::to_string(budget);
    return open_location(server->url(), o).store;
  }
  TempDir www, cache;
  std::unique_ptr<NginxServer> server;
};

}  // namespace

TEST_F(DiskCacheFixture, DiskCacheSecondReadIsAHitWithoutGet) {
  {
    auto s = open();
    EXPECT_EQ(as_string(*s->get("c1")), pattern(10000, 1));
    EXPECT_EQ(s->stats().cache_misses, 1u);
  }
  auto s = open();  // a new open (another process would do the same): HEAD, then the file
  EXPECT_EQ(as_string(*s->get("c1")), pattern(10000, 1));
  EXPECT_EQ(as_string(*s->get("c1")), pattern(10000, 1));
  const StoreStats st = s->stats();
  EXPECT_EQ(st.cache_hits, 2u);
  EXPECT_EQ(st.cache_misses, 0u);
  EXPECT_EQ(st.cache_bytes_saved, 20000u);
  EXPECT_FALSE(s->get("missing").has_value());
  while (server->logged_requests() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(gets_of(server->access_log(), "c1"), 1u);
}

TEST_F(DiskCacheFixture, DiskCacheKeepsKeysRangesAndUrlsApart) {
  auto s = open();
  EXPECT_EQ(as_string(*s->get("c2", ByteRange::range(100, 50))), pattern(10000, 2).substr(100, 50));
  EXPECT_EQ(as_string(*s->get("c2")), pattern(10000, 2));
  EXPECT_EQ(as_string(*s->get("c3")), pattern(10000, 3));
  EXPECT_EQ(as_string(*s->get("c2", ByteRange::suffix(10))), pattern(10000, 2).substr(9990));
  auto again = open();
  EXPECT_EQ(as_string(*again->get("c2", ByteRange::range(100, 50))), pattern(10000, 2).substr(100, 50));
  EXPECT_EQ(as_string(*again->get("c2", ByteRange::suffix(10))), pattern(10000, 2).substr(9990));
  EXPECT_EQ(again->stats().cache_hits, 2u);
  // The same key under another root URL is another object.
  fs::create_directories(www.path() / "sub");
  write_file(www.path() / "sub" / "c2", "other");
  auto sub = open_location(server->url() + "/sub", {{"cache_dir", cache.path().string()}}).store;
  EXPECT_EQ(as_string(*sub->get("c2")), "other");
}

TEST_F(DiskCacheFixture, DiskCacheNeverServesAChangedObject) {
  EXPECT_EQ(as_string(*open()->get("c4")), pattern(10000, 4));
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // nginx's ETag holds mtime seconds
  write_file(www.path() / "c4", pattern(10000, 40));
  auto s = open();
  EXPECT_EQ(as_string(*s->get("c4")), pattern(10000, 40));
  EXPECT_EQ(s->stats().cache_hits, 0u);
}

TEST_F(DiskCacheFixture, DiskCacheBudgetEvictsLeastRecentlyUsed) {
  const std::uint64_t budget = 45000;  // four 10 kB entries (plus headers) fit
  auto s = open(budget);
  // A hit refreshes an entry's mtime once it is a few seconds old (LRU needs no finer order):
  // c0..c3 are made 60..57 s old in that order, then c0 read again is the most recently used.
  std::set<fs::path> seen;
  for (int i = 0; i < 4; ++i) {
    s->get("c" + std::to_string(i));
    for (const auto& e : fs::directory_iterator(cache.path()))
      if (seen.insert(e.path()).second)
        fs::last_write_time(e.path(), fs::file_time_type::clock::now() - std::chrono::seconds(60 - i));
  }
  s->get("c0");
  for (int i = 4; i < 8; ++i) {
    s->get("c" + std::to_string(i));
    EXPECT_LE(dir_bytes(cache.path()), budget);
  }
  auto t = open(budget);
  EXPECT_EQ(as_string(*t->get("c7")), pattern(10000, 7));
  EXPECT_EQ(t->stats().cache_hits, 1u);
  EXPECT_EQ(as_string(*t->get("c1")), pattern(10000, 1));  // evicted first
  EXPECT_EQ(t->stats().cache_misses, 1u);
}

TEST_F(DiskCacheFixture, DiskCacheRefetchesATruncatedOrCorruptFile) {
  open()->get("c5");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(cache.path())) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  fs::resize_file(files[0], fs::file_size(files[0]) - 1);
  auto s = open();
  EXPECT_EQ(as_string(*s->get("c5")), pattern(10000, 5));
  EXPECT_EQ(s->stats().cache_misses, 1u);
  // Flip one payload byte of the republished file: the checksum catches it.
  std::string bytes = read_file(files[0]);
  bytes.back() ^= 1;
  write_file(files[0], bytes);
  auto t = open();
  EXPECT_EQ(as_string(*t->get("c5")), pattern(10000, 5));
  EXPECT_EQ(t->stats().cache_misses, 1u);
}

// Threads sharing a store, and two stores (two opens: as two processes would) on one directory,
// under a budget that evicts on every whole-object publish: every read gets its own bytes,
// every request is counted once (hit or miss), and the directory ends within its budget plus
// what each store may publish between its checks (1/16 of the budget, docs/disk_cache.md "Using it").
TEST_F(DiskCacheFixture, DiskCacheThreadsAndOpensShareOneDirectory) {
  const std::uint64_t budget = 45000;  // four of the eight 10 kB entries fit
  const std::array<std::shared_ptr<Store>, 2> stores{open(budget), open(budget)};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 4; ++round) {
        std::vector<ByteRequest> reqs;
        for (int k = 0; k < 8; ++k) {
          const int i = (k + t + round) % 8;
          reqs.push_back({"c" + std::to_string(i), k % 2 ? ByteRange::range(100 * i, 500) : ByteRange::full()});
        }
        const auto got = stores[t % 2]->get_many(reqs);
        for (int k = 0; k < 8; ++k) {
          const int i = (k + t + round) % 8;
          const std::string want = k % 2 ? pattern(10000, i).substr(100 * i, 500) : pattern(10000, i);
          if (!got[k] || as_string(*got[k]) != want) ++wrong;
        }
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  std::uint64_t counted = 0;
  for (const auto& s : stores) counted += s->stats().cache_hits + s->stats().cache_misses;
  EXPECT_EQ(counted, 6u * 4 * 8);
  EXPECT_LE(dir_bytes(cache.path()), budget + stores.size() * budget / 16);
}

TEST_F(DiskCacheFixture, DiskCacheUnusableDirectoryIsAClearError) {
  write_file(cache.path() / "file", "x");
  try {
    open_location(server->url(), {{"cache_dir", (cache.path() / "file").string()}});
    FAIL() << "expected a StoreError";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("cache_dir"), std::string::npos) << e.what();
  }
  EXPECT_THROW(open_location(server->url(), {{"cache_size", "lots"}}), StoreError);
}

// A server that declares its objects fresh (Cache-Control max-age, as GCS does for public
// objects) is not asked again while they are: a new open (another process) reads cached entries
// without any request, through a version record the first one left in the directory.
TEST_F(DiskCacheFixture, DiskCacheFreshObjectsAreReadWithoutAnyRequest) {
  server->set_faults("cache_control = 'public, max-age=3600'");
  {
    auto s = open();
    EXPECT_EQ(as_string(*s->get("c1")), pattern(10000, 1));
    EXPECT_EQ(as_string(*s->get("c2", ByteRange::range(10, 20))), pattern(10000, 2).substr(10, 20));
  }
  const std::string before = server->settled_access_log();
  EXPECT_EQ(heads_of(before, "c1"), 1u);
  auto s = open();
  EXPECT_EQ(as_string(*s->get("c1")), pattern(10000, 1));
  EXPECT_EQ(as_string(*s->get("c2", ByteRange::range(10, 20))), pattern(10000, 2).substr(10, 20));
  EXPECT_EQ(s->stats().cache_hits, 2u);
  EXPECT_EQ(s->stats().requests, 0u);
  const std::string after = server->settled_access_log();
  EXPECT_EQ(heads_of(after, "c1") + gets_of(after, "c1"), heads_of(before, "c1") + gets_of(before, "c1"));
  EXPECT_EQ(heads_of(after, "c2"), 1u);
}

// A 404 the server lets caches keep (Cache-Control max-age on it) is kept like an object: a new
// open does not ask for the absent key again while the absence is fresh; without the promise
// each open asks (format sniffing probes keys a store does not hold: docs/disk_cache.md).
TEST_F(DiskCacheFixture, DiskCacheKeepsFreshAbsences) {
  EXPECT_FALSE(open()->get("nothing-here").has_value());
  EXPECT_FALSE(open()->get("nothing-here").has_value());
  EXPECT_EQ(heads_of(server->settled_access_log(), "nothing-here"), 2u);  // no promise: asked each time

  server->set_faults("cache_control = 'public, max-age=3600'");
  EXPECT_FALSE(open()->get("absent", ByteRange::range(0, 12)).has_value());
  const std::size_t first = heads_of(server->settled_access_log(), "absent");
  EXPECT_EQ(first, 1u);
  auto s = open();
  EXPECT_FALSE(s->get("absent", ByteRange::range(0, 12)).has_value());
  EXPECT_FALSE(s->get("absent").has_value());
  EXPECT_EQ(s->stats().requests, 0u);
  EXPECT_EQ(heads_of(server->settled_access_log(), "absent") + gets_of(server->settled_access_log(), "absent"), first);
}

// Once the declared lifetime ends the object is asked again, and a new version is fetched;
// within it, the cached version is what the server promised (HTTP caching's contract).
TEST_F(DiskCacheFixture, DiskCacheAsksAgainWhenTheDeclaredLifetimeEnds) {
  server->set_faults("cache_control = 'max-age=2'");
  EXPECT_EQ(as_string(*open()->get("c3")), pattern(10000, 3));
  write_file(www.path() / "c3", pattern(9000, 30));  // another size: another ETag
  EXPECT_EQ(as_string(*open()->get("c3")), pattern(10000, 3));
  std::this_thread::sleep_for(std::chrono::milliseconds(3100));
  auto s = open();
  EXPECT_EQ(as_string(*s->get("c3")), pattern(9000, 30));
  EXPECT_EQ(s->stats().cache_hits, 0u);
}

// no-store: the server forbids keeping the object; no-cache: kept, but asked on every open.
TEST_F(DiskCacheFixture, DiskCacheHonoursNoStoreAndNoCache) {
  server->set_faults("cache_control = 'no-store'");
  EXPECT_EQ(as_string(*open()->get("c4")), pattern(10000, 4));
  EXPECT_EQ(dir_bytes(cache.path()), 0u);
  server->set_faults("cache_control = 'max-age=3600, no-cache'");
  open()->get("c5");
  auto s = open();
  EXPECT_EQ(as_string(*s->get("c5")), pattern(10000, 5));
  EXPECT_EQ(s->stats().cache_hits, 1u);
  EXPECT_EQ(heads_of(server->settled_access_log(), "c5"), 2u);
}

