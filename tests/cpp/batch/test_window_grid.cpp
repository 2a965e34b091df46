// WindowGrid: window counts floor((size - overlap) / stride), remainder dropped, row-major
// numbering with the last dim fastest, validation errors naming the dim.
#include <gtest/gtest.h>

#include <functional>

#include "lazycube/batch/window_grid.hpp"
#include "lazycube/error.hpp"
#include "test_support.hpp"

using lazycube::SelectionError;
using lazycube::UsageError;
using lazycube::batch::WindowGrid;

namespace {

const lazycube::batch::DimSizes kCube = {{"time", 10}, {"y", 50}, {"x", 100}};

}  // namespace

using lazycube::test::message_of;

TEST(WindowGrid, CountDropsRemainder) {
  // xbatcher test_generator_length: x=100 in windows of 5 / 6 -> 20 / 16.
  EXPECT_EQ(WindowGrid({{"x", 100}}, {{"x", 5}}).size(), 20u);
  EXPECT_EQ(WindowGrid({{"x", 100}}, {{"x", 6}}).size(), 16u);
  const WindowGrid g({{"x", 100}}, {{"x", 6}});
  EXPECT_EQ(g.ranges(15)[0].start, 90u);  // 96..99 is a partial window: dropped
  EXPECT_EQ(g.ranges(15)[0].count, 6u);
}

TEST(WindowGrid, OverlapCountsAndStarts) {
  // xbatcher test_batch_1d_overlap: x=10 overlap 1 / 4 -> 11 / 16 windows, start n * stride.
  for (auto [overlap, count] : {std::pair{1, 11}, std::pair{4, 16}}) {
    const WindowGrid g({{"x", 100}}, {{"x", 10}}, {{"x", overlap}});
    ASSERT_EQ(g.size(), static_cast<std::uint64_t>(count));
    const std::uint64_t stride = 10 - overlap;
    EXPECT_EQ(g.dims()[0].stride, stride);
    for (std::uint64_t n = 0; n < g.size(); ++n) {
      EXPECT_EQ(g.ranges(n)[0].start, n * stride);
      EXPECT_EQ(g.ranges(n)[0].count, 10u);
      EXPECT_EQ(g.ranges(n)[0].step, 1);
    }
    EXPECT_LE(g.ranges(g.size() - 1)[0].start + 10, 100u);
  }
}

TEST(WindowGrid, NegativeOverlapLeavesGaps) {
  // Not checked by xbatcher: stride 3 + 2 = 5 > length, count floor((10 + 2) / 5) = 2.
  const WindowGrid g({{"x", 10}}, {{"x", 3}}, {{"x", -2}});
  EXPECT_EQ(g.dims()[0].stride, 5u);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g.ranges(0)[0].start, 0u);
  EXPECT_EQ(g.ranges(1)[0].start, 5u);  // elements 3, 4 are skipped; 8, 9 remain unused
}

TEST(WindowGrid, RowMajorLastDimFastest) {
  const WindowGrid g(kCube, {{"y", 10}, {"x", 20}});  // like input_dims={'y': 10, 'x': 20}
  ASSERT_EQ(g.size(), 25u);
  for (std::uint64_t n = 0; n < g.size(); ++n) {
    // numpy.unravel_index(n, (5, 5))
    const auto per = g.unravel(n);
    EXPECT_EQ(per, (std::vector<std::uint64_t>{n / 5, n % 5}));
    EXPECT_EQ(g.ravel(per), n);
    const auto r = g.ranges(n);
    EXPECT_EQ(r[0].start, (n / 5) * 10);
    EXPECT_EQ(r[1].start, (n % 5) * 20);
  }
}

TEST(WindowGrid, UnravelIntoMatchesUnravelAndChecksItsArguments) {
  const WindowGrid g(kCube, {{"time", 3}, {"y", 10}, {"x", 20}});
  std::uint64_t per[4] = {7, 7, 7, 7};
  for (std::uint64_t n = 0; n < g.size(); ++n) {
    g.unravel_into(n, per);
    EXPECT_EQ(std::vector<std::uint64_t>(per, per + 3), g.unravel(n));
  }
  EXPECT_EQ(per[3], 7u);  // only ndim() entries are written
  EXPECT_NE(message_of<UsageError>([&] { g.unravel_into(g.size(), per); }).find("out of range"), std::string::npos);
  std::uint64_t small[2];
  EXPECT_NE(message_of<UsageError>([&] { g.unravel_into(0, small); }).find("room for 2 dims, the grid has 3"),
            std::string::npos);
}

