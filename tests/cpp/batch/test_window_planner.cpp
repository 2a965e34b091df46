// Windows on the epoch planner (docs/batching.md "The epoch planner"): a BatchGenerator with
// shuffle "chunk" over windows that read several chunks along time (sliding windows over 1-step
// chunks, targets shifted past the window) plans blocks over the windows' footprint. Measured
// as in test_epoch_planner.cpp: each process's own LRU cache of the chunks its windows read
// (egress), the Spearman correlation of position and window time, the median batch's time span,
// seeds, every window exactly once across ranks x workers and across a resume in jobs of other
// sizes; windows inside one chunk keep the chunk groups; errors and warnings name the sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "batch_test_data.hpp"
#include "epoch_quality.hpp"
#include "lazycube/batch/batch_generator.hpp"
#include "lazycube/error.hpp"

using namespace lazycube;
using namespace lazycube::batch;
using lazycube::testing::LruUnits;
using lazycube::testing::spearman_of_order;
using lazycube::testing::median_batch_span;
using lazycube::testing::expect_every_sample_once;
using lazycube::testing::position_dataset;

namespace window_planner_test {

// 2 float32 variables of 4 x 4 per step, chunks of one step: a unit (one step of both) is 128
// bytes; windows of 6 steps with overlap 5 read 6 units.
constexpr std::uint64_t kUnitBytes = 2 * 4 * 4 * 4;

BatchOptions sliding(std::uint64_t batch, std::uint64_t cache_bytes) {
  BatchOptions o;
  o.input_dims = {{"time", 6}, {"y", 4}, {"x", 4}};
  o.input_overlap = {{"time", 5}};
  o.batch_size = batch;
  o.drop_last = false;
  o.shuffle = Shuffle::Chunk;
  o.seed = 1;
  o.prefetch = 0;
  o.fetch_ahead_bytes = 0;
  o.cache = std::make_shared<ChunkCache>(cache_bytes);
  return o;
}

struct JobRun {
  std::vector<std::uint64_t> visited;  // window ids, shard after shard
  std::vector<std::vector<std::uint64_t>> batches;
  std::uint64_t fetches = 0, distinct = 0;
};

// One epoch of every shard of a world x workers job, each process with an LRU of `cache_units`
// time steps; a window starting at step t reads steps t .. t + span - 1.
JobRun run_job(const Dataset& ds, BatchOptions o, std::uint32_t world, std::uint32_t workers, std::uint64_t cache_units,
            std::uint64_t span = 6) {
  JobRun run;
  std::set<std::uint64_t> needed;
  for (std::uint32_t r = 0; r < world; ++r)
    for (std::uint32_t w = 0; w < workers; ++w) {
      o.shard = {r, world, w, workers};
      BatchGenerator g(ds, o);
      LruUnits lru;
      lru.capacity = cache_units;
      while (auto b = g.next()) {
        run.batches.push_back(b->window_ids);
        for (std::size_t k = 0; k < b->window_ids.size(); ++k) {
          run.visited.push_back(b->window_ids[k]);
          for (std::uint64_t t = b->windows[k][0].start; t < b->windows[k][0].start + span; ++t) {
            lru.touch(t);
            needed.insert(t);
          }
        }
      }
      run.fetches += lru.fetches;
    }
  run.distinct = needed.size();
  return run;
}

std::vector<std::uint64_t> ids_of(BatchGenerator& g, std::uint64_t epoch, std::uint64_t most_batches = ~0ull) {
  g.set_epoch(epoch);
  std::vector<std::uint64_t> ids;
  for (std::uint64_t k = 0; k < most_batches; ++k) {
    auto b = g.next();
    if (!b) break;
    ids.insert(ids.end(), b->window_ids.begin(), b->window_ids.end());
  }
  return ids;
}

}  // namespace window_planner_test

using namespace window_planner_test;

TEST(WindowPlanner, SlidingWindowsFetchEachChunkAboutOnceAndStillShuffle) {
  // The issue's BatchDataset case: 6-step windows, overlap 5, over 1-step chunks; 2,904 steps.
  const std::uint64_t nt = 2904, batch = 8, footprint = 6 * kUnitBytes;
  auto ds = position_dataset(nt, 4, 4, {1, 4, 4});
  const std::uint64_t windows = nt - 5;
  struct Case {
    std::uint32_t world, workers;
    std::uint64_t footprints;
    double most_egress;
  };
  for (const Case c : {Case{1, 1, 64, 1.10}, Case{8, 1, 64, 1.10}, Case{8, 2, 64, 1.10}, Case{1, 1, 16, 1.5}}) {
    const std::uint64_t cache = c.footprints * footprint;
    const JobRun run = run_job(ds, sliding(batch, cache), c.world, c.workers, cache / kUnitBytes);
    const std::string what = "W=" + std::to_string(c.world) + " x " + std::to_string(c.workers) + " workers, cache of " +
                             std::to_string(c.footprints) + " footprints";
    expect_every_sample_once(run.visited, windows, what);
    const double egress = static_cast<double>(run.fetches) / static_cast<double>(run.distinct);
    std::printf("%s: egress %.3f, spearman %.3f, median batch span %.3f\n", what.c_str(), egress,
                spearman_of_order(run.visited), median_batch_span(run.batches, windows));
    EXPECT_LE(egress, c.most_egress) << what;
    EXPECT_LE(std::fabs(spearman_of_order(run.visited)), 0.1) << what;
    EXPECT_GE(median_batch_span(run.batches, windows), 0.5) << what;
  }
  // The planner is what orders them: blocks derived from the cache, at least two active.
  BatchGenerator g(ds, sliding(batch, 64 * footprint));
  const auto plan = g.block_plan(1, 1);
  ASSERT_TRUE(plan.has_value());
  EXPECT_GE(plan->active_blocks, 2u);
  EXPECT_GT(plan->block_samples, 6u * 6u);
  // Random shuffle fetches each chunk several times with the same cache.
  auto random = sliding(batch, 64 * footprint);
  random.shuffle = Shuffle::Random;
  const JobRun r = run_job(ds, random, 1, 1, 64 * 6);
  EXPECT_GT(static_cast<double>(r.fetches) / static_cast<double>(r.distinct), 3.0);
}

