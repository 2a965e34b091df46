// WindowGrid: regular windows sliding over an ordered list of dims, numbered row-major (the
// last dim varies fastest) and computed from their number alone: window i's position is
// arithmetic, so a grid of 10^8 windows costs nothing to build or hold.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "lazycube/array.hpp"

namespace lazycube::batch {

// Ordered dim -> length (window length, batch length, or dim size).
using DimSizes = std::vector<std::pair<std::string, std::uint64_t>>;
// dim -> overlap between consecutive windows (absent: 0). Negative overlaps are allowed (as in
// xbatcher): the stride then exceeds the length and leaves gaps.
using DimOverlaps = std::map<std::string, std::int64_t>;

// Windows along one dim: starts 0, stride, 2*stride, ... with start + length <= size, so
// count = floor((size - length) / stride) + 1 = floor((size - overlap) / stride); a remainder
// shorter than a window is dropped.
struct DimWindows {
  std::string dim;
  std::uint64_t size = 0;    // extent of the dim
  std::uint64_t length = 0;  // window length
  std::uint64_t stride = 0;  // length - overlap
  std::uint64_t count = 0;   // number of windows
  std::uint64_t start(std::uint64_t w) const { return w * stride; }
};

class WindowGrid {
 public:
  WindowGrid() = default;
  // One DimWindows per entry of `lengths`, in that order, on the extents of `extents`.
  // `shrink` (dim -> elements) reserves room after each window (e.g. a target shifted one
  // step along time): windows must then end `shrink` elements before the end of the dim.
  // Errors: SelectionError naming the dim when it is not in `extents`; UsageError naming the
  // dim when a length is 0 or exceeds the extent, or an overlap is >= the length.
  WindowGrid(const DimSizes& extents, const DimSizes& lengths, const DimOverlaps& overlaps = {},
             const std::map<std::string, std::uint64_t>& shrink = {});

  const std::vector<DimWindows>& dims() const { return dims_; }
  std::size_t ndim() const { return dims_.size(); }
  // Total number of windows (product of the per-dim counts; 1 for a grid over no dims).
  std::uint64_t size() const { return size_; }
  // Per-dim window numbers of window i (row-major, last dim fastest); i < size().
  std::vector<std::uint64_t> unravel(std::uint64_t i) const;
  // The same into per_dim[0, ndim()) (no allocation, for per-window loops).
  void unravel_into(std::uint64_t i, std::span<std::uint64_t> per_dim) const;
  std::uint64_t ravel(const std::vector<std::uint64_t>& per_dim) const;
  // Window i as one IndexRange (start, length, step 1) per grid dim.
  std::vector<IndexRange> ranges(std::uint64_t i) const;

 private:
  std::vector<DimWindows> dims_;
  std::uint64_t size_ = 1;
};

}  // namespace lazycube::batch
