// The mapped-buffer pool (src/util/buffer.cpp): a wave of blocks freed together is reused by the
// next wave of the same size (a wave of 256 transfers of 1 MiB each used to get fresh, zeroed
// memory every time past 32 MiB).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "lazycube/util/buffer.hpp"

using lazycube::detail::allocate_bytes;
using lazycube::detail::free_bytes;

namespace {

constexpr std::size_t kBlock = (std::size_t{1} << 20) + 4096;  // 1 MiB + a page: 4 KiB pages, pooled

std::vector<std::byte*> wave(std::size_t n) {
  std::vector<std::byte*> out;
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(allocate_bytes(kBlock));
    std::fill_n(out.back(), kBlock, std::byte{1});
  }
  return out;
}

void release(const std::vector<std::byte*>& blocks) {
  for (std::byte* p : blocks) free_bytes(p, kBlock);
}

TEST(BufferPool, AWaveOfBlocksIsReusedByTheNextWave) {
  const std::vector<std::byte*> first = wave(128);  // 128 MiB: four times the old fixed pool
  release(first);
  const std::vector<std::byte*> second = wave(128);
  const std::set<std::byte*> before(first.begin(), first.end());
  std::size_t reused = 0;
  for (std::byte* p : second) reused += before.count(p);
  release(second);
  EXPECT_EQ(reused, second.size());
}

}  // namespace
