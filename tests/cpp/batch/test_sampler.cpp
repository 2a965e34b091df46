// Epoch orders: seeded permutations, none/random/chunk shuffles, rank/worker sharding, and the
// chunk fetches each order causes through a small LRU cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <list>
#include <map>
#include <set>
#include <vector>

#include "lazycube/batch/sampler.hpp"
#include "lazycube/error.hpp"

using namespace lazycube;
using namespace lazycube::batch;

namespace {

// Every window of the epoch (a single shard), in visiting order.
std::vector<std::uint64_t> epoch_windows(const EpochOrder& order) {
  std::vector<std::uint64_t> out;
  out.reserve(order.size());
  for (std::uint64_t p = 0; p < order.size(); ++p) out.push_back(order.window(p));
  return out;
}

bool is_permutation_of_all(std::vector<std::uint64_t> v, std::uint64_t n) {
  if (v.size() != n) return false;
  std::sort(v.begin(), v.end());
  for (std::uint64_t i = 0; i < n; ++i)
    if (v[i] != i) return false;
  return true;
}

// time 64 (chunks of 8) x y 20 (chunks of 10) x x 30 (chunks of 10), windows 4 x 5 x 10,
// overlap 2 along time, so some windows span two time chunks.
WindowGrid small_cube() {
  return WindowGrid({{"time", 64}, {"y", 20}, {"x", 30}}, {{"time", 4}, {"y", 5}, {"x", 10}},
                    {{"time", 2}});
}
const std::vector<std::uint64_t> kSmallCubeChunks = {8, 10, 10};

// The chunk index of window w's start along each dim: its chunk group.
std::vector<std::uint64_t> group_key(const WindowGrid& grid, std::uint64_t w,
                                     const std::vector<std::uint64_t>& chunks) {
  const auto ranges = grid.ranges(w);
  std::vector<std::uint64_t> key;
  for (std::size_t d = 0; d < ranges.size(); ++d) {
    const bool one_group = chunks[d] == 0 || chunks[d] >= grid.dims()[d].size;
    key.push_back(one_group ? 0 : ranges[d].start / chunks[d]);
  }
  return key;
}

// Chunk fetches of an epoch through an LRU cache holding `capacity` chunks: every chunk a
// window touches (windows may span two chunks along a dim) is fetched when not cached.
struct FetchCount {
  std::uint64_t fetches = 0, distinct = 0;
  double amplification() const { return double(fetches) / double(distinct); }
};
FetchCount simulate_lru(const WindowGrid& grid, const EpochOrder& order,
                        const std::vector<std::uint64_t>& chunks, std::size_t capacity) {
  using Key = std::vector<std::uint64_t>;
  std::list<Key> lru;  // most recent first
  std::map<Key, std::list<Key>::iterator> where;
  std::set<Key> seen;
  FetchCount count;
  for (std::uint64_t p = 0; p < order.size(); ++p) {
    const auto ranges = grid.ranges(order.window(p));
    // All chunk tuples the window touches: the product of per-dim chunk ranges.
    std::vector<Key> touched{Key{}};
    for (std::size_t d = 0; d < ranges.size(); ++d) {
      const std::uint64_t lo = ranges[d].start / chunks[d];
      const std::uint64_t hi = (ranges[d].start + ranges[d].count - 1) / chunks[d];
      std::vector<Key> next;
      for (const Key& k : touched)
        for (std::uint64_t c = lo; c <= hi; ++c) {
          next.push_back(k);
          next.back().push_back(c);
        }
      touched = std::move(next);
    }
    for (const Key& k : touched) {
      seen.insert(k);
      if (auto it = where.find(k); it != where.end()) {
        lru.splice(lru.begin(), lru, it->second);
        continue;
      }
      ++count.fetches;
      lru.push_front(k);
      where[k] = lru.begin();
      if (lru.size() > capacity) {
        where.erase(lru.back());
        lru.pop_back();
      }
    }
  }
  count.distinct = seen.size();
  return count;
}

}  // namespace

// ---- parse_shuffle / shuffle_name ----

TEST(SamplerShuffleName, RoundTripsAndRejectsUnknownText) {
  for (Shuffle s : {Shuffle::None, Shuffle::Random, Shuffle::Chunk})
    EXPECT_EQ(parse_shuffle(shuffle_name(s)), s);
  try {
    parse_shuffle("Random!");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Random!"), std::string::npos) << msg;
    EXPECT_NE(msg.find("none, random, chunk"), std::string::npos) << msg;
  }
}

// ---- Permutation ----

