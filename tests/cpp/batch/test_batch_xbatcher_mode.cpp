// BatchGenerator in xbatcher-compatibility mode (batch_size 0): the data of each batch laid
// out as xbatcher 0.4.0 lays it out (dims, order, `sample` stacking, concat), on the
// XBATCHER.md fixtures' geometry (sample_ds_3d: time 10, y 50, x 100).
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "batch_test_data.hpp"
#include "lazycube/batch/batch_generator.hpp"
#include "lazycube/error.hpp"

using namespace lazycube;
using namespace lazycube::batch;
using lazycube::testing::cell_value;
using lazycube::testing::position_dataset;

namespace {

float at(const BatchArray& a, std::uint64_t flat) {
  float v;
  std::memcpy(&v, a.data.get() + flat * 4, 4);
  return v;
}

BatchOptions xbatcher(DimSizes input, DimSizes batch = {}, bool concat = false) {
  BatchOptions o;
  o.input_dims = std::move(input);
  o.batch_dims = std::move(batch);
  o.concat_input_dims = concat;
  o.cache = std::make_shared<ChunkCache>(64 << 20);
  return o;
}

Dataset ds3d() { return position_dataset(10, 50, 100, {5, 25, 50}); }

}  // namespace

TEST(BatchXbatcherMode, ThreeDOneDInputStacksTimeAndYIntoSample) {
  BatchGenerator g(ds3d(), xbatcher({{"x", 5}}));
  ASSERT_EQ(g.size(), 20u);
  for (std::uint64_t n : {0ull, 7ull, 19ull}) {
    auto b = g.batch(n);
    ASSERT_EQ(b.arrays.size(), 2u);
    for (int v = 0; v < 2; ++v) {
      const BatchArray& a = b.arrays[static_cast<std::size_t>(v)];
      EXPECT_EQ(a.name, v == 0 ? "a" : "b");
      ASSERT_EQ(a.dims, (std::vector<std::string>{"sample", "x"}));
      ASSERT_EQ(a.shape, (Shape{500, 5}));
      EXPECT_EQ(b.layouts[static_cast<std::size_t>(v)].sample_dims, (std::vector<std::string>{"time", "y"}));
      for (std::uint64_t s = 0; s < 500; ++s)
        for (std::uint64_t j = 0; j < 5; ++j)
          ASSERT_EQ(at(a, s * 5 + j), static_cast<float>(cell_value(v, s / 50, s % 50, n * 5 + j)));
    }
    EXPECT_EQ(b.window_dims, (std::vector<std::string>{"x"}));
    EXPECT_EQ(b.windows.at(0).at(0).start, n * 5);
  }
}

TEST(BatchXbatcherMode, ThreeDTwoDInputKeepsOriginalDimsInUnravelOrder) {
  BatchGenerator g(ds3d(), xbatcher({{"y", 5}, {"x", 20}}));
  ASSERT_EQ(g.size(), 50u);
  for (std::uint64_t n : {0ull, 13ull, 49ull}) {
    auto b = g.batch(n);
    const BatchArray& a = b.arrays[0];
    ASSERT_EQ(a.dims, (std::vector<std::string>{"time", "y", "x"}));
    ASSERT_EQ(a.shape, (Shape{10, 5, 20}));
    const std::uint64_t iy = n / 5, ix = n % 5;  // np.unravel_index(n, (10, 5))
    for (std::uint64_t t = 0; t < 10; ++t)
      for (std::uint64_t y = 0; y < 5; ++y)
        for (std::uint64_t x = 0; x < 20; ++x)
          ASSERT_EQ(at(a, (t * 5 + y) * 20 + x), static_cast<float>(cell_value(0, t, iy * 5 + y, ix * 20 + x)));
  }
}

TEST(BatchXbatcherMode, OneDimensionalOverlapAndConcat) {
  auto ds = position_dataset(1, 1, 100, {1, 1, 100});
  // x=10 with overlap 4: stride 6, floor((100-4)/6) = 16 batches; each identical to isel.
  auto o = xbatcher({{"x", 10}});
  o.input_overlap = {{"x", 4}};
  o.variables = {"a"};
  BatchGenerator g(ds, o);
  ASSERT_EQ(g.size(), 16u);
  auto b = g.batch(15);
  // time and y (size 1 each) are two non-input dims: stacked into sample.
  EXPECT_EQ(b.arrays[0].dims, (std::vector<std::string>{"sample", "x"}));
  for (std::uint64_t j = 0; j < 10; ++j) EXPECT_EQ(at(b.arrays[0], j), static_cast<float>(cell_value(0, 0, 0, 90 + j)));

  BatchGenerator c(ds, xbatcher({{"x", 5}}, {}, true));
  ASSERT_EQ(c.size(), 1u);  // concat without batch_dims: one batch
  auto cb = c.batch(0);
  EXPECT_EQ(cb.arrays[0].shape[0] * cb.arrays[0].shape[1], 20u * 5u);
  EXPECT_EQ(cb.arrays[0].dims.back(), "x_input");
}

