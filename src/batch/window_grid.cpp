// WindowGrid: per-dim window counts and row-major index arithmetic (see window_grid.hpp).
#include "lazycube/batch/window_grid.hpp"

#include <limits>

#include "lazycube/error.hpp"

namespace lazycube::batch {
namespace {

std::uint64_t find_extent(const DimSizes& extents, const std::string& dim) {
  for (const auto& [name, size] : extents) {
    if (name == dim) return size;
  }
  throw SelectionError("window dim '" + dim + "' is not a dim of the data");
}

// Windows of `length` every `length - overlap` elements within the first `usable` elements.
DimWindows make_windows(const std::string& dim, std::uint64_t size, std::uint64_t usable,
                        std::uint64_t length, std::int64_t overlap, std::uint64_t reserved) {
  if (length == 0) throw UsageError("window length of dim '" + dim + "' must be positive");
  if (length > usable) {
    throw UsageError("window length " + std::to_string(length) + " of dim '" + dim +
                     "' is greater than the dim length " + std::to_string(size) +
                     (reserved ? " less " + std::to_string(reserved) + " reserved" : ""));
  }
  if (overlap >= static_cast<std::int64_t>(length)) {
    throw UsageError("overlap " + std::to_string(overlap) + " of dim '" + dim +
                     "' must be less than the window length " + std::to_string(length));
  }
  DimWindows w;
  w.dim = dim;
  w.size = size;
  w.length = length;
  // A negative overlap leaves a gap: the stride exceeds the length.
  w.stride = overlap >= 0 ? length - static_cast<std::uint64_t>(overlap)
                          : length + static_cast<std::uint64_t>(-(overlap + 1)) + 1;
  w.count = (usable - length) / w.stride + 1;
  return w;
}

}  // namespace

WindowGrid::WindowGrid(const DimSizes& extents, const DimSizes& lengths,
                       const DimOverlaps& overlaps,
                       const std::map<std::string, std::uint64_t>& shrink) {
  dims_.reserve(lengths.size());
  for (const auto& [dim, length] : lengths) {
    const std::uint64_t size = find_extent(extents, dim);
    const auto ov = overlaps.find(dim);
    const auto sh = shrink.find(dim);
    const std::uint64_t reserved = sh == shrink.end() ? 0 : sh->second;
    const std::uint64_t usable = reserved >= size ? 0 : size - reserved;
    dims_.push_back(make_windows(dim, size, usable, length, ov == overlaps.end() ? 0 : ov->second,
                                 reserved));
    const std::uint64_t count = dims_.back().count;
    if (size_ > std::numeric_limits<std::uint64_t>::max() / count) {
      throw UsageError("number of windows overflows 64 bits at dim '" + dim + "'");
    }
    size_ *= count;
  }
}

std::vector<std::uint64_t> WindowGrid::unravel(std::uint64_t i) const {
  std::vector<std::uint64_t> per_dim(dims_.size());
  unravel_into(i, per_dim);
  return per_dim;
}

void WindowGrid::unravel_into(std::uint64_t i, std::span<std::uint64_t> per_dim) const {
  if (i >= size_) {
    throw UsageError("window " + std::to_string(i) + " out of range (grid has " +
                     std::to_string(size_) + " windows)");
  }
  if (per_dim.size() < dims_.size())
    throw UsageError("unravel_into: room for " + std::to_string(per_dim.size()) + " dims, the grid has " +
                     std::to_string(dims_.size()));
  for (std::size_t k = dims_.size(); k-- > 0;) {
    per_dim[k] = i % dims_[k].count;
    i /= dims_[k].count;
  }
}

std::uint64_t WindowGrid::ravel(const std::vector<std::uint64_t>& per_dim) const {
  if (per_dim.size() != dims_.size()) {
    throw UsageError("ravel needs " + std::to_string(dims_.size()) + " window numbers, got " +
                     std::to_string(per_dim.size()));
  }
  std::uint64_t i = 0;
  for (std::size_t k = 0; k < dims_.size(); ++k) {
    if (per_dim[k] >= dims_[k].count) {
      throw UsageError("window number " + std::to_string(per_dim[k]) + " of dim '" +
                       dims_[k].dim + "' out of range (" + std::to_string(dims_[k].count) +
                       " windows)");
    }
    i = i * dims_[k].count + per_dim[k];
  }
  return i;
}

std::vector<IndexRange> WindowGrid::ranges(std::uint64_t i) const {
  const auto per_dim = unravel(i);
  std::vector<IndexRange> out(dims_.size());
  for (std::size_t k = 0; k < dims_.size(); ++k) {
    out[k] = IndexRange{dims_[k].start(per_dim[k]), dims_[k].length, 1};
  }
  return out;
}

}  // namespace lazycube::batch
