// ChunkCache: LRU order under a byte budget, pinning, single-flight loads, error propagation,
// the batched lookup/Claim protocol and the statistics.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include "lazycube/cache/chunk_cache.hpp"
#include "lazycube/error.hpp"

using namespace lazycube;

namespace {

ChunkKey key(std::uint64_t i, const std::string& array = "mem://a") { return ChunkKey{array, {i, 0}}; }

// A loader producing `bytes` bytes all equal to `tag`, counting its calls.
std::function<Buffer()> loader(std::size_t bytes, std::uint8_t tag, std::atomic<int>* calls = nullptr) {
  return [=] {
    if (calls) ++*calls;
    Buffer b(bytes);
    std::memset(b.data(), tag, bytes);
    return b;
  };
}

bool cached(ChunkCache& cache, const ChunkKey& k) {
  // A lookup that is a hit answers from memory; a miss must be resolved, so fail its claim.
  auto found = cache.lookup(k);
  if (found.claim) cache.fail(*found.claim, std::make_exception_ptr(Error("probe")));
  return found.chunk != nullptr;
}

}  // namespace

TEST(ChunkCache, EvictsLeastRecentlyUsedFirst) {
  ChunkCache cache(300);
  cache.get_or_load(key(1), loader(100, 1));
  cache.get_or_load(key(2), loader(100, 2));
  cache.get_or_load(key(3), loader(100, 3));
  cache.get_or_load(key(1), loader(100, 1));  // 1 is now the most recent; 2 the least
  cache.get_or_load(key(4), loader(100, 4));
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.entries, 3u);
  EXPECT_EQ(s.bytes_cached, 300u);
  EXPECT_EQ(s.evictions, 1u);
  cache.reset_stats();
  EXPECT_TRUE(cached(cache, key(1)));
  EXPECT_TRUE(cached(cache, key(3)));
  EXPECT_TRUE(cached(cache, key(4)));
  EXPECT_FALSE(cached(cache, key(2)));
}

TEST(ChunkCache, HandsOutTheLoadedBytes) {
  ChunkCache cache(1000);
  auto a = cache.get_or_load(key(7), loader(16, 0xAB));
  auto b = cache.get_or_load(key(7), loader(16, 0x00));  // a hit: the loader is not called
  EXPECT_EQ(a, b);
  ASSERT_EQ(b->size(), 16u);
  EXPECT_EQ(b->data()[15], std::byte{0xAB});
  // Same index, other array: a different chunk.
  auto c = cache.get_or_load(key(7, "mem://other"), loader(16, 0x11));
  EXPECT_EQ(c->data()[0], std::byte{0x11});
}

TEST(ChunkCache, StatsHitRateAndReadAmplification) {
  ChunkCache cache(250);
  EXPECT_EQ(cache.stats().hit_rate(), 0.0);
  EXPECT_EQ(cache.stats().read_amplification(), 0.0);
  cache.get_or_load(key(1), loader(100, 1));  // miss
  cache.get_or_load(key(1), loader(100, 1));  // hit
  cache.get_or_load(key(2), loader(100, 2));  // miss
  cache.get_or_load(key(3), loader(100, 3));  // miss, evicts 1
  cache.get_or_load(key(1), loader(100, 1));  // miss again (fetched twice), evicts 2
  cache.note_delivered(40);
  cache.note_delivered(2);
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 4u);
  EXPECT_EQ(s.evictions, 2u);
  EXPECT_EQ(s.bytes_fetched, 400u);
  EXPECT_EQ(s.bytes_unique, 300u);
  EXPECT_EQ(s.bytes_delivered, 42u);
  EXPECT_EQ(s.bytes_cached, 200u);
  EXPECT_EQ(s.peak_bytes_cached, 200u);
  EXPECT_EQ(s.entries, 2u);
  EXPECT_EQ(s.budget_bytes, 250u);
  EXPECT_DOUBLE_EQ(s.hit_rate(), 0.2);
  EXPECT_DOUBLE_EQ(s.read_amplification(), 400.0 / 300.0);
}