TEST(WindowPlanner, SeedsAndEpochsGiveOtherOrdersOfEveryWindow) {
  auto ds = position_dataset(600, 4, 4, {1, 4, 4});
  auto o = sliding(8, 64 * 6 * kUnitBytes);
  BatchGenerator a(ds, o);
  o.seed = 2;
  BatchGenerator b(ds, o);
  const auto a0 = ids_of(a, 0);
  expect_every_sample_once(a0, 595, "seed 1");
  EXPECT_EQ(a0, ids_of(a, 0));
  EXPECT_NE(a0, ids_of(b, 0));
  EXPECT_NE(a0, ids_of(a, 1));
  // batch(i, epoch) gives the batches next() gives
  a.set_epoch(0);
  const auto first = a.next();
  EXPECT_EQ(a.batch(0, 0).window_ids, first->window_ids);
}

TEST(WindowPlanner, GridsOfSeveralDimsKeepThePatchesOfATimeTogether) {
  // 6-step windows (overlap 5) of 4 x 4 over an 8 x 8 grid: four windows at each time.
  auto ds = position_dataset(300, 8, 8, {1, 8, 8});
  auto o = sliding(8, 64 * 6 * 4 * kUnitBytes);
  BatchGenerator g(ds, o);
  const auto plan = g.block_plan(1, 1);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->block_samples % 4, 0u);
  expect_every_sample_once(ids_of(g, 0), g.total_windows(), "4 windows per time");
}

TEST(WindowPlanner, WindowsInsideOneChunkKeepTheChunkGroups) {
  // 1-step windows over chunks of 4 steps: each chunk's windows form one stretch, as before.
  auto ds = position_dataset(40, 4, 4, {4, 4, 4});
  auto o = sliding(6, 1 << 20);
  o.input_dims = {{"time", 1}, {"y", 4}, {"x", 4}};
  o.input_overlap = {};
  BatchGenerator g(ds, o);
  EXPECT_FALSE(g.block_plan(1, 1).has_value());
  std::vector<std::uint64_t> chunks;
  for (const auto id : ids_of(g, 0)) {
    const std::uint64_t chunk = g.grid().unravel(id)[0] / 4;
    if (chunks.empty() || chunks.back() != chunk) chunks.push_back(chunk);
  }
  EXPECT_EQ(chunks.size(), 10u);
  // ... but a target one step past each window reads two chunks at the chunk ends: planned.
  o.target = TargetSpec{{}, {{"time", 4}}};
  BatchGenerator shifted(ds, o);
  EXPECT_TRUE(shifted.block_plan(1, 1).has_value());
  expect_every_sample_once(ids_of(shifted, 0), shifted.total_windows(), "target offset");
  // Other orders are never planned in blocks.
  o.shuffle = Shuffle::Random;
  EXPECT_FALSE(BatchGenerator(ds, o).block_plan(1, 1).has_value());
}

