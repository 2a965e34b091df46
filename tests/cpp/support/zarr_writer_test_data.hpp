// Small float32 arrays for the Zarr writer tests, and writing or slicing them whole.
#pragma once

#include <vector>

#include "lazycube/ndarray.hpp"
#include "util/chunk_copy.hpp"
#include "lazycube/zarr/writer.hpp"

namespace lazycube::test {

// float32 values i * step + 1 in C order over `shape`.
inline NDArray values_array(const Shape& shape, float step) {
  NDArray a;
  a.dtype = DataType::float_(4);
  a.shape = shape;
  a.data.resize(shape_size(shape) * 4);
  auto v = a.values<float>();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * step + 1.0f;
  return a;
}

// The block of `a` at `origin` with shape `extent`.
inline NDArray slice(const NDArray& a, const std::vector<std::uint64_t>& origin, const Shape& extent) {
  NDArray out;
  out.dtype = a.dtype;
  out.shape = extent;
  out.data.resize(shape_size(extent) * a.dtype.itemsize);
  grid::DimIndex at(origin.size());
  for (std::size_t d = 0; d < origin.size(); ++d) at[d] = origin[d];
  grid::copy_block(a.data.view(), a.shape, out.data.span(), extent, at, a.dtype.itemsize, true);
  return out;
}

// Writes all of `a` (the array's whole shape) through write_region.
inline void write_whole(zarr::ArrayWriter& w, const NDArray& a) {
  w.write_region(std::vector<std::uint64_t>(a.shape.size(), 0), a);
}

}  // namespace lazycube::test