TEST(SamplerPermutation, IsABijectionForManySizesAndSeeds) {
  for (std::uint64_t n : {0ULL, 1ULL, 2ULL, 3ULL, 7ULL, 64ULL, 1000ULL, (1ULL << 20) + 3}) {
    for (std::uint64_t seed : {0ULL, 1ULL, 42ULL, 0xFFFFFFFFFFFFFFFFULL}) {
      const Permutation perm(n, seed);
      ASSERT_EQ(perm.size(), n);
      std::vector<bool> hit(n, false);
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t y = perm(i);
        ASSERT_LT(y, n) << "n=" << n << " seed=" << seed;
        ASSERT_FALSE(hit[y]) << "n=" << n << " seed=" << seed << " repeats " << y;
        hit[y] = true;
      }
    }
  }
}

TEST(SamplerPermutation, DeterministicPerSeedAndDifferentAcrossSeeds) {
  const std::uint64_t n = 1000;
  const Permutation a(n, 7), again(n, 7), b(n, 8);
  std::uint64_t same_as_b = 0, fixed_points = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    EXPECT_EQ(a(i), again(i));
    same_as_b += a(i) == b(i);
    fixed_points += a(i) == i;
  }
  // Unrelated permutations agree (and have fixed points) about once per n positions.
  EXPECT_LT(same_as_b, 10u);
  EXPECT_LT(fixed_points, 10u);
}

TEST(SamplerPermutation, HandlesHugeDomainsAndRejectsOutOfRange) {
  const std::uint64_t n = 1ULL << 62;
  const Permutation perm(n, 3);
  std::set<std::uint64_t> values;
  for (std::uint64_t i : std::vector<std::uint64_t>{0, 1, 12345, n - 2, n - 1}) {
    const std::uint64_t y = perm(i);
    EXPECT_LT(y, n);
    values.insert(y);
  }
  EXPECT_EQ(values.size(), 5u);
  EXPECT_THROW(perm(n), UsageError);
  EXPECT_THROW(Permutation(0, 1)(0), UsageError);
  EXPECT_EQ(Permutation(1, 99)(0), 0u);
}

// ---- ShardSpec ----

