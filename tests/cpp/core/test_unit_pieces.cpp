// grid::UnitPieces: the read units a selection touches and the region each contributes, shared
// by the Zarr and GDAL readers.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <type_traits>
#include <vector>

#include "util/chunk_copy.hpp"

using lazycube::ArraySelection;
using lazycube::IndexRange;
using lazycube::Shape;
using lazycube::grid::DimIndex;
using lazycube::grid::Region;
using lazycube::grid::UnitPieces;

TEST(UnitPieces, CoverEverySelectedPositionOnceFromTheRightUnit) {
  const Shape unit_shape{4, 5};
  // Rows 1..10 forward (units 0, 1, 2), columns 13 down to 1 by -3 (units 2, 1, 0).
  const ArraySelection sel{IndexRange{1, 10, 1}, IndexRange{13, 5, -3}};
  const UnitPieces pieces(sel, unit_shape);
  ASSERT_EQ(pieces.size(), 3u * 3u);
  std::vector<int> seen(10 * 5, 0);
  std::set<std::vector<std::uint64_t>> units;
  DimIndex unit;
  Region r;
  for (std::uint64_t t = 0; t < pieces.size(); ++t) {
    pieces.get(t, unit, r);
    ASSERT_EQ(unit.size(), 2u);
    units.insert({unit[0], unit[1]});
    for (std::uint64_t i = 0; i < r.count[0]; ++i) {
      for (std::uint64_t j = 0; j < r.count[1]; ++j) {
        const std::uint64_t di = r.dst_first[0] + i, dj = r.dst_first[1] + j;
        const auto si = static_cast<std::int64_t>(r.src_first[0]) + static_cast<std::int64_t>(i) * r.src_step[0];
        const auto sj = static_cast<std::int64_t>(r.src_first[1]) + static_cast<std::int64_t>(j) * r.src_step[1];
        ASSERT_GE(si, 0);
        ASSERT_GE(sj, 0);
        ASSERT_LT(si, 4);
        ASSERT_LT(sj, 5);
        // The array index the piece reads is the one the selection asks for at (di, dj).
        EXPECT_EQ(unit[0] * 4 + static_cast<std::uint64_t>(si), sel[0].at(di));
        EXPECT_EQ(unit[1] * 5 + static_cast<std::uint64_t>(sj), sel[1].at(dj));
        ++seen[di * 5 + dj];
      }
    }
  }
  for (int n : seen) EXPECT_EQ(n, 1);
  EXPECT_EQ(units.size(), 9u);
  // C order of units: the first piece is the first row unit with the first column unit the
  // selection reaches (column 13 is in unit 2).
  pieces.get(0, unit, r);
  EXPECT_EQ(unit[0], 0u);
  EXPECT_EQ(unit[1], 2u);
}

TEST(UnitPieces, EmptySelectionHasNoPiecesAndAScalarHasOne) {
  const Shape unit_shape{4, 5};
  const ArraySelection empty{IndexRange{0, 0, 1}, IndexRange{0, 5, 1}};
  EXPECT_EQ(UnitPieces(empty, unit_shape).size(), 0u);
  static_assert(!std::is_constructible_v<UnitPieces, ArraySelection&&, const Shape&>);
  static_assert(!std::is_constructible_v<UnitPieces, ArraySelection&&, const lazycube::ChunkGrid&>);
  const ArraySelection scalar{};
  const Shape no_dims{};
  const UnitPieces one(scalar, no_dims);
  ASSERT_EQ(one.size(), 1u);
  DimIndex unit{7};
  Region r;
  one.get(0, unit, r);
  EXPECT_TRUE(unit.empty());
  EXPECT_TRUE(r.count.empty());
}

// Rectilinear dims: pieces split at the grid's real boundaries, sources relative to each chunk's
// own start, in both directions and with strides that jump over whole chunks.
TEST(UnitPieces, RectilinearDimsSplitAtTheRealBoundaries) {
  using lazycube::ChunkGrid;
  std::vector<ChunkGrid::Axis> axes(2);
  axes[0].edges = {3, 1, 6, 2};  // starts 0, 3, 4, 10; the array ends at 11 (overflow of 1)
  axes[1].regular_length = 4;
  const ChunkGrid grid = ChunkGrid::from_axes(Shape{11, 10}, axes);
  EXPECT_FALSE(grid.is_regular());
  EXPECT_EQ(grid.count(0), 4u);
  EXPECT_EQ(grid.count(1), 3u);
  EXPECT_EQ(grid.extent(0, 3), 1u);
  EXPECT_EQ(grid.decoded_length(0, 3), 2u);
  EXPECT_EQ(grid.starts(0), (std::vector<std::uint64_t>{0, 3, 4, 10}));
  const std::vector<IndexRange> ranges{{0, 11, 1}, {10, 11, -1}, {1, 4, 3}, {10, 3, -4}, {5, 1, 1}};
  for (const IndexRange& rows : ranges) {
    const ArraySelection sel{rows, IndexRange{9, 4, -3}};
    const UnitPieces pieces(sel, grid);
    std::vector<int> seen(rows.count * 4, 0);
    DimIndex unit;
    Region r;
    for (std::uint64_t t = 0; t < pieces.size(); ++t) {
      pieces.get(t, unit, r);
      for (std::uint64_t i = 0; i < r.count[0]; ++i)
        for (std::uint64_t j = 0; j < r.count[1]; ++j) {
          const auto si = static_cast<std::int64_t>(r.src_first[0]) + static_cast<std::int64_t>(i) * r.src_step[0];
          const auto sj = static_cast<std::int64_t>(r.src_first[1]) + static_cast<std::int64_t>(j) * r.src_step[1];
          ASSERT_GE(si, 0);
          ASSERT_LT(static_cast<std::uint64_t>(si), grid.length(0, unit[0]));
          ASSERT_LT(static_cast<std::uint64_t>(sj), 4u);
          EXPECT_EQ(grid.start(0, unit[0]) + static_cast<std::uint64_t>(si), sel[0].at(r.dst_first[0] + i));
          EXPECT_EQ(unit[1] * 4 + static_cast<std::uint64_t>(sj), sel[1].at(r.dst_first[1] + j));
          ++seen[(r.dst_first[0] + i) * 4 + r.dst_first[1] + j];
        }
    }
    for (int n : seen) EXPECT_EQ(n, 1);
  }
  // Lengths that do not reach the extent are refused naming the dim.
  std::vector<ChunkGrid::Axis> short_axes(1);
  short_axes[0].edges = {3, 3};
  EXPECT_THROW(ChunkGrid::from_axes(Shape{7}, short_axes), lazycube::UsageError);
}
