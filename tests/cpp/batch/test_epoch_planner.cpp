// The epoch planner (include/lazycube/batch/sampler.hpp: SampleFootprint, plan_blocks,
// EpochBatches, BatchLayout): every sample exactly once, every rank as many batches, resume in
// a job of another size (ranks and workers), and shuffle "chunk" over footprints measured as a
// user would: the egress of an LRU chunk cache of each shard's own (64 and 16 footprints, W = 1
// and W = 8 ranks, with 2 workers each), the Spearman correlation of position and anchor, the
// time span of the median batch, and different orders for different seeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <vector>

#include "epoch_quality.hpp"
#include "lazycube/batch/sampler.hpp"
#include "lazycube/error.hpp"

using namespace lazycube;
using namespace lazycube::batch;
using lazycube::testing::LruUnits;
using lazycube::testing::spearman_of_order;
using lazycube::testing::median_batch_span;
using lazycube::testing::expect_every_sample_once;

namespace {

// Anchors 0..positions-1 on a time axis of one-step chunks; each reads steps anchor-1 ..
// anchor+4 (inputs -6h, 0h; targets 6h..24h at 6-hourly steps): a span of 6 units.
std::shared_ptr<SampleFootprint> era5_like(std::uint64_t positions, std::uint64_t unit_bytes = 1000,
                                           std::uint64_t patches = 1) {
  auto fp = std::make_shared<SampleFootprint>();
  fp->samples_per_position = patches;
  for (std::uint64_t q = 0; q < positions; ++q) {
    fp->first_unit.push_back(q);
    fp->last_unit.push_back(q + 5);
  }
  fp->unit_bytes = unit_bytes;
  return fp;
}

OrderPlanning planning_of(std::shared_ptr<SampleFootprint> fp, std::uint64_t cache_bytes) {
  OrderPlanning p;
  p.footprint = std::move(fp);
  p.cache_bytes = cache_bytes;
  return p;
}

struct EpochRun {
  std::vector<std::uint64_t> visited;  // samples in delivery order (rank 0 first, ...)
  std::vector<std::vector<std::uint64_t>> batches;
  std::uint64_t fetches = 0, distinct = 0;
  std::set<std::uint64_t> rank_batch_counts;
};

// One epoch of a job of `world` ranks x `workers` workers, each process with its own LRU cache
// of `cache_units` units.
EpochRun run_epoch(const SampleFootprint& fp, const OrderPlanning& planning, Shuffle shuffle, std::uint64_t seed,
                   std::uint32_t world, std::uint32_t workers, std::uint64_t batch, std::uint64_t cache_units) {
  EpochRun run;
  std::set<std::uint64_t> needed;
  for (std::uint32_t r = 0; r < world; ++r) {
    std::uint64_t rank_total = 0;
    for (std::uint32_t w = 0; w < workers; ++w) {
      const EpochBatches e(fp.samples(), shuffle, seed, 0, ShardSpec{r, world, w, workers}, batch, false, planning);
      if (w == 0) run.rank_batch_counts.insert(e.rank_batches());
      rank_total += e.worker_batches();
      LruUnits lru;
      lru.capacity = cache_units;
      for (std::uint64_t j = 0; j < e.worker_batches(); ++j) {
        const auto ids = e.batch(j);
        run.batches.push_back(ids);
        for (const auto id : ids) {
          run.visited.push_back(id);
          const std::uint64_t q = id / fp.samples_per_position;
          for (std::uint64_t u = fp.first_unit[q]; u <= fp.last_unit[q]; ++u) {
            lru.touch(u);
            needed.insert(u);
          }
        }
      }
      run.fetches += lru.fetches;
    }
    EXPECT_EQ(rank_total, *run.rank_batch_counts.begin());
  }
  run.distinct = needed.size();
  return run;
}

}  // namespace