TEST(SamplerShardSpec, ValidateNamesTheBadField) {
  auto message = [](ShardSpec s) {
    try {
      s.validate();
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({0, 0, 0, 1}).find("world_size"), std::string::npos);
  EXPECT_NE(message({0, 1, 0, 0}).find("num_workers"), std::string::npos);
  EXPECT_NE(message({2, 2, 0, 1}).find("rank 2"), std::string::npos);
  EXPECT_NE(message({0, 1, 3, 3}).find("worker 3"), std::string::npos);
  EXPECT_NO_THROW((ShardSpec{1, 2, 2, 3}.validate()));
  EXPECT_EQ((ShardSpec{1, 2, 2, 3}.index()), 5u);
  EXPECT_EQ((ShardSpec{1, 2, 2, 3}.count()), 6u);
  // EpochOrder validates its shard.
  EXPECT_THROW(EpochOrder(small_cube(), Shuffle::None, 0, 0, ShardSpec{1, 1, 0, 1}), UsageError);
}

// ---- EpochOrder: none / random ----

TEST(SamplerEpochOrder, NoneIsTheIdentity) {
  const WindowGrid grid = small_cube();
  const EpochOrder order(grid, Shuffle::None, 5, 3, ShardSpec{});
  ASSERT_EQ(order.size(), grid.size());
  EXPECT_EQ(order.epoch_position(0), 0u);
  for (std::uint64_t p = 0; p < order.size(); ++p) EXPECT_EQ(order.window(p), p);
  EXPECT_THROW(order.window(order.size()), UsageError);
}

TEST(SamplerEpochOrder, RandomIsReproducibleAndDiffersAcrossEpochsAndSeeds) {
  const WindowGrid grid = small_cube();
  const auto e0 = epoch_windows(EpochOrder(grid, Shuffle::Random, 11, 0, ShardSpec{}));
  EXPECT_TRUE(is_permutation_of_all(e0, grid.size()));
  EXPECT_EQ(e0, epoch_windows(EpochOrder(grid, Shuffle::Random, 11, 0, ShardSpec{})));
  const auto e1 = epoch_windows(EpochOrder(grid, Shuffle::Random, 11, 1, ShardSpec{}));
  const auto other_seed = epoch_windows(EpochOrder(grid, Shuffle::Random, 12, 0, ShardSpec{}));
  EXPECT_TRUE(is_permutation_of_all(e1, grid.size()));
  EXPECT_NE(e0, e1);
  EXPECT_NE(e0, other_seed);
  std::vector<std::uint64_t> identity(grid.size());
  for (std::uint64_t i = 0; i < grid.size(); ++i) identity[i] = i;
  EXPECT_NE(e0, identity);
}

// ---- EpochOrder: chunk ----

TEST(SamplerChunkShuffle, VisitsEveryWindowOnceGroupByGroup) {
  const WindowGrid grid = small_cube();
  for (std::uint64_t epoch : {0u, 1u, 2u}) {
    const auto order = epoch_windows(
        EpochOrder(grid, Shuffle::Chunk, 9, epoch, ShardSpec{}, kSmallCubeChunks));
    ASSERT_TRUE(is_permutation_of_all(order, grid.size()));
    // Each chunk group is one stretch of the epoch: once left, never seen again.
    std::set<std::vector<std::uint64_t>> started;
    std::vector<std::uint64_t> current;
    for (std::uint64_t w : order) {
      const auto key = group_key(grid, w, kSmallCubeChunks);
      if (key == current) continue;
      ASSERT_TRUE(started.insert(key).second) << "group revisited in epoch " << epoch;
      current = key;
    }
    // time: starts 0,2,..,60 in 8 chunks; y: starts 0,5,10,15 in 2; x: starts 0,10,20 in 3.
    EXPECT_EQ(started.size(), 8u * 2u * 3u);
  }
}

TEST(SamplerChunkShuffle, OrderDiffersAcrossEpochsAndIsReproducible) {
  const WindowGrid grid = small_cube();
  auto epoch = [&](std::uint64_t e) {
    return epoch_windows(EpochOrder(grid, Shuffle::Chunk, 4, e, ShardSpec{}, kSmallCubeChunks));
  };
  EXPECT_EQ(epoch(0), epoch(0));
  EXPECT_NE(epoch(0), epoch(1));
  // The order of the groups themselves changes, not only the windows inside them.
  const auto first_group = [&](const std::vector<std::uint64_t>& o) {
    return group_key(grid, o.front(), kSmallCubeChunks);
  };
  std::set<std::vector<std::uint64_t>> firsts;
  for (std::uint64_t e = 0; e < 8; ++e) firsts.insert(first_group(epoch(e)));
  EXPECT_GT(firsts.size(), 1u);
}

TEST(SamplerChunkShuffle, StrideAtLeastChunkAndWholeDimGroups) {
  // Along time the stride (10) exceeds the chunk (4): every window is its own group. Along x
  // the chunk is 0 (unknown / unchunked): one group, and y's chunk covers the dim.
  const WindowGrid grid({{"time", 100}, {"y", 6}, {"x", 12}}, {{"time", 10}, {"y", 3}, {"x", 4}});
  const std::vector<std::uint64_t> chunks = {4, 6, 0};
  const auto order = epoch_windows(EpochOrder(grid, Shuffle::Chunk, 1, 0, ShardSpec{}, chunks));
  ASSERT_TRUE(is_permutation_of_all(order, grid.size()));
  // 10 time windows -> 10 groups of 2 (y) x 3 (x) windows each, each visited in one stretch.
  for (std::size_t g = 0; g < 10; ++g) {
    const std::uint64_t t = grid.unravel(order[g * 6])[0];
    for (std::size_t k = 1; k < 6; ++k) EXPECT_EQ(grid.unravel(order[g * 6 + k])[0], t);
  }
}

TEST(SamplerChunkShuffle, RejectsMismatchedChunkLengths) {
  const WindowGrid grid = small_cube();
  EXPECT_THROW(EpochOrder(grid, Shuffle::Chunk, 0, 0, ShardSpec{}), UsageError);
  EXPECT_THROW(EpochOrder(grid, Shuffle::Random, 0, 0, ShardSpec{}, {8, 10}), UsageError);
}

// ---- Read amplification through a small LRU cache ----

TEST(SamplerChunkShuffle, FetchesEachChunkAboutOncePerEpoch) {
  // time 256 (chunks of 8) x y 32 x x 32 (chunks of 16): 128 chunks; 2048 windows of
  // 2 x 8 x 8 that stay inside one chunk. The cache holds 4 of the 128 chunks.
  const WindowGrid grid({{"time", 256}, {"y", 32}, {"x", 32}}, {{"time", 2}, {"y", 8}, {"x", 8}});
  const std::vector<std::uint64_t> chunks = {8, 16, 16};
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    const auto chunk = simulate_lru(
        grid, EpochOrder(grid, Shuffle::Chunk, 5, epoch, ShardSpec{}, chunks), chunks, 4);
    const auto random =
        simulate_lru(grid, EpochOrder(grid, Shuffle::Random, 5, epoch, ShardSpec{}), chunks, 4);
    EXPECT_EQ(chunk.distinct, 128u);
    EXPECT_LE(chunk.amplification(), 1.1);
    EXPECT_GT(random.amplification(), 10.0);
  }
}

