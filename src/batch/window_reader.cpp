#include "window_reader.hpp"

#include <cstring>

#include "batch_assembly.hpp"
#include "lazycube/error.hpp"
#include "lazycube/util/buffer.hpp"
#include "util/thread_pool.hpp"

namespace lazycube::batch {

bool WindowLayout::identity() const {
  for (std::size_t k = 0; k < src_axes.size(); ++k)
    if (src_axes[k] != static_cast<int>(k)) return false;
  return src_axes.size() == src_shape.size();
}

void read_windows_as(const Variable& var, const std::vector<ArraySelection>& sels, const WindowLayout& layout,
                     const DataType& dtype, const std::vector<std::byte*>& dests, ChunkCache* cache) {
  const std::size_t n = sels.size();
  if (dests.size() != n) throw UsageError("read_windows_as: " + std::to_string(n) + " windows, " +
                                          std::to_string(dests.size()) + " destinations");
  if (n == 0) return;
  const std::uint64_t elems = shape_size(layout.dst_shape);
  const std::size_t item = dtype.itemsize, vitem = var.dtype().itemsize;
  if (layout.identity() && var.dtype() == dtype) {
    std::vector<MutableByteView> views(n);
    for (std::size_t k = 0; k < n; ++k) views[k] = {dests[k], elems * item};
    var.read_windows_into(sels, views, cache);
    return;
  }
  Buffer raw(n * elems * vitem);
  std::vector<MutableByteView> views(n);
  for (std::size_t k = 0; k < n; ++k) views[k] = raw.span().subspan(k * elems * vitem, elems * vitem);
  var.read_windows_into(sels, views, cache);
  const bool cast = var.dtype() != dtype, permute = !layout.identity();
  parallel_for(n, [&](std::size_t k) {
    const std::byte* src = raw.data() + k * elems * vitem;
    thread_local Buffer converted;
    if (cast) {
      if (!permute) {
        cast_elements(src, var.dtype(), dests[k], dtype, elems);
        return;
      }
      converted.resize(elems * item);
      cast_elements(src, var.dtype(), converted.data(), dtype, elems);
      src = converted.data();
    }
    permuted_copy(src, layout.src_shape, dests[k], layout.dst_shape, layout.src_axes, item);
  });
}

}  // namespace lazycube::batch
