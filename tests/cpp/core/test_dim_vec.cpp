// DimVec: the inline-then-heap vector of per-dimension values behind chunk-copy regions.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "lazycube/util/dim_vec.hpp"

using lazycube::detail::DimVec;

namespace {

template <class V>
std::vector<std::uint64_t> values(const V& v) {
  return std::vector<std::uint64_t>(v.begin(), v.end());
}

std::vector<std::uint64_t> iota(std::size_t n, std::uint64_t from = 0) {
  std::vector<std::uint64_t> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}

}  // namespace

TEST(DimVec, GrowsPastItsInlineCapacityKeepingEveryValue) {
  for (std::size_t n : {0u, 1u, 3u, 4u, 5u, 9u, 40u}) {
    DimVec<std::uint64_t, 4> v;
    for (std::size_t i = 0; i < n; ++i) v.push_back(i);
    EXPECT_EQ(v.size(), n);
    EXPECT_EQ(values(v), iota(n));
    if (n > 0) {
      EXPECT_EQ(v.back(), n - 1);
    }
  }
}

TEST(DimVec, ResizeAssignAndReserve) {
  DimVec<std::uint64_t, 4> v(3, 7);
  EXPECT_EQ(values(v), (std::vector<std::uint64_t>{7, 7, 7}));
  v.resize(6, 1);  // crosses to the heap
  EXPECT_EQ(values(v), (std::vector<std::uint64_t>{7, 7, 7, 1, 1, 1}));
  v.resize(2);
  EXPECT_EQ(values(v), (std::vector<std::uint64_t>{7, 7}));
  v.reserve(100);
  EXPECT_EQ(values(v), (std::vector<std::uint64_t>{7, 7}));
  const std::vector<std::uint64_t> src = iota(10, 5);
  v.assign(src.begin(), src.end());
  EXPECT_EQ(values(v), src);
  v.clear();
  EXPECT_TRUE(v.empty());
  const DimVec<std::uint64_t, 4> listed{1, 2, 3};
  EXPECT_EQ(values(listed), (std::vector<std::uint64_t>{1, 2, 3}));
  EXPECT_TRUE(listed == (DimVec<std::uint64_t, 4>(src.begin(), src.begin() + 0) = listed));
  EXPECT_FALSE(listed == (DimVec<std::uint64_t, 4>{1, 2}));
}

TEST(DimVec, CopiesAndMovesInlineAndHeapStorage) {
  for (std::size_t n : {2u, 12u}) {  // inline, heap
    DimVec<std::uint64_t, 4> a;
    for (std::size_t i = 0; i < n; ++i) a.push_back(10 * i);
    DimVec<std::uint64_t, 4> copy(a);
    EXPECT_EQ(values(copy), values(a));
    copy[0] = 99;  // independent storage
    EXPECT_EQ(a[0], 0u);
    DimVec<std::uint64_t, 4> assigned;
    assigned = a;
    EXPECT_EQ(values(assigned), values(a));
    DimVec<std::uint64_t, 4> moved(std::move(copy));
    EXPECT_EQ(moved[0], 99u);
    EXPECT_EQ(moved.size(), n);
    DimVec<std::uint64_t, 4> move_assigned(1, 3);
    move_assigned = std::move(moved);
    EXPECT_EQ(move_assigned.size(), n);
    EXPECT_EQ(move_assigned[0], 99u);
    move_assigned = a;  // heap or inline target reused
    EXPECT_EQ(values(move_assigned), values(a));
  }
}
