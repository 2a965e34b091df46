// Reading variables at positions into batch blocks: the one implementation of "read these
// variables at these offsets" that stacked batches (x, and a TargetSpec's y: the same windows
// shifted by the target offset along their dims) and forecast samples (each field at the
// anchors' input and target offsets in time) share. The callers turn their offsets into one
// selection per window; this reads the windows through the cache, casts them to the block's
// dtype and lays each one out in the block's axis order.
#pragma once
#include <cstddef>
#include <vector>

#include "lazycube/cache/chunk_cache.hpp"
#include "lazycube/dataset/variable.hpp"
#include "lazycube/dtype.hpp"

namespace lazycube::batch {

// How a window's values are laid out in its destination: the window's extent in the variable's
// axis order without the axes the destination drops (src_shape: a time axis of length 1), the
// destination's extent (dst_shape) and, per destination axis, the src_shape axis it takes
// (src_axes, as permuted_copy's).
struct WindowLayout {
  Shape src_shape;
  Shape dst_shape;
  std::vector<int> src_axes;
  bool identity() const;
};

// Reads window k of `var` (sels[k], relative to the variable's selection, as
// Variable::read_windows_into takes it) into dests[k]: shape_size(dst_shape) elements of `dtype`
// in `layout`. Windows whose layout is the identity in the variable's own dtype are read
// straight into their destinations; the others are read, then cast and transposed in parallel.
void read_windows_as(const Variable& var, const std::vector<ArraySelection>& sels, const WindowLayout& layout,
                     const DataType& dtype, const std::vector<std::byte*>& dests, ChunkCache* cache);

}  // namespace lazycube::batch