TEST(EpochPlanner, ChunkShuffleFetchesEachChunkAboutOnceAndStillShuffles) {
  // 2,904 six-hourly anchors (two years), batches of 8; the cache holds 64 footprints (6 units
  // each) or 16, per process.
  const std::uint64_t n = 2904, batch = 8, unit = 1000, footprint = 6 * unit;
  auto fp = era5_like(n, unit);
  struct Case {
    std::uint32_t world, workers;
    std::uint64_t footprints;
    double most_egress;
  };
  for (const Case c : {Case{1, 1, 64, 1.10}, Case{8, 1, 64, 1.10}, Case{8, 2, 64, 1.10}, Case{1, 1, 16, 1.5},
                       Case{8, 1, 16, 1.5}}) {
    const std::uint64_t cache = c.footprints * footprint;
    const OrderPlanning planning = planning_of(fp, cache);
    const EpochRun run = run_epoch(*fp, planning, Shuffle::Chunk, 1, c.world, c.workers, batch, cache / unit);
    const std::string what = "W=" + std::to_string(c.world) + " x " + std::to_string(c.workers) + " workers, cache of " +
                             std::to_string(c.footprints) + " footprints";
    expect_every_sample_once(run.visited, n, what);
    EXPECT_EQ(run.rank_batch_counts.size(), 1u) << what;
    const double egress = static_cast<double>(run.fetches) / static_cast<double>(run.distinct);
    std::printf("%s: egress %.3f, spearman %.3f, median batch span %.3f\n", what.c_str(), egress,
                spearman_of_order(run.visited), median_batch_span(run.batches, n));
    EXPECT_LE(egress, c.most_egress) << what;
    EXPECT_LE(std::fabs(spearman_of_order(run.visited)), 0.1) << what;
    EXPECT_GE(median_batch_span(run.batches, n), 0.5) << what;
  }
  // Random shuffle, for contrast, fetches each chunk several times with the same cache.
  const EpochRun random = run_epoch(*fp, planning_of(fp, 64 * footprint), Shuffle::Random, 1, 1, 1, batch, 64 * 6);
  EXPECT_GT(static_cast<double>(random.fetches) / static_cast<double>(random.distinct), 3.0);
}

TEST(EpochPlanner, TwoSeedsGiveDifferentOrdersAndEachEpochAnother) {
  auto fp = era5_like(500);
  const OrderPlanning planning = planning_of(fp, 64 * 6000);
  auto order = [&](std::uint64_t seed, std::uint64_t epoch) {
    const EpochBatches e(500, Shuffle::Chunk, seed, epoch, {}, 8, false, planning);
    std::vector<std::uint64_t> out;
    for (std::uint64_t j = 0; j < e.worker_batches(); ++j)
      for (auto id : e.batch(j)) out.push_back(id);
    return out;
  };
  EXPECT_EQ(order(1, 0), order(1, 0));
  EXPECT_NE(order(1, 0), order(2, 0));
  EXPECT_NE(order(1, 0), order(1, 1));
  expect_every_sample_once(order(2, 3), 500, "seed 2 epoch 3");
}

TEST(EpochPlanner, PatchesOfAnAnchorStayTogether) {
  // 300 anchors x 4 patches: every sample once, and blocks hold whole anchors
  auto fp = era5_like(300, 1000, 4);
  const OrderPlanning planning = planning_of(fp, 64 * 6000);
  const EpochRun run = run_epoch(*fp, planning, Shuffle::Chunk, 5, 2, 1, 8, 64 * 6);
  expect_every_sample_once(run.visited, 1200, "patches");
  const EpochBatches e(1200, Shuffle::Chunk, 5, 0, {}, 8, false, planning);
  EXPECT_EQ(e.blocks().block_samples % 4, 0u);
}

