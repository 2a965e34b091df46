// Copying rectangular (optionally strided) regions between C-order element grids: decoded
// chunk → selection buffer, inner chunk ↔ shard. Shared by the Zarr reads, the GDAL backend and
// batch assembly, so it lives in the core layer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "lazycube/array.hpp"
#include "lazycube/chunk_grid.hpp"
#include "lazycube/error.hpp"
#include "lazycube/ndarray.hpp"
#include "lazycube/util/buffer.hpp"
#include "lazycube/util/dim_vec.hpp"

namespace lazycube::grid {

// Per-dimension values of the copy paths, inline (no allocation) for up to 8 dims.
using DimIndex = detail::DimVec<std::uint64_t>;

template <class ShapeLike>
DimIndex unravel(std::uint64_t i, const ShapeLike& shape) {
  DimIndex idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

inline DimIndex c_strides(const Shape& shape) {
  DimIndex s(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

// The region: along dim d, `count[d]` elements; source index src_first[d] + k*src_step[d],
// destination index dst_first[d] + k. Calls row(src_elem_offset, dst_elem_offset, n, step)
// for every innermost row (the last dim), where offsets are in elements.
struct Region {
  DimIndex src_first;
  detail::DimVec<std::int64_t> src_step;
  DimIndex dst_first;
  DimIndex count;
};

template <class RowFn>
void for_each_row(const Region& r, const Shape& src_shape, const Shape& dst_shape, RowFn&& row) {
  const std::size_t nd = r.count.size();
  for (auto c : r.count)
    if (c == 0) return;
  if (nd == 0) {
    row(0, 0, 1, 1);
    return;
  }
  const auto ss = c_strides(src_shape);
  const auto ds = c_strides(dst_shape);
  DimIndex k(nd, 0);
  const std::size_t last = nd - 1;
  for (;;) {
    std::int64_t so = 0;
    std::uint64_t dofs = 0;
    for (std::size_t d = 0; d < last; ++d) {
      so += (static_cast<std::int64_t>(r.src_first[d]) + static_cast<std::int64_t>(k[d]) * r.src_step[d]) *
            static_cast<std::int64_t>(ss[d]);
      dofs += (r.dst_first[d] + k[d]) * ds[d];
    }
    so += static_cast<std::int64_t>(r.src_first[last]);
    dofs += r.dst_first[last];
    row(static_cast<std::uint64_t>(so), dofs, r.count[last], r.src_step[last]);
    // Advance the odometer over all dims but the last.
    std::size_t d = last;
    while (d > 0) {
      --d;
      if (++k[d] < r.count[d]) break;
      k[d] = 0;
      if (d == 0) return;
    }
    if (last == 0) return;
  }
}

// One run of selection positions [k0, k0+n) whose indices fall in read unit `unit` of a dim,
// which starts at element `origin`.
struct DimPiece {
  std::uint64_t unit;
  std::uint64_t k0;
  std::uint64_t n;
  std::uint64_t origin;
};

inline detail::DimVec<DimPiece> plan_dim(const IndexRange& r, std::uint64_t unit_len) {
  detail::DimVec<DimPiece> pieces;
  std::uint64_t k = 0;
  while (k < r.count) {
    const std::uint64_t i = r.at(k);
    const std::uint64_t u = i / unit_len;
    std::uint64_t m;
    if (r.step > 0) m = ((u + 1) * unit_len - 1 - i) / static_cast<std::uint64_t>(r.step) + 1;
    else m = (i - u * unit_len) / static_cast<std::uint64_t>(-r.step) + 1;
    m = std::min(m, r.count - k);
    pieces.push_back({u, k, m, u * unit_len});
    k += m;
  }
  return pieces;
}

// plan_dim over dim d of a chunk grid: its real boundaries where the dim is rectilinear.
inline detail::DimVec<DimPiece> plan_dim(const IndexRange& r, const ChunkGrid& grid, std::size_t d) {
  if (grid.is_regular(d)) return plan_dim(r, grid.regular_shape()[d]);
  detail::DimVec<DimPiece> pieces;
  std::uint64_t k = 0;
  while (k < r.count) {
    const std::uint64_t i = r.at(k);
    const std::uint64_t u = grid.index_of(d, i);
    const std::uint64_t first = grid.start(d, u), end = first + grid.length(d, u);
    std::uint64_t m;
    if (r.step > 0) m = (end - 1 - i) / static_cast<std::uint64_t>(r.step) + 1;
    else m = (i - first) / static_cast<std::uint64_t>(-r.step) + 1;
    m = std::min(m, r.count - k);
    pieces.push_back({u, k, m, first});
    k += m;
  }
  return pieces;
}

// The read units (grid indices over blocks of `unit_shape`) a selection touches and the region
// each contributes to it -- source positions relative to the unit's origin, destination
// positions in the selection: piece t of size(), in C order of units. Each dim is planned once;
// get() fills one piece without allocating (up to DimVec's inline size), so callers can spread
// the pieces over threads. Keeps a reference: `sel` must outlive it.
class UnitPieces {
 public:
  UnitPieces(const ArraySelection& sel, const Shape& unit_shape)
      : sel_(sel), per_dim_(sel.size()), counts_(sel.size()) {
    for (std::size_t d = 0; d < sel.size(); ++d) {
      per_dim_[d] = plan_dim(sel[d], unit_shape[d]);
      counts_[d] = per_dim_[d].size();
      total_ *= counts_[d];
    }
  }
  // Over the units of a chunk grid (rectilinear dims at their real boundaries).
  UnitPieces(const ArraySelection& sel, const ChunkGrid& grid)
      : sel_(sel), per_dim_(sel.size()), counts_(sel.size()) {
    for (std::size_t d = 0; d < sel.size(); ++d) {
      per_dim_[d] = plan_dim(sel[d], grid, d);
      counts_[d] = per_dim_[d].size();
      total_ *= counts_[d];
    }
  }

  // Temporaries would dangle.
  UnitPieces(ArraySelection&&, const Shape&) = delete;
  UnitPieces(ArraySelection&&, const ChunkGrid&) = delete;

  std::uint64_t size() const { return total_; }

  void get(std::uint64_t t, DimIndex& unit, Region& r) const {
    const std::size_t nd = sel_.size();
    const auto which = unravel(t, counts_);
    unit.resize(nd);
    r.src_first.resize(nd);
    r.src_step.resize(nd);
    r.dst_first.resize(nd);
    r.count.resize(nd);
    for (std::size_t d = 0; d < nd; ++d) {
      const DimPiece& p = per_dim_[d][which[d]];
      unit[d] = p.unit;
      r.src_first[d] = sel_[d].at(p.k0) - p.origin;
      r.src_step[d] = sel_[d].step;
      r.dst_first[d] = p.k0;
      r.count[d] = p.n;
    }
  }

 private:
  const ArraySelection& sel_;
  std::vector<detail::DimVec<DimPiece>> per_dim_;
  DimIndex counts_;
  std::uint64_t total_ = 1;
};

inline void copy_row(const std::byte* src, std::byte* dst, std::uint64_t n, std::int64_t step,
                     std::size_t itemsize) {
  if (step == 1) {
    std::memcpy(dst, src, n * itemsize);
    return;
  }
  const std::int64_t sstep = step * static_cast<std::int64_t>(itemsize);
  switch (itemsize) {
    case 1: for (std::uint64_t i = 0; i < n; ++i) dst[i] = src[static_cast<std::int64_t>(i) * sstep]; break;
    case 2: for (std::uint64_t i = 0; i < n; ++i) std::memcpy(dst + 2 * i, src + static_cast<std::int64_t>(i) * sstep, 2); break;
    case 4: for (std::uint64_t i = 0; i < n; ++i) std::memcpy(dst + 4 * i, src + static_cast<std::int64_t>(i) * sstep, 4); break;
    case 8: for (std::uint64_t i = 0; i < n; ++i) std::memcpy(dst + 8 * i, src + static_cast<std::int64_t>(i) * sstep, 8); break;
    default:
      for (std::uint64_t i = 0; i < n; ++i)
        std::memcpy(dst + itemsize * i, src + static_cast<std::int64_t>(i) * sstep, itemsize);
  }
}

inline void copy_region(const std::byte* src, const Shape& src_shape, std::byte* dst,
                        const Shape& dst_shape, const Region& r, std::size_t itemsize) {
  for_each_row(r, src_shape, dst_shape, [&](std::uint64_t so, std::uint64_t dofs, std::uint64_t n, std::int64_t step) {
    copy_row(src + so * itemsize, dst + dofs * itemsize, n, step, itemsize);
  });
}

// copy_region, each element converted on the way (strided rows are gathered first).
inline void convert_region(const std::byte* src, const Shape& src_shape, std::byte* dst, const Shape& dst_shape,
                           const Region& r, std::size_t itemsize, const ElementConversion& conv) {
  const std::size_t out_item = conv.output_dtype().itemsize;
  thread_local Buffer row_buf;
  for_each_row(r, src_shape, dst_shape, [&](std::uint64_t so, std::uint64_t dofs, std::uint64_t n, std::int64_t step) {
    const std::byte* row = src + so * itemsize;
    if (step != 1) {
      row_buf.resize(n * itemsize);
      copy_row(row, row_buf.data(), n, step, itemsize);
      row = row_buf.data();
    }
    conv.convert(row, n, dst + dofs * out_item);
  });
}

inline void copy_region_strings(const std::vector<std::string>& src, const Shape& src_shape,
                                std::vector<std::string>& dst, const Shape& dst_shape, const Region& r) {
  for_each_row(r, src_shape, dst_shape, [&](std::uint64_t so, std::uint64_t dofs, std::uint64_t n, std::int64_t step) {
    for (std::uint64_t i = 0; i < n; ++i)
      dst[dofs + i] = src[static_cast<std::uint64_t>(static_cast<std::int64_t>(so) + static_cast<std::int64_t>(i) * step)];
  });
}

// Whole-block copy between a small block and a big grid at `origin` (clipped to the big grid).
// insert: small → big; otherwise (extract) big → small, requiring the block to fit.
inline Region block_region(const Shape& small, const Shape& big, const DimIndex& origin,
                           bool small_is_src) {
  Region r;
  for (std::size_t d = 0; d < small.size(); ++d) {
    if (origin[d] >= big[d]) {
      r.count.assign(small.size(), 0);
      return r;
    }
    std::uint64_t n = std::min<std::uint64_t>(small[d], big[d] - origin[d]);
    r.count.push_back(n);
    r.src_step.push_back(1);
    r.src_first.push_back(small_is_src ? 0 : origin[d]);
    r.dst_first.push_back(small_is_src ? origin[d] : 0);
  }
  return r;
}

// extract=false: copy `small` (shape small_shape) into `big` at origin.
// extract=true: fill `small` (shape small_shape = big_shape arg order below) from `big`.
inline void copy_block(ByteView src, const Shape& src_shape, MutableByteView dst, const Shape& dst_shape,
                       const DimIndex& origin, std::size_t itemsize, bool extract) {
  Region r = extract ? block_region(dst_shape, src_shape, origin, false)
                     : block_region(src_shape, dst_shape, origin, true);
  copy_region(src.data(), src_shape, dst.data(), dst_shape, r, itemsize);
}

inline void copy_block_strings(const std::vector<std::string>& src, const Shape& src_shape,
                               std::vector<std::string>& dst, const Shape& dst_shape,
                               const DimIndex& origin, bool extract) {
  Region r = extract ? block_region(dst_shape, src_shape, origin, false)
                     : block_region(src_shape, dst_shape, origin, true);
  copy_region_strings(src, src_shape, dst, dst_shape, r);
}

}  // namespace lazycube::grid
