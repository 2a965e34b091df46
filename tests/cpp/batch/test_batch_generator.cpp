// BatchGenerator in stacked mode (batch_size > 0): contents, order, shuffling, sharding,
// targets, casting, the validity filter, prefetch errors, resumable state, allocators.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <set>
#include <nlohmann/json.hpp>

#include "batch_test_data.hpp"
#include "lazycube/batch/batch_generator.hpp"
#include "lazycube/error.hpp"

using namespace lazycube;
using namespace lazycube::batch;
using lazycube::testing::cell_value;
using lazycube::testing::position_dataset;

namespace {

template <class T>
T at(const BatchArray& a, std::uint64_t flat) {
  T v;
  std::memcpy(&v, a.data.get() + flat * sizeof(T), sizeof(T));
  return v;
}

BatchOptions stacked(std::uint64_t bs) {
  BatchOptions o;
  o.input_dims = {{"time", 2}, {"y", 4}, {"x", 5}};
  o.batch_size = bs;
  o.cache = std::make_shared<ChunkCache>(64 << 20);
  return o;
}

// Checks every element of x (float32, dims sample, channel, time, y, x) against cell values.
void expect_window_values(const Batch& b, const std::vector<int>& var_of_channel, std::int64_t dt = 0,
                          const BatchArray* arr = nullptr) {
  const BatchArray& x = arr ? *arr : b.arrays.at(0);
  ASSERT_EQ(x.dims, (std::vector<std::string>{"sample", "channel", "time", "y", "x"}));
  const auto& s = x.shape;
  std::uint64_t flat = 0;
  for (std::uint64_t k = 0; k < s[0]; ++k)
    for (std::uint64_t c = 0; c < s[1]; ++c)
      for (std::uint64_t t = 0; t < s[2]; ++t)
        for (std::uint64_t y = 0; y < s[3]; ++y)
          for (std::uint64_t xx = 0; xx < s[4]; ++xx, ++flat) {
            const auto& w = b.windows[k];
            const double expect = cell_value(var_of_channel[c], static_cast<std::uint64_t>(static_cast<std::int64_t>(w[0].start + t) + dt),
                                             w[1].start + y, w[2].start + xx);
            ASSERT_EQ(at<float>(x, flat), static_cast<float>(expect)) << "sample " << k << " channel " << c;
          }
}

std::vector<std::uint64_t> epoch_ids(BatchGenerator& g, std::uint64_t epoch) {
  g.set_epoch(epoch);
  std::vector<std::uint64_t> ids;
  while (auto b = g.next()) ids.insert(ids.end(), b->window_ids.begin(), b->window_ids.end());
  return ids;
}

}  // namespace