TEST(EpochPlanner, ElasticResumeDeliversEverySampleOnce) {
  const std::uint64_t n = 1003, batch = 4;
  auto fp = era5_like(n);
  for (const Shuffle shuffle : {Shuffle::None, Shuffle::Random, Shuffle::Chunk}) {
    const OrderPlanning planning = planning_of(fp, 64 * 6000);
    std::vector<std::uint64_t> seen;
    // 2 ranks x 3 workers: every rank receives 50 batches (through its workers, in rank order)
    const std::uint64_t received = 50;
    std::vector<PositionRange> left;
    for (std::uint32_t r = 0; r < 2; ++r)
      for (std::uint32_t w = 0; w < 3; ++w) {
        const EpochBatches e(n, shuffle, 7, 2, ShardSpec{r, 2, w, 3}, batch, false, planning);
        for (std::uint64_t j = 0; j < e.worker_batches(); ++j)
          if (e.rank_batch_index(j) < received) {
            const auto ids = e.batch(j);
            seen.insert(seen.end(), ids.begin(), ids.end());
          }
        if (r == 0 && w == 0) left = e.remaining_after(received);
      }
    std::uint64_t left_total = 0;
    for (const auto& r : left) left_total += r.end - r.begin;
    EXPECT_EQ(left_total, n - seen.size()) << shuffle_name(shuffle);
    // then 3 ranks x 2 workers get halfway (20 batches each), and 1 rank x 1 worker finishes
    auto remaining = std::make_shared<const std::vector<PositionRange>>(left);
    const ShardSpec planned{0, 2, 0, 3};
    std::set<std::uint64_t> counts;
    std::vector<PositionRange> left2;
    for (std::uint32_t r = 0; r < 3; ++r)
      for (std::uint32_t w = 0; w < 2; ++w) {
        const EpochBatches e(n, shuffle, 7, 2, ShardSpec{r, 3, w, 2}, batch, false, planning, remaining, planned);
        counts.insert(e.rank_batches());
        for (std::uint64_t j = 0; j < e.worker_batches(); ++j)
          if (e.rank_batch_index(j) < 20) {
            const auto ids = e.batch(j);
            EXPECT_LE(ids.size(), batch);
            seen.insert(seen.end(), ids.begin(), ids.end());
          }
        if (r == 0 && w == 0) left2 = e.remaining_after(20);
      }
    EXPECT_EQ(counts.size(), 1u);
    const EpochBatches last(n, shuffle, 7, 2, {}, batch, false, planning,
                            std::make_shared<const std::vector<PositionRange>>(left2), planned);
    for (std::uint64_t j = 0; j < last.worker_batches(); ++j) {
      const auto ids = last.batch(j);
      seen.insert(seen.end(), ids.begin(), ids.end());
    }
    EXPECT_TRUE(last.remaining_after(last.rank_batches()).empty());
    expect_every_sample_once(seen, n, shuffle_name(shuffle));
  }
}

TEST(EpochPlanner, EveryRankYieldsAsManyBatches) {
  for (std::uint64_t n : {1u, 7u, 31u, 32u, 33u, 100u})
    for (std::uint32_t world : {1u, 3u, 8u})
      for (bool drop_last : {false, true}) {
        const BatchLayout layout = BatchLayout::of(n, 4, drop_last, world, 2);
        ASSERT_EQ(layout.starts.size(), world * 2u + 1);
        EXPECT_EQ(layout.starts.back(), n);
        std::uint64_t delivered = 0;
        for (auto d : layout.delivered) delivered += d;
        if (!drop_last) {
          EXPECT_EQ(delivered, n);
        }
        std::vector<std::uint64_t> seen;
        for (std::uint32_t r = 0; r < world; ++r) {
          std::uint64_t batches = 0;
          for (std::uint32_t w = 0; w < 2; ++w) {
            const EpochBatches e(n, Shuffle::Random, 3, 0, ShardSpec{r, world, w, 2}, 4, drop_last);
            batches += e.worker_batches();
            EXPECT_EQ(e.rank_batches(), layout.rank_batches);
            for (std::uint64_t j = 0; j < e.worker_batches(); ++j) {
              const auto ids = e.batch(j);
              if (drop_last) {
                EXPECT_EQ(ids.size(), 4u);
              }
              seen.insert(seen.end(), ids.begin(), ids.end());
            }
          }
          EXPECT_EQ(batches, layout.rank_batches) << "n=" << n << " world=" << world;
        }
        if (!drop_last) expect_every_sample_once(seen, n, "n=" + std::to_string(n));
      }
}

TEST(EpochPlanner, BadSizesAreNamed) {
  auto fp = era5_like(1000, 1 << 20);  // 1 MiB units: a sample reads 6 MiB
  // a cache smaller than one batch's footprint (8 x 6 MiB)
  try {
    plan_blocks(*fp, 16u << 20, 8, 1000, {});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("smaller than one batch's footprint"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("16.0 MiB"), std::string::npos) << e.what();
  }
  // overrides whose active blocks do not fit
  try {
    plan_blocks(*fp, 256u << 20, 8, 1000, BlockPlan{100, 4});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("active_blocks 4"), std::string::npos) << e.what();
  }
  // more shards than the blocks the cache allows: a warning naming the sizes
  std::vector<std::string> warnings;
  const BlockPlan p = plan_blocks(*era5_like(1000), 64 * 6000, 8, 1000 / 64, {}, &warnings);
  EXPECT_GE(p.active_blocks, 1u);
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings.front().find("each shard"), std::string::npos) << warnings.front();
  // a derived plan keeps two blocks active and its blocks within the cache
  const BlockPlan q = plan_blocks(*era5_like(2904), 64 * 6000, 8, 2904, {});
  EXPECT_GE(q.active_blocks, 2u);
  EXPECT_LE(q.active_blocks * (q.block_samples + 6), 64u * 6 * 3 / 4 + q.active_blocks);
}