TEST(ChunkCache, ResetStatsKeepsChunksAndForgetsSeenKeys) {
  ChunkCache cache(1000);
  cache.get_or_load(key(1), loader(100, 1));
  cache.get_or_load(key(2), loader(50, 2));
  cache.note_delivered(10);
  cache.reset_stats();
  CacheStats s = cache.stats();
  EXPECT_EQ(s.hits + s.misses + s.evictions + s.bytes_fetched + s.bytes_delivered + s.bytes_unique, 0u);
  EXPECT_EQ(s.entries, 2u);
  EXPECT_EQ(s.bytes_cached, 150u);
  // A hit after the reset counts the chunk as requested (unique), though nothing was fetched.
  std::atomic<int> calls = 0;
  cache.get_or_load(key(1), loader(100, 1, &calls));
  EXPECT_EQ(calls, 0);
  s = cache.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.bytes_unique, 100u);
  EXPECT_EQ(s.bytes_fetched, 0u);
  EXPECT_EQ(s.read_amplification(), 0.0);
}

TEST(ChunkCache, BudgetZeroKeepsNothing) {
  ChunkCache cache(0);
  EXPECT_FALSE(cache.enabled());
  std::atomic<int> calls = 0;
  auto a = cache.get_or_load(key(1), loader(10, 1, &calls));
  auto b = cache.get_or_load(key(1), loader(10, 1, &calls));
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(a->size(), 10u);
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.entries, 0u);
  EXPECT_EQ(s.bytes_cached, 0u);
  EXPECT_EQ(s.misses, 2u);
}

TEST(ChunkCache, BudgetZeroStillSingleFlights) {
  ChunkCache cache(0);
  std::atomic<int> calls = 0;
  std::atomic<bool> release = false;
  auto slow = [&] {
    ++calls;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return Buffer(8);
  };
  std::vector<std::thread> threads;
  std::vector<ChunkCache::Chunk> got(8);
  threads.emplace_back([&] { got[0] = cache.get_or_load(key(1), slow); });
  while (calls == 0) std::this_thread::yield();
  for (int t = 1; t < 8; ++t) threads.emplace_back([&, t] { got[t] = cache.get_or_load(key(1), slow); });
  while (cache.stats().hits < 7) std::this_thread::yield();  // all waiting on the load in flight
  release = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(calls, 1);
  for (const auto& c : got) EXPECT_EQ(c, got[0]);
  EXPECT_EQ(cache.stats().entries, 0u);
}

TEST(ChunkCache, ChunkLargerThanBudgetIsHandedOutNotKept) {
  ChunkCache cache(100);
  cache.get_or_load(key(1), loader(60, 1));
  auto big = cache.get_or_load(key(2), loader(500, 2));
  EXPECT_EQ(big->size(), 500u);
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.entries, 1u);  // chunk 1 stays; the big one was never admitted
  EXPECT_EQ(s.bytes_cached, 60u);
  EXPECT_EQ(s.evictions, 0u);
  EXPECT_EQ(s.bytes_fetched, 560u);
}

TEST(ChunkCache, PinnedChunksAreNotEvicted) {
  ChunkCache cache(250);
  auto pinned1 = cache.get_or_load(key(1), loader(100, 1));
  auto pinned2 = cache.get_or_load(key(2), loader(100, 2));
  for (std::uint64_t i = 3; i < 10; ++i) {
    cache.get_or_load(key(i), loader(100, static_cast<std::uint8_t>(i)));
    const CacheStats s = cache.stats();
    // Over budget by at most the pinned chunks.
    EXPECT_LE(s.bytes_cached, 250u + 200u);
  }
  cache.reset_stats();
  EXPECT_TRUE(cached(cache, key(1)));
  EXPECT_TRUE(cached(cache, key(2)));
  EXPECT_FALSE(cached(cache, key(3)));
  // Held handles stay valid and unchanged.
  EXPECT_EQ(pinned1->data()[99], std::byte{1});
  // Released, they become evictable: the next bookkeeping brings the cache within budget.
  pinned1.reset();
  pinned2.reset();
  cached(cache, key(42));
  EXPECT_LE(cache.stats().bytes_cached, 250u);
}