TEST(WindowGrid, EmptyGridHasOneWindow) {
  const WindowGrid g(kCube, {});
  EXPECT_EQ(g.size(), 1u);
  EXPECT_TRUE(g.ranges(0).empty());
}

TEST(WindowGrid, ShrinkReservesElementsAfterEachWindow) {
  // time=10, windows of 3 with one step reserved for a target: windows must end by 9, so
  // starts 0, 3, 6 (6..8, target 9).
  const WindowGrid g({{"time", 10}}, {{"time", 3}}, {}, {{"time", 1}});
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g.ranges(2)[0].start, 6u);
  const WindowGrid g2({{"time", 10}}, {{"time", 3}}, {}, {{"time", 2}});
  EXPECT_EQ(g2.size(), 2u);  // 6..8 would need 9 and 10
  const auto msg = message_of<UsageError>(
      [] { WindowGrid({{"time", 10}}, {{"time", 3}}, {}, {{"time", 8}}); });
  EXPECT_NE(msg.find("'time'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("8 reserved"), std::string::npos) << msg;
}

TEST(WindowGrid, MissingDimIsSelectionErrorNamingIt) {
  const auto msg = message_of<SelectionError>([] { WindowGrid(kCube, {{"lat", 4}}); });
  EXPECT_NE(msg.find("'lat'"), std::string::npos) << msg;
}

TEST(WindowGrid, BadLengthOrOverlapIsUsageErrorNamingTheDim) {
  // xbatcher test_input_dim_exceptions / test_input_overlap_exceptions.
  auto too_long = message_of<UsageError>([] { WindowGrid({{"x", 100}}, {{"x", 110}}); });
  EXPECT_NE(too_long.find("'x'"), std::string::npos) << too_long;
  auto zero = message_of<UsageError>([] { WindowGrid({{"x", 100}}, {{"x", 0}}); });
  EXPECT_NE(zero.find("'x'"), std::string::npos) << zero;
  auto overlap = message_of<UsageError>([] { WindowGrid({{"x", 100}}, {{"x", 10}}, {{"x", 20}}); });
  EXPECT_NE(overlap.find("'x'"), std::string::npos) << overlap;
  EXPECT_THROW(WindowGrid({{"x", 100}}, {{"x", 10}}, {{"x", 10}}), UsageError);
  EXPECT_NO_THROW(WindowGrid({{"x", 100}}, {{"x", 100}}));  // exactly the dim: one window
}

TEST(WindowGrid, OutOfRangeIndexThrows) {
  const WindowGrid g({{"x", 100}}, {{"x", 10}});
  EXPECT_THROW(g.unravel(10), UsageError);
  EXPECT_THROW(g.ranges(10), UsageError);
  EXPECT_THROW(g.ravel({10}), UsageError);
  EXPECT_THROW(g.ravel({1, 2}), UsageError);
}

// Arithmetic, not a list: 10^8 windows cost nothing to build (no timing asserted: a list of
// that many windows would take gigabytes, which the sanitizer build would not survive).
TEST(WindowGrid, HundredMillionWindowsAreInstant) {
  const WindowGrid g({{"time", 10000}, {"y", 10000}, {"x", 100}}, {{"time", 1}, {"y", 1}, {"x", 100}});
  ASSERT_EQ(g.size(), 100'000'000u);
  const auto last = g.ranges(g.size() - 1);
  EXPECT_EQ(last[0].start, 9999u);
  EXPECT_EQ(last[1].start, 9999u);
  EXPECT_EQ(last[2].start, 0u);
  EXPECT_EQ(g.ravel(g.unravel(12'345'678)), 12'345'678u);
}

TEST(WindowGrid, WindowCountOverflowIsUsageError) {
  const std::uint64_t big = std::uint64_t{1} << 40;
  EXPECT_THROW(WindowGrid({{"a", big}, {"b", big}}, {{"a", 1}, {"b", 1}}), UsageError);
}
