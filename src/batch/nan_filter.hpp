// The validity filter of stacked batches: does a window have at most a given fraction of NaN
// values in one variable? Evaluated lazily, window by window as batches are formed, with a
// per-chunk summary (NaN count) cached so that windows inside NaN-free or all-NaN chunks are
// decided without reading them again.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "lazycube/cache/chunk_cache.hpp"
#include "lazycube/dataset/variable.hpp"

namespace lazycube::batch {

class NanFilter {
 public:
  NanFilter(Variable variable, double max_nan_fraction, std::shared_ptr<ChunkCache> cache);
  // `window`: one IndexRange per dim of the variable (its dims() order).
  bool passes(const ArraySelection& window) const;
  const Variable& variable() const { return variable_; }

 private:
  struct Summary {
    std::uint64_t nans = 0;
    std::uint64_t total = 0;
  };
  Summary chunk_summary(const std::vector<std::uint64_t>& chunk) const;
  Variable variable_;
  Variable whole_;  // the variable over its whole array, for reading chunk regions
  double max_fraction_;
  std::shared_ptr<ChunkCache> cache_;
  bool can_hold_nan_;
  mutable std::mutex mutex_;
  mutable std::map<std::vector<std::uint64_t>, Summary> summaries_;
};

// Slices selecting `window` (one IndexRange with step 1 per dim, in `dims` order).
Indexers window_indexers(const std::vector<std::string>& dims, const ArraySelection& window);

}  // namespace lazycube::batch