TEST(ChunkCache, PinnedChunksMayExceedTheBudget) {
  ChunkCache cache(150);
  std::vector<ChunkCache::Chunk> held;
  for (std::uint64_t i = 0; i < 4; ++i) held.push_back(cache.get_or_load(key(i), loader(100, 1)));
  // Every chunk is pinned: all are kept, over budget by exactly the pinned bytes.
  EXPECT_EQ(cache.stats().bytes_cached, 400u);
  EXPECT_EQ(cache.stats().peak_bytes_cached, 400u);
  held.clear();
  cache.set_budget(150);
  EXPECT_EQ(cache.stats().bytes_cached, 100u);
  EXPECT_EQ(cache.stats().evictions, 3u);
}

TEST(ChunkCache, SingleFlightUnderManyThreads) {
  ChunkCache cache(1 << 20);
  std::atomic<int> calls = 0;
  std::atomic<bool> go = false;
  auto slow = [&] {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    Buffer b(64);
    std::memset(b.data(), 9, 64);
    return b;
  };
  std::vector<std::thread> threads;
  std::vector<ChunkCache::Chunk> got(16);
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&, t] {
      while (!go) std::this_thread::yield();
      got[t] = cache.get_or_load(key(5), slow);
    });
  go = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(calls, 1);
  for (const auto& c : got) EXPECT_EQ(c, got[0]);
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 15u);
  EXPECT_EQ(s.bytes_fetched, 64u);
}

TEST(ChunkCache, LoaderErrorReachesEveryWaiterAndIsNotCached) {
  ChunkCache cache(1 << 20);
  std::atomic<int> calls = 0;
  std::atomic<bool> release = false;
  auto failing = [&]() -> Buffer {
    ++calls;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    throw CodecError("chunk 'x/0.0' is corrupt");
  };
  std::atomic<int> codec_errors = 0;
  std::vector<std::thread> threads;
  auto reader = [&] {
    try {
      cache.get_or_load(key(1), failing);
    } catch (const CodecError& e) {
      if (std::string(e.what()).find("corrupt") != std::string::npos) ++codec_errors;
    }
  };
  threads.emplace_back(reader);
  while (calls == 0) std::this_thread::yield();
  for (int t = 0; t < 5; ++t) threads.emplace_back(reader);
  while (cache.stats().hits < 5) std::this_thread::yield();
  release = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(codec_errors, 6);
  EXPECT_EQ(cache.stats().entries, 0u);
  // Not cached: the next request loads again, and may succeed.
  auto ok = cache.get_or_load(key(1), loader(8, 3));
  EXPECT_EQ(ok->data()[0], std::byte{3});
  EXPECT_EQ(cache.stats().misses, 2u);
}

TEST(ChunkCache, BatchedLookupClaimFulfill) {
  ChunkCache cache(1 << 20);
  auto first = cache.lookup(key(1));
  ASSERT_TRUE(first.claim);
  EXPECT_FALSE(first.chunk);
  EXPECT_FALSE(first.pending.valid());
  EXPECT_EQ(first.claim->key(), key(1));
  auto second = cache.lookup(key(1));  // in flight: wait on it
  ASSERT_TRUE(second.pending.valid());
  EXPECT_FALSE(second.claim);
  Buffer b(4);
  std::memset(b.data(), 5, 4);
  auto chunk = cache.fulfill(*first.claim, std::move(b));
  EXPECT_EQ(second.pending.get(), chunk);
  EXPECT_THROW(cache.fulfill(*first.claim, Buffer(4)), UsageError);  // exactly once
  auto third = cache.lookup(key(1));
  EXPECT_EQ(third.chunk, chunk);
  ChunkCache other(100);
  auto foreign = other.lookup(key(2));
  EXPECT_THROW(cache.fulfill(*foreign.claim, Buffer(1)), UsageError);
  other.fulfill(*foreign.claim, Buffer(1));
}