TEST(BatchGenerator, StackedBatchesHoldTheWindowsInRowMajorOrder) {
  auto ds = position_dataset(10, 12, 20, {2, 12, 20});
  BatchGenerator g(ds, stacked(7));
  // windows: time 5 x y 3 x x 4 = 60 -> 9 batches (8 of 7, one of 4)
  EXPECT_EQ(g.total_windows(), 60u);
  EXPECT_EQ(g.size(), 9u);
  std::uint64_t seen = 0, batches = 0;
  while (auto b = g.next()) {
    EXPECT_EQ(b->index, batches);
    EXPECT_EQ(b->channels, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(b->arrays[0].shape, (Shape{b->window_ids.size(), 2, 2, 4, 5}));
    EXPECT_EQ(b->arrays[0].dtype, DataType::float_(4));
    for (std::size_t k = 0; k < b->window_ids.size(); ++k) EXPECT_EQ(b->window_ids[k], seen + k);
    expect_window_values(*b, {0, 1});
    seen += b->window_ids.size();
    ++batches;
  }
  EXPECT_EQ(seen, 60u);
  EXPECT_EQ(batches, 9u);
  EXPECT_FALSE(g.next().has_value());  // stays at the end until the next epoch
}

TEST(BatchGenerator, DropLastDropsTheShortBatch) {
  auto ds = position_dataset(10, 12, 20, {2, 12, 20});
  auto o = stacked(7);
  o.drop_last = true;
  BatchGenerator g(ds, o);
  EXPECT_EQ(g.size(), 8u);
  std::uint64_t n = 0;
  while (auto b = g.next()) {
    EXPECT_EQ(b->window_ids.size(), 7u);
    ++n;
  }
  EXPECT_EQ(n, 8u);
}

TEST(BatchGenerator, WindowCoordinatesAreTheLabelsOfEachWindow) {
  auto ds = position_dataset(10, 12, 20, {2, 12, 20});
  BatchGenerator g(ds, stacked(5));
  auto b = g.batch(3);
  ASSERT_EQ(b.window_dims, (std::vector<std::string>{"time", "y", "x"}));
  ASSERT_TRUE(b.coords.count("time"));
  ASSERT_TRUE(b.coords.count("x"));
  EXPECT_FALSE(b.coords.count("y"));  // no index coordinate
  const NDArray& t = b.coords.at("time");
  const NDArray& x = b.coords.at("x");
  EXPECT_EQ(t.shape, (Shape{5, 2}));
  EXPECT_EQ(x.shape, (Shape{5, 5}));
  for (std::size_t k = 0; k < 5; ++k) {
    for (std::uint64_t j = 0; j < 2; ++j)
      EXPECT_EQ(t.values<std::int64_t>()[k * 2 + j], static_cast<std::int64_t>(b.windows[k][0].start + j));
    for (std::uint64_t j = 0; j < 5; ++j)
      EXPECT_EQ(x.values<double>()[k * 5 + j], static_cast<double>(b.windows[k][2].start + j) / 4.0);
  }
}

TEST(BatchGenerator, OverlapAndRandomAccessMatchIteration) {
  auto ds = position_dataset(6, 12, 20, {3, 6, 10});
  auto o = stacked(4);
  o.input_overlap = {{"y", 2}, {"x", 3}};
  BatchGenerator g(ds, o);
  // y: floor((12-2)/2) = 5, x: floor((20-3)/2) = 8, time: 3 -> 120 windows
  EXPECT_EQ(g.total_windows(), 3u * 5u * 8u);
  std::uint64_t i = 0;
  while (auto b = g.next()) {
    auto direct = g.batch(i++);
    EXPECT_EQ(direct.window_ids, b->window_ids);
    ASSERT_EQ(direct.arrays[0].nbytes, b->arrays[0].nbytes);
    EXPECT_EQ(std::memcmp(direct.arrays[0].data.get(), b->arrays[0].data.get(), b->arrays[0].nbytes), 0);
    expect_window_values(*b, {0, 1});
  }
  EXPECT_EQ(i, g.size());
  EXPECT_THROW(g.batch(g.size()), UsageError);
}

TEST(BatchGenerator, RandomShuffleIsSeededPerEpochAndVisitsEveryWindowOnce) {
  auto ds = position_dataset(10, 12, 20, {2, 12, 20});
  auto o = stacked(8);
  o.shuffle = Shuffle::Random;
  o.seed = 42;
  BatchGenerator g(ds, o), same(ds, o);
  auto e0 = epoch_ids(g, 0), e1 = epoch_ids(g, 1);
  EXPECT_EQ(e0, epoch_ids(same, 0));
  EXPECT_NE(e0, e1);
  for (auto* ids : {&e0, &e1}) {
    std::vector<std::uint64_t> sorted = *ids;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted.size(), 60u);
    for (std::uint64_t k = 0; k < 60; ++k) EXPECT_EQ(sorted[k], k);
  }
  std::vector<std::uint64_t> identity(60);
  for (std::uint64_t k = 0; k < 60; ++k) identity[k] = k;
  EXPECT_NE(e0, identity);
  o.seed = 43;
  BatchGenerator other(ds, o);
  EXPECT_NE(epoch_ids(other, 0), e0);
  // Values follow the shuffled windows.
  g.set_epoch(3);
  expect_window_values(*g.next(), {0, 1});
}