TEST(BatchXbatcherMode, ConcatWithBatchDimsGroupsPatches) {
  BatchGenerator g(ds3d(), xbatcher({{"x", 5}, {"y", 10}}, {{"time", 2}}, true));
  ASSERT_EQ(g.size(), 5u);
  auto b = g.batch(1);
  const BatchArray& a = b.arrays[0];
  ASSERT_EQ(a.dims, (std::vector<std::string>{"sample", "x_input", "y_input"}));
  ASSERT_EQ(a.shape, (Shape{200, 5, 10}));
  // Every value of the batch lies in time slice 2:4 and in one of its patches.
  const auto& layout = b.layouts[0];
  ASSERT_EQ(layout.sample_dims.size(), 2u);
  for (std::uint64_t s = 0; s < 200; ++s) {
    const float v0 = at(a, s * 50);
    const auto t = static_cast<std::uint64_t>((v0 - 0.0) / 1e4);
    EXPECT_TRUE(t == 2 || t == 3) << s;
    for (std::uint64_t i = 0; i < 5; ++i)
      for (std::uint64_t j = 0; j < 10; ++j)
        ASSERT_EQ(at(a, (s * 5 + i) * 10 + j), v0 + static_cast<float>(100 * j + i));
  }
}

TEST(BatchXbatcherMode, ShuffleAndShardOverBatches) {
  auto o = xbatcher({{"x", 10}});
  o.shuffle = Shuffle::Random;
  o.seed = 3;
  BatchGenerator g(ds3d(), o);
  std::vector<std::uint64_t> starts;
  while (auto b = g.next()) starts.push_back(b->windows[0][0].start / 10);
  ASSERT_EQ(starts.size(), 10u);
  std::vector<std::uint64_t> sorted = starts;
  std::sort(sorted.begin(), sorted.end());
  for (std::uint64_t k = 0; k < 10; ++k) EXPECT_EQ(sorted[k], k);
  o.shuffle = Shuffle::None;
  o.shard = {1, 2, 0, 1};
  BatchGenerator half(ds3d(), o);
  EXPECT_EQ(half.size(), 5u);
  EXPECT_EQ(half.batch(0).windows[0][0].start, 50u);
}

TEST(BatchXbatcherMode, XbatcherErrors) {
  EXPECT_THROW(BatchGenerator(ds3d(), xbatcher({{"x", 110}})), UsageError);
  auto o = xbatcher({{"x", 10}});
  o.input_overlap = {{"x", 20}};
  EXPECT_THROW(BatchGenerator(ds3d(), o), UsageError);
  EXPECT_THROW(BatchGenerator(ds3d(), xbatcher({{"z", 10}})), SelectionError);
  BatchGenerator g(ds3d(), xbatcher({{"x", 10}}));
  EXPECT_THROW(g.batch(10), UsageError);
}

// XBATCHER.md's to_json row: the schema's input_dims survive a JSON round trip (here through
// the generator's saved state, which records the configuration).
TEST(BatchXbatcherMode, ConfigurationRoundTripsThroughJson) {
  auto o = xbatcher({{"time", 5}, {"x", 20}});
  BatchGenerator g(ds3d(), o);
  const auto state = nlohmann::json::parse(g.state().dump());
  const auto& dims = state.at("config").at("input_dims");
  ASSERT_EQ(dims.size(), 2u);
  EXPECT_EQ(dims[0][0], "time");
  EXPECT_EQ(dims[0][1], 5);
  EXPECT_EQ(dims[1][0], "x");
  EXPECT_EQ(dims[1][1], 20);
  BatchGenerator again(ds3d(), o);
  again.restore(state);  // accepted: the same configuration
}

// XBATCHER.md's cached-getitem row: a batch served again from the cache is identical to the
// first (uncached) one, and the second time every chunk is a hit.
TEST(BatchXbatcherMode, CachedBatchIsIdenticalToUncached) {
  auto o = xbatcher({{"x", 10}});
  BatchGenerator g(ds3d(), o);
  auto first = g.batch(1);
  const auto before = g.cache()->stats();
  auto second = g.batch(1);
  const auto after = g.cache()->stats();
  ASSERT_EQ(first.arrays.size(), second.arrays.size());
  for (std::size_t a = 0; a < first.arrays.size(); ++a) {
    EXPECT_EQ(first.arrays[a].dims, second.arrays[a].dims);
    ASSERT_EQ(first.arrays[a].nbytes, second.arrays[a].nbytes);
    EXPECT_EQ(std::memcmp(first.arrays[a].data.get(), second.arrays[a].data.get(), first.arrays[a].nbytes), 0);
  }
  EXPECT_EQ(after.misses, before.misses);
}