TEST(ChunkCache, FailedClaimReachesWaiters) {
  ChunkCache cache(1 << 20);
  auto first = cache.lookup(key(1));
  auto second = cache.lookup(key(1));
  cache.fail(*first.claim, std::make_exception_ptr(StoreError("http 500 on chunk 1")));
  EXPECT_THROW(second.pending.get(), StoreError);
  auto again = cache.lookup(key(1));
  EXPECT_TRUE(again.claim);  // nothing was cached
  cache.fulfill(*again.claim, Buffer(1));
}

TEST(ChunkCache, DroppedClaimFailsWaitersNamingTheKey) {
  ChunkCache cache(1 << 20);
  std::shared_future<ChunkCache::Chunk> waiting;
  {
    auto first = cache.lookup(ChunkKey{"file:///data/t2m", {3, 4}});
    waiting = cache.lookup(ChunkKey{"file:///data/t2m", {3, 4}}).pending;
  }  // the claim goes away unresolved
  try {
    waiting.get();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[3, 4]"), std::string::npos) << what;
    EXPECT_NE(what.find("file:///data/t2m"), std::string::npos) << what;
  }
  EXPECT_TRUE(cache.lookup(ChunkKey{"file:///data/t2m", {3, 4}}).claim);
}

TEST(ChunkCache, SetBudgetEvictsDownToIt) {
  ChunkCache cache(1000);
  for (std::uint64_t i = 0; i < 8; ++i) cache.get_or_load(key(i), loader(100, 1));
  EXPECT_EQ(cache.stats().bytes_cached, 800u);
  cache.set_budget(350);
  CacheStats s = cache.stats();
  EXPECT_EQ(s.bytes_cached, 300u);
  EXPECT_EQ(s.evictions, 5u);
  EXPECT_EQ(s.budget_bytes, 350u);
  EXPECT_EQ(cache.budget(), 350u);
  cache.reset_stats();
  EXPECT_TRUE(cached(cache, key(7)));  // the most recent survive
  EXPECT_FALSE(cached(cache, key(4)));
  cache.set_budget(0);
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(cache.stats().entries, 0u);
}

TEST(ChunkCache, ClearDropsUnpinnedChunks) {
  ChunkCache cache(1000);
  auto held = cache.get_or_load(key(1), loader(100, 1));
  cache.get_or_load(key(2), loader(100, 2));
  cache.clear();
  CacheStats s = cache.stats();
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.bytes_cached, 100u);
  EXPECT_EQ(s.evictions, 0u);  // clearing is not an eviction for the budget
  held.reset();
  cache.clear();
  EXPECT_EQ(cache.stats().entries, 0u);
}

TEST(ChunkCache, GlobalIsOneSharedInstance) {
  const auto& a = ChunkCache::global();
  ASSERT_TRUE(a);
  EXPECT_EQ(a.get(), ChunkCache::global().get());
  EXPECT_GT(a->budget(), 0u);
}

TEST(ChunkCache, KeyHashSeparatesIndexOrder) {
  ChunkKeyHash h;
  EXPECT_EQ(h(ChunkKey{"a", {1, 2}}), h(ChunkKey{"a", {1, 2}}));
  EXPECT_NE(h(ChunkKey{"a", {1, 2}}), h(ChunkKey{"a", {2, 1}}));
  EXPECT_FALSE((ChunkKey{"a", {1, 2}} == ChunkKey{"b", {1, 2}}));
}

// A forked child (a DataLoader worker) gets a fresh process-wide cache: the parent's copy may
// be mid-update (its mutex held by a thread that does not exist in the child).
TEST(ChunkCacheGlobal, ForkedChildStartsAFreshCache) {
  auto& parent = ChunkCache::global();
  parent->get_or_load(ChunkKey{"fork-test", {1}}, [] { return Buffer(4096); });
  ASSERT_GE(parent->stats().entries, 1u);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const auto& child = ChunkCache::global();
    const bool fresh = child.get() != parent.get() && child->stats().entries == 0;
    auto chunk = child->get_or_load(ChunkKey{"fork-test", {1}}, [] { return Buffer(16); });
    ::_exit(fresh && chunk->size() == 16 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(ChunkCache::global().get(), parent.get());  // the parent keeps its own
}