TEST(WindowPlanner, AResumedEpochDeliversEveryWindowOnceInJobsOfOtherSizes) {
  // A 2 x 2 job delivers 5 batches per shard, a 3 x 1 job (resuming its state, with another
  // cache and batch size) 4 batches per rank, and a 1 x 1 job the rest: every window exactly once.
  auto ds = position_dataset(800, 4, 4, {1, 4, 4});
  const std::uint64_t bs = 8, windows = 795;
  auto o = sliding(bs, 64 * 6 * kUnitBytes);
  const auto plan = BatchGenerator(ds, o).block_plan(2, 2);
  ASSERT_TRUE(plan.has_value());
  std::vector<std::uint64_t> seen;
  // stage 1: fresh epoch 3, shards of the whole order
  const std::vector<std::uint64_t> starts = even_shard_starts(windows, 4);
  std::vector<PositionRange> left;
  for (std::uint32_t s = 0; s < 4; ++s) {
    auto so = o;
    so.shard = {s / 2, 2, s % 2, 2};
    BatchGenerator g(ds, so);
    const auto ids = ids_of(g, 3, 5);
    seen.insert(seen.end(), ids.begin(), ids.end());
    left.push_back({starts[s] + ids.size(), starts[s + 1]});
  }
  // stage 2: 3 ranks resume with the stretches left, planned as the 2 x 2 job planned them
  EpochRemainder resume{3, left, 2, 2, *plan};
  std::uint64_t to_visit = 0;
  for (const auto& r : left) to_visit += r.end - r.begin;
  const std::vector<std::uint64_t> starts2 = even_shard_starts(to_visit, 3);
  std::vector<PositionRange> consumed;  // in the concatenation of `left`
  for (std::uint32_t r = 0; r < 3; ++r) {
    auto so = o;
    so.shard = {r, 3, 0, 1};
    so.resume = resume;
    so.cache = std::make_shared<ChunkCache>(1 << 20);  // another cache: the blocks come with the state
    so.batch_size = 5;                                  // and another batch size
    BatchGenerator g(ds, so);
    const auto ids = ids_of(g, 3, 4);
    seen.insert(seen.end(), ids.begin(), ids.end());
    consumed.push_back({starts2[r], starts2[r] + ids.size()});
  }
  // what is left, back in positions of the whole order
  std::vector<PositionRange> left2;
  std::uint64_t offset = 0;
  for (const auto& r : left) {
    const std::uint64_t n = r.end - r.begin;
    std::uint64_t at = offset;
    for (const auto& c : consumed) {
      const std::uint64_t lo = std::max(c.begin, offset), hi = std::min(c.end, offset + n);
      if (lo >= hi) continue;
      if (lo > at) left2.push_back({r.begin + at - offset, r.begin + lo - offset});
      at = std::max(at, hi);
    }
    if (at < offset + n) left2.push_back({r.begin + at - offset, r.end});
    offset += n;
  }
  // stage 3: one process finishes the epoch; the next epoch is whole
  auto so = o;
  so.resume = EpochRemainder{3, left2, 2, 2, *plan};
  BatchGenerator last(ds, so);
  const auto rest = ids_of(last, 3);
  seen.insert(seen.end(), rest.begin(), rest.end());
  expect_every_sample_once(seen, windows, "2x2 -> 3x1 -> 1x1");
  expect_every_sample_once(ids_of(last, 4), windows, "the next epoch");
  // the document carries the planned shards and blocks
  auto doc = nlohmann::ordered_json::parse(R"({"input_dims": {"time": 6}, "batch_size": 8, "shuffle": "chunk",
      "resume": {"epoch": 3, "remaining": [[0, 5]], "planned_for": [2, 2], "blocks": [96, 3]}})");
  const BatchOptions parsed = BatchOptions::from_json(doc);
  EXPECT_EQ(parsed.resume->planned_world_size, 2u);
  EXPECT_EQ(parsed.resume->planned_num_workers, 2u);
  EXPECT_EQ(parsed.resume->blocks, (BlockPlan{96, 3}));
  doc["resume"]["planned_for"] = {0, 2};
  EXPECT_THROW(BatchOptions::from_json(doc), UsageError);
  doc["resume"]["planned_for"] = {2, 2};
  doc["resume"]["sideways"] = 1;
  EXPECT_THROW(BatchOptions::from_json(doc), UsageError);
}

TEST(WindowPlanner, BadSizesAreErrorsAndWarningsNamingThem) {
  auto ds = position_dataset(600, 4, 4, {1, 4, 4});
  // A cache below one batch's footprint (8 windows x 6 steps x 128 bytes = 6 KiB).
  auto o = sliding(8, 4 << 10);
  try {
    BatchGenerator g(ds, o);
    FAIL() << "a cache below one batch's footprint was accepted";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cache_bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("at least"), std::string::npos) << what;
  }
  // Overrides the cache cannot hold.
  o = sliding(8, 64 * 6 * kUnitBytes);
  o.blocks = {200, 8};
  try {
    BatchGenerator g(ds, o);
    FAIL() << "active blocks beyond the cache were accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("active_blocks 8"), std::string::npos) << e.what();
  }
  // Overrides that fit are taken, from the document too.
  auto doc = nlohmann::ordered_json::parse(R"({"input_dims": {"time": 6, "y": 4, "x": 4}, "input_overlap": {"time": 5},
      "batch_size": 8, "shuffle": "chunk", "block_samples": 40, "active_blocks": 2, "cache_bytes": 49152})");
  BatchGenerator fits(ds, BatchOptions::from_json(doc));
  EXPECT_EQ(fits.block_plan(1, 1), (BlockPlan{40, 2}));  // kept as given
  expect_every_sample_once(ids_of(fits, 0), 595, "overrides");
  // Many shards of few windows: a warning names the share of the bytes to expect.
  o = sliding(8, 64 * 6 * kUnitBytes);
  o.shard = {0, 64, 0, 1};
  BatchGenerator many(ds, o);
  bool named = false;
  for (const auto& w : many.warnings()) named = named || w.find("samples") != std::string::npos;
  EXPECT_TRUE(named);
}