TEST(SamplerChunkShuffle, WindowsSpanningChunksCostAtMostOneExtraFetch) {
  // Windows of 4 time steps with overlap 2 over chunks of 8: one window in four starts in one
  // chunk and ends in the next, so a group needs its own chunk and the next one. With the
  // group order random, that next chunk is usually evicted again before its own group comes,
  // so each chunk is fetched at most about twice; random order fetches far more.
  const WindowGrid grid = small_cube();
  const std::uint64_t chunks_total = 8 * 2 * 3;
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    const auto chunk = simulate_lru(
        grid, EpochOrder(grid, Shuffle::Chunk, 5, epoch, ShardSpec{}, kSmallCubeChunks),
        kSmallCubeChunks, 4);
    const auto random = simulate_lru(
        grid, EpochOrder(grid, Shuffle::Random, 5, epoch, ShardSpec{}), kSmallCubeChunks, 4);
    EXPECT_EQ(chunk.distinct, chunks_total);
    EXPECT_LE(chunk.amplification(), 2.05);
    EXPECT_GT(random.amplification(), 2.0 * chunk.amplification());
  }
  // Grouping several chunks at once along the spanning dim (a multiple of the chunk length)
  // leaves extra fetches only at group boundaries: 4 time chunks per group -> 9 fetches for 8.
  const auto merged4 = simulate_lru(
      grid, EpochOrder(grid, Shuffle::Chunk, 5, 0, ShardSpec{}, {32, 10, 10}), kSmallCubeChunks,
      5);
  EXPECT_LE(merged4.amplification(), 1.13);
  // One group along the whole time dim (chunk length 0): with room for one group's 8 chunks
  // every chunk is fetched once.
  const auto whole = simulate_lru(
      grid, EpochOrder(grid, Shuffle::Chunk, 5, 0, ShardSpec{}, {0, 10, 10}), kSmallCubeChunks,
      8);
  EXPECT_DOUBLE_EQ(whole.amplification(), 1.0);
}

// ---- Sharding ----

TEST(SamplerSharding, ShardsCoverEveryWindowExactlyOnce) {
  const std::vector<WindowGrid> grids = {
      WindowGrid({{"t", 5}}, {{"t", 1}}),                                // fewer than shards
      WindowGrid({{"t", 9}, {"x", 7}}, {{"t", 3}, {"x", 1}}, {{"t", 1}}),  // 4 x 7
      small_cube(),
  };
  const std::vector<std::vector<std::uint64_t>> chunk_lengths = {{2}, {4, 3}, kSmallCubeChunks};
  for (std::size_t gi = 0; gi < grids.size(); ++gi) {
    const WindowGrid& grid = grids[gi];
    for (Shuffle shuffle : {Shuffle::None, Shuffle::Random, Shuffle::Chunk}) {
      const EpochOrder whole(grid, shuffle, 3, 1, ShardSpec{}, chunk_lengths[gi]);
      for (std::uint32_t world = 1; world <= 4; ++world) {
        for (std::uint32_t workers = 1; workers <= 3; ++workers) {
          SCOPED_TRACE(std::string(shuffle_name(shuffle)) + " grid " + std::to_string(gi) +
                       " world " + std::to_string(world) + " workers " + std::to_string(workers));
          std::vector<std::uint64_t> all;
          std::uint64_t smallest = grid.size(), largest = 0, next_begin = 0;
          for (std::uint32_t rank = 0; rank < world; ++rank) {
            for (std::uint32_t worker = 0; worker < workers; ++worker) {
              const EpochOrder part(grid, shuffle, 3, 1, ShardSpec{rank, world, worker, workers},
                                    chunk_lengths[gi]);
              // Shards are consecutive blocks of the whole epoch's order.
              ASSERT_EQ(part.epoch_position(0), next_begin);
              next_begin += part.size();
              smallest = std::min(smallest, part.size());
              largest = std::max(largest, part.size());
              for (std::uint64_t p = 0; p < part.size(); ++p) {
                ASSERT_EQ(part.window(p), whole.window(part.epoch_position(0) + p));
                all.push_back(part.window(p));
              }
            }
          }
          EXPECT_TRUE(is_permutation_of_all(all, grid.size()));
          EXPECT_LE(largest - smallest, 1u);
        }
      }
    }
  }
}

// ---- Scale ----

TEST(SamplerScale, HundredMillionWindowGridIsArithmetic) {
  // 10^5 time steps x 10^3 points, windows of one element: 10^8 windows. Nothing may be
  // materialised per window, so this completes at once.
  const WindowGrid grid({{"time", 100000}, {"x", 1000}}, {{"time", 1}, {"x", 1}});
  ASSERT_EQ(grid.size(), 100000000u);
  for (Shuffle shuffle : {Shuffle::None, Shuffle::Random, Shuffle::Chunk}) {
    const EpochOrder order(grid, shuffle, 1, 2, ShardSpec{1, 2, 1, 2}, {1000, 250});
    EXPECT_EQ(order.size(), 25000000u);
    EXPECT_EQ(order.epoch_position(0), 75000000u);
    const std::uint64_t last = order.window(order.size() - 1);
    EXPECT_LT(last, grid.size());
    EXPECT_NE(order.window(0), last);
  }
}