TEST(BatchGenerator, ChunkShuffleFetchesEachChunkOncePerEpoch) {
  // 40 time steps in chunks of 4, windows of 1 time step: 10 chunk groups per variable.
  auto ds = position_dataset(40, 12, 20, {4, 12, 20});
  auto o = stacked(6);
  o.input_dims = {{"time", 1}, {"y", 4}, {"x", 5}};
  o.shuffle = Shuffle::Chunk;
  o.seed = 7;
  BatchGenerator g(ds, o);
  auto ids = epoch_ids(g, 0);
  std::set<std::uint64_t> unique(ids.begin(), ids.end());
  EXPECT_EQ(unique.size(), g.total_windows());
  EXPECT_EQ(ids.size(), g.total_windows());
  // Consecutive windows stay within one time chunk until it is exhausted: each chunk's
  // windows form one stretch of the epoch.
  std::vector<std::uint64_t> chunk_seq;
  for (auto id : ids) {
    const std::uint64_t chunk = g.grid().unravel(id)[0] / 4;
    if (chunk_seq.empty() || chunk_seq.back() != chunk) chunk_seq.push_back(chunk);
  }
  EXPECT_EQ(chunk_seq.size(), 10u);
  EXPECT_NE(ids, epoch_ids(g, 1));
}

TEST(BatchGenerator, ShardsPartitionEachEpochExactly) {
  auto ds = position_dataset(10, 12, 20, {2, 12, 20});
  for (auto shuffle : {Shuffle::None, Shuffle::Random, Shuffle::Chunk}) {
    for (std::uint32_t world = 1; world <= 3; ++world) {
      for (std::uint32_t workers = 1; workers <= 2; ++workers) {
        std::multiset<std::uint64_t> all;
        for (std::uint32_t r = 0; r < world; ++r)
          for (std::uint32_t w = 0; w < workers; ++w) {
            auto o = stacked(7);
            o.shuffle = shuffle;
            o.seed = 5;
            o.shard = {r, world, w, workers};
            BatchGenerator g(ds, o);
            auto ids = epoch_ids(g, 2);
            EXPECT_EQ(ids.size(), g.shard_windows());
            all.insert(ids.begin(), ids.end());
          }
        ASSERT_EQ(all.size(), 60u) << shuffle_name(shuffle) << " world " << world << " workers " << workers;
        for (std::uint64_t k = 0; k < 60; ++k) EXPECT_EQ(all.count(k), 1u);
      }
    }
  }
  auto o = stacked(7);
  o.shard = {2, 2, 0, 1};
  EXPECT_THROW(BatchGenerator(ds, o), UsageError);
}

TEST(BatchGenerator, AResumedEpochSharesOutOnlyTheRemainingStretches) {
  auto ds = position_dataset(10, 12, 20, {2, 12, 20});
  auto whole = stacked(4);
  whole.shuffle = Shuffle::Random;
  whole.seed = 3;
  BatchGenerator one(ds, whole);
  const auto order = epoch_ids(one, 1);  // epoch position -> window
  ASSERT_EQ(order.size(), 60u);
  const std::vector<PositionRange> remaining = {{3, 10}, {25, 25}, {25, 40}, {55, 60}};
  std::multiset<std::uint64_t> want;
  for (const auto& r : remaining)
    for (auto p = r.begin; p < r.end; ++p) want.insert(order[p]);
  for (std::uint32_t shards = 1; shards <= 5; ++shards) {
    std::multiset<std::uint64_t> got, next_epoch;
    for (std::uint32_t s = 0; s < shards; ++s) {
      auto o = whole;
      o.shard = {s, shards, 0, 1};
      o.resume = EpochRemainder{1, remaining};
      BatchGenerator g(ds, o);
      const auto ids = epoch_ids(g, 1);
      got.insert(ids.begin(), ids.end());
      const auto later = epoch_ids(g, 2);  // other epochs are whole
      next_epoch.insert(later.begin(), later.end());
    }
    EXPECT_EQ(got, want) << shards << " shards";
    EXPECT_EQ(next_epoch.size(), 60u);
  }
  // the document form, and stretches that do not fit the epoch
  auto doc = nlohmann::ordered_json::parse(R"({"input_dims": {"time": 2, "y": 4, "x": 5}, "batch_size": 4,
      "shuffle": "random", "seed": 3, "resume": {"epoch": 1, "remaining": [[3, 10], [25, 25], [25, 40], [55, 60]]}})");
  const BatchOptions parsed = BatchOptions::from_json(doc);
  ASSERT_TRUE(parsed.resume.has_value());
  EXPECT_EQ(parsed.resume->remaining, remaining);
  doc["resume"]["remaining"] = {{10, 3}};
  EXPECT_THROW(BatchGenerator(ds, BatchOptions::from_json(doc)), UsageError);
  doc["resume"]["remaining"] = {{50, 61}};
  EXPECT_THROW(BatchGenerator(ds, BatchOptions::from_json(doc)), UsageError);
  doc["resume"] = {{"epoch", 1}};
  try {
    BatchOptions::from_json(doc);
    FAIL() << "a resume without remaining stretches was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("resume"), std::string::npos) << e.what();
  }
}

