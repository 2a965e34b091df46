// What the epoch-planner tests measure an epoch's order by (test_epoch_planner.cpp,
// test_window_planner.cpp): an LRU cache of units counting its fetches (egress), the Spearman
// correlation of epoch position and sample, the median batch's span, every sample exactly once.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <list>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

namespace lazycube::testing {

// An LRU cache of `capacity` units, counting fetches.
struct LruUnits {
  std::uint64_t capacity = 0, fetches = 0;
  std::list<std::uint64_t> order;
  std::unordered_map<std::uint64_t, std::list<std::uint64_t>::iterator> where;
  void touch(std::uint64_t unit) {
    auto it = where.find(unit);
    if (it != where.end()) {
      order.erase(it->second);
    } else {
      ++fetches;
      if (order.size() >= capacity) {
        where.erase(order.back());
        order.pop_back();
      }
    }
    order.push_front(unit);
    where[unit] = order.begin();
  }
};

// Spearman correlation of position and sample number, for an order of samples 0..n-1 numbered
// along the locality axis (the samples are their own ranks: a permutation).
inline double spearman_of_order(const std::vector<std::uint64_t>& order) {
  const double n = static_cast<double>(order.size());
  double d2 = 0;
  for (std::size_t p = 0; p < order.size(); ++p) {
    const double d = static_cast<double>(p) - static_cast<double>(order[p]);
    d2 += d * d;
  }
  return 1.0 - 6.0 * d2 / (n * (n * n - 1.0));
}

// The median over batches of (largest - smallest sample) / (samples - 1).
inline double median_batch_span(const std::vector<std::vector<std::uint64_t>>& batches, std::uint64_t samples) {
  std::vector<double> spans;
  for (const auto& b : batches)
    if (b.size() > 1) {
      const auto [lo, hi] = std::minmax_element(b.begin(), b.end());
      spans.push_back(static_cast<double>(*hi - *lo) / static_cast<double>(samples - 1));
    }
  std::sort(spans.begin(), spans.end());
  return spans[spans.size() / 2];
}

inline void expect_every_sample_once(std::vector<std::uint64_t> seen, std::uint64_t n, const std::string& what) {
  std::sort(seen.begin(), seen.end());
  std::vector<std::uint64_t> all(n);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(seen, all) << what;
}

}  // namespace lazycube::testing
