// TEMPORARY minimal WindowGrid so the sampler can be built and tested on its own branch.
// The real implementation (src/batch/window_grid.cpp) comes from another branch; drop this
// file when merging.
#include <string>

#include "lazycube/batch/window_grid.hpp"
#include "lazycube/error.hpp"

namespace lazycube::batch {

WindowGrid::WindowGrid(const DimSizes& extents, const DimSizes& lengths,
                       const DimOverlaps& overlaps,
                       const std::map<std::string, std::uint64_t>& shrink) {
  for (const auto& [dim, length] : lengths) {
    const std::uint64_t* extent = nullptr;
    for (const auto& e : extents)
      if (e.first == dim) extent = &e.second;
    if (!extent) throw SelectionError("window dim '" + dim + "' is not a dim of the data");
    if (length == 0) throw UsageError("window length of dim '" + dim + "' is 0");
    if (length > *extent)
      throw UsageError("window length " + std::to_string(length) + " of dim '" + dim +
                       "' exceeds its size " + std::to_string(*extent));
    std::int64_t overlap = 0;
    if (auto it = overlaps.find(dim); it != overlaps.end()) overlap = it->second;
    if (overlap >= static_cast<std::int64_t>(length))
      throw UsageError("overlap of dim '" + dim + "' must be less than its window length");
    std::uint64_t reserved = 0;
    if (auto it = shrink.find(dim); it != shrink.end()) reserved = it->second;
    DimWindows w;
    w.dim = dim;
    w.size = *extent;
    w.length = length;
    w.stride = static_cast<std::uint64_t>(static_cast<std::int64_t>(length) - overlap);
    // Windows must end `reserved` elements before the end of the dim.
    const std::uint64_t usable = reserved < *extent ? *extent - reserved : 0;
    w.count = usable >= length ? (usable - length) / w.stride + 1 : 0;
    size_ *= w.count;
    dims_.push_back(std::move(w));
  }
}

std::vector<std::uint64_t> WindowGrid::unravel(std::uint64_t i) const {
  if (i >= size_)
    throw UsageError("window " + std::to_string(i) + " out of range (grid has " +
                     std::to_string(size_) + ")");
  std::vector<std::uint64_t> per_dim(dims_.size());
  for (std::size_t d = dims_.size(); d-- > 0;) {
    per_dim[d] = i % dims_[d].count;
    i /= dims_[d].count;
  }
  return per_dim;
}

std::uint64_t WindowGrid::ravel(const std::vector<std::uint64_t>& per_dim) const {
  if (per_dim.size() != dims_.size()) throw UsageError("ravel: wrong number of window indices");
  std::uint64_t i = 0;
  for (std::size_t d = 0; d < dims_.size(); ++d) {
    if (per_dim[d] >= dims_[d].count)
      throw UsageError("ravel: window index out of range along dim '" + dims_[d].dim + "'");
    i = i * dims_[d].count + per_dim[d];
  }
  return i;
}

std::vector<IndexRange> WindowGrid::ranges(std::uint64_t i) const {
  const auto per_dim = unravel(i);
  std::vector<IndexRange> out(dims_.size());
  for (std::size_t d = 0; d < dims_.size(); ++d)
    out[d] = IndexRange{dims_[d].start(per_dim[d]), dims_[d].length, 1};
  return out;
}

}  // namespace lazycube::batch