TEST(BatchGenerator, StateRestoresMidEpochInANewGenerator) {
  auto ds = position_dataset(10, 12, 20, {2, 12, 20});
  auto o = stacked(4);
  o.shuffle = Shuffle::Random;
  o.seed = 9;
  BatchGenerator g(ds, o);
  g.set_epoch(1);
  for (int k = 0; k < 5; ++k) g.next();
  const auto state = g.state();
  std::vector<std::vector<std::uint64_t>> rest;
  while (auto b = g.next()) rest.push_back(b->window_ids);

  BatchGenerator h(ds, o);
  h.restore(nlohmann::json::parse(state.dump()));
  EXPECT_EQ(h.epoch(), 1u);
  std::vector<std::vector<std::uint64_t>> again;
  std::uint64_t index = 5;
  while (auto b = h.next()) {
    EXPECT_EQ(b->index, index++);
    again.push_back(b->window_ids);
  }
  EXPECT_EQ(again, rest);

  auto other = o;
  other.seed = 10;
  BatchGenerator wrong(ds, other);
  try {
    wrong.restore(state);
    FAIL() << "restore accepted a state of another configuration";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("seed"), std::string::npos) << e.what();
  }
  EXPECT_THROW(wrong.restore(nlohmann::json{{"epoch", 1}}), UsageError);
}

TEST(BatchGenerator, TargetIsTheWindowShiftedAlongTime) {
  auto ds = position_dataset(10, 12, 20, {2, 12, 20});
  auto o = stacked(6);
  o.variables = {"a"};
  o.target = TargetSpec{{"b"}, {{"time", 1}}};
  BatchGenerator g(ds, o);
  // time extent for windows of 2 shrinks to 9: 4 windows along time.
  EXPECT_EQ(g.total_windows(), 4u * 3u * 4u);
  std::uint64_t n = 0;
  while (auto b = g.next()) {
    ASSERT_TRUE(b->target.has_value());
    EXPECT_EQ(b->target_channels, (std::vector<std::string>{"b"}));
    expect_window_values(*b, {0});
    expect_window_values(*b, {1}, +1, &*b->target);
    n += b->window_ids.size();
  }
  EXPECT_EQ(n, g.total_windows());

  o.target = TargetSpec{{}, {{"time", -3}}};  // predict the past: windows start at t >= 3
  BatchGenerator back(ds, o);
  auto b = back.batch(0);
  EXPECT_EQ(b.windows[0][0].start, 3u);
  expect_window_values(b, {0});
  expect_window_values(b, {0}, -3, &*b.target);
}

TEST(BatchGenerator, ChannelsOfOtherDtypesAreCast) {
  auto ds = position_dataset(4, 8, 10, {2, 8, 10}, {"f4", "f8", "i4"});
  auto o = stacked(3);
  o.input_dims = {{"time", 1}, {"y", 4}, {"x", 5}};
  BatchGenerator g(ds, o);
  auto b = g.batch(1);
  EXPECT_EQ(b.arrays[0].dtype, DataType::float_(8));  // common dtype of f4, f8, i4
  o.dtype = DataType::float_(4);
  BatchGenerator f32(ds, o);
  auto c = f32.batch(1);
  EXPECT_EQ(c.arrays[0].dtype, DataType::float_(4));
  expect_window_values(c, {0, 1, 2});
  for (std::uint64_t k = 0; k < b.arrays[0].size(); ++k)
    EXPECT_EQ(static_cast<float>(at<double>(b.arrays[0], k)), at<float>(c.arrays[0], k));
}

TEST(BatchGenerator, WindowDimsFollowInputDimsOrder) {
  auto ds = position_dataset(4, 8, 10, {2, 8, 10});
  auto o = stacked(2);
  o.input_dims = {{"x", 5}, {"y", 4}, {"time", 1}};  // transposed relative to the data
  BatchGenerator g(ds, o);
  auto b = g.batch(0);
  const BatchArray& x = b.arrays[0];
  ASSERT_EQ(x.dims, (std::vector<std::string>{"sample", "channel", "x", "y", "time"}));
  ASSERT_EQ(x.shape, (Shape{2, 2, 5, 4, 1}));
  std::uint64_t flat = 0;
  for (std::uint64_t k = 0; k < 2; ++k)
    for (int c = 0; c < 2; ++c)
      for (std::uint64_t xx = 0; xx < 5; ++xx)
        for (std::uint64_t y = 0; y < 4; ++y, ++flat)
          EXPECT_EQ(at<float>(x, flat), static_cast<float>(cell_value(c, b.windows[k][2].start, b.windows[k][1].start + y,
                                                                      b.windows[k][0].start + xx)));
}

TEST(BatchGenerator, DimsNotInInputDimsAreTakenWhole) {
  auto ds = position_dataset(3, 8, 10, {1, 8, 10});
  auto o = stacked(4);
  o.input_dims = {{"y", 4}, {"x", 5}};
  BatchGenerator g(ds, o);
  auto b = g.batch(0);
  EXPECT_EQ(b.arrays[0].dims, (std::vector<std::string>{"sample", "channel", "y", "x", "time"}));
  EXPECT_EQ(b.arrays[0].shape, (Shape{4, 2, 4, 5, 3}));
  // element (k=1, c=1, y=2, x=3, t=2)
  const std::uint64_t flat = (((1 * 2 + 1) * 4 + 2) * 5 + 3) * 3 + 2;
  EXPECT_EQ(at<float>(b.arrays[0], flat),
            static_cast<float>(cell_value(1, 2, b.windows[1][0].start + 2, b.windows[1][1].start + 3)));
}

TEST(BatchGenerator, ValidityFilterSkipsWindowsWithTooManyNaNs) {
  // NaN in variable a wherever x < 5 and t is odd, and a single NaN at (0, 0, 7).
  auto nan_if = [](std::uint64_t t, std::uint64_t, std::uint64_t x) {
    return (x < 5 && t % 2 == 1) || (t == 0 && x == 7);
  };
  auto ds = position_dataset(8, 8, 20, {2, 8, 10}, {"f4", "f4"}, nan_if);
  auto o = stacked(3);
  o.input_dims = {{"time", 1}, {"y", 4}, {"x", 5}};
  for (double threshold : {0.0, 0.05, 1.0}) {
    o.filter = ValidityFilter{"a", threshold};
    BatchGenerator g(ds, o);
    std::vector<std::uint64_t> kept;
    while (auto b = g.next()) {
      kept.insert(kept.end(), b->window_ids.begin(), b->window_ids.end());
      EXPECT_LE(b->window_ids.size(), 3u);
    }
    std::vector<std::uint64_t> expect;
    for (std::uint64_t id = 0; id < g.total_windows(); ++id) {
      auto r = g.grid().ranges(id);
      std::uint64_t nans = 0;
      for (std::uint64_t y = r[1].start; y < r[1].start + 4; ++y)
        for (std::uint64_t x = r[2].start; x < r[2].start + 5; ++x) nans += nan_if(r[0].start, y, x);
      if (static_cast<double>(nans) / 20.0 <= threshold) expect.push_back(id);
    }
    EXPECT_EQ(kept, expect) << "threshold " << threshold;
    EXPECT_THROW(g.batch(0), UsageError);
  }
  // Resuming with a filter continues where it stopped.
  o.filter = ValidityFilter{"", 0.0};
  o.shuffle = Shuffle::Random;
  BatchGenerator g(ds, o);
  g.next();
  g.next();
  auto state = g.state();
  std::vector<std::uint64_t> rest;
  while (auto b = g.next()) rest.insert(rest.end(), b->window_ids.begin(), b->window_ids.end());
  BatchGenerator h(ds, o);
  h.restore(state);
  std::vector<std::uint64_t> again;
  while (auto b = h.next()) again.insert(again.end(), b->window_ids.begin(), b->window_ids.end());
  EXPECT_EQ(again, rest);
}

namespace {
// An array whose reads fail for time steps >= poison_from.
class PoisonedArray : public lazycube::testing::FakeArray {
 public:
  using FakeArray::FakeArray;
  std::uint64_t poison_from = 0;
  void read(const ArraySelection& sel, MutableByteView dest) const override {
    if (sel[0].start + sel[0].count > poison_from) throw StoreError("poisoned time step in memory://fake");
    FakeArray::read(sel, dest);
  }
  using FakeArray::read;
};
}  // namespace

TEST(BatchGenerator, AnErrorSurfacesOnTheBatchItBelongsTo) {
  std::vector<float> values(10 * 4 * 4, 1.0f);
  Buffer data(values.size() * 4);
  std::memcpy(data.data(), values.data(), data.size());
  auto arr = std::make_shared<PoisonedArray>(DataType::float_(4), Shape{10, 4, 4}, std::move(data));
  arr->poison_from = 6;
  arr->with_dims({"time", "y", "x"});
  Dataset ds({variable_from_array("a", arr, false, 2)}, nlohmann::json::object());
  BatchOptions o;
  o.input_dims = {{"time", 1}, {"y", 4}, {"x", 4}};
  o.batch_size = 2;
  o.prefetch = 3;
  BatchGenerator g(ds, o);
  for (int k = 0; k < 3; ++k) ASSERT_TRUE(g.next().has_value()) << k;  // times 0..5
  EXPECT_THROW(g.next(), StoreError);  // times 6, 7
  EXPECT_THROW(g.next(), StoreError);  // retried: still failing
  arr->poison_from = 100;
  auto b = g.next();  // the failed batch, now readable
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->index, 3u);
  EXPECT_EQ(b->windows[0][0].start, 6u);
}

TEST(BatchGenerator, CallerAllocatorProvidesTheBuffers) {
  auto ds = position_dataset(4, 8, 10, {2, 8, 10});
  auto o = stacked(3);
  std::atomic<std::size_t> calls{0}, bytes{0};
  o.allocator = [&](std::size_t n) {
    ++calls;
    bytes += n;
    return std::shared_ptr<std::byte>(static_cast<std::byte*>(::operator new(n, std::align_val_t{64})),
                                      [](std::byte* p) { ::operator delete(p, std::align_val_t{64}); });
  };
  BatchGenerator g(ds, o);
  auto b = g.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_GE(calls.load(), 1u);
  EXPECT_GE(bytes.load(), b->arrays[0].nbytes);
  expect_window_values(*b, {0, 1});
}

TEST(BatchGenerator, BadArgumentsNameWhatIsWrong) {
  auto ds = position_dataset(4, 8, 10, {2, 8, 10});
  auto expect_error = [&](BatchOptions o, const std::string& needle) {
    try {
      BatchGenerator g(ds, o);
      FAIL() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto o = stacked(2);
  o.variables = {"a", "nope"};
  expect_error(o, "nope");
  o = stacked(2);
  o.input_dims = {{"time", 1}, {"level", 2}};
  expect_error(o, "level");
  o = stacked(2);
  o.input_dims = {{"time", 5}};
  expect_error(o, "time");
  o = stacked(2);
  o.batch_dims = {{"time", 2}};
  expect_error(o, "batch_dims");
  o = stacked(2);
  o.target = TargetSpec{{}, {{"x", 6}}};
  expect_error(o, "x");
  o = stacked(2);
  o.input_overlap = {{"y", 1}, {"q", 1}};
  expect_error(o, "q");
  o = stacked(0);
  o.shuffle = Shuffle::Chunk;
  expect_error(o, "chunk");
  o = stacked(2);
  o.input_dims = {};
  expect_error(o, "input_dims");
}
