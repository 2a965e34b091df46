#include "batch_assembly.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "util/chunk_copy.hpp"
#include "util/element_cast.hpp"
#include "lazycube/error.hpp"
#include "lazycube/util/buffer.hpp"

namespace lazycube::batch {

void permuted_copy(const std::byte* src, const Shape& src_shape, std::byte* dst,
                   const Shape& dst_shape, const std::vector<int>& src_axes, std::size_t item) {
  const std::size_t nd = dst_shape.size();
  if (src_axes.size() != nd) throw UsageError("permuted_copy: axis map does not match the output rank");
  const std::uint64_t total = shape_size(dst_shape);
  if (total == 0) return;
  const auto sstr = grid::c_strides(src_shape);
  // Source stride (elements) of each destination axis; 0 for broadcast axes.
  std::vector<std::uint64_t> step(nd, 0);
  for (std::size_t j = 0; j < nd; ++j)
    if (src_axes[j] >= 0) step[j] = sstr[static_cast<std::size_t>(src_axes[j])];
  if (nd == 0) {
    std::memcpy(dst, src, item);
    return;
  }
  // Innermost destination axis: a memcpy when it runs contiguously through the source.
  const std::uint64_t inner = dst_shape[nd - 1];
  const bool contiguous = step[nd - 1] == 1;
  std::vector<std::uint64_t> idx(nd, 0);
  std::uint64_t src_off = 0;
  for (std::uint64_t done = 0; done < total; done += inner) {
    std::byte* out = dst + done * item;
    if (contiguous) {
      std::memcpy(out, src + src_off * item, inner * item);
    } else {
      for (std::uint64_t k = 0; k < inner; ++k)
        std::memcpy(out + k * item, src + (src_off + k * step[nd - 1]) * item, item);
    }
    // Advance the outer index (odometer), keeping src_off in step.
    for (std::size_t j = nd - 1; j-- > 0;) {
      if (++idx[j] < dst_shape[j]) {
        src_off += step[j];
        break;
      }
      src_off -= step[j] * (dst_shape[j] - 1);
      idx[j] = 0;
    }
  }
}

// The dtypes a batch casts between: bool, integers, float32/64.
constexpr unsigned kCastable = detail::dtype_set::kBool | detail::dtype_set::kReal;

bool castable(const DataType& t) { return detail::has_element_type<kCastable>(t); }

void cast_elements(const std::byte* src, const DataType& from, std::byte* dst, const DataType& to,
                   std::size_t count) {
  if (from == to) {
    std::memcpy(dst, src, count * from.itemsize);
    return;
  }
  if (!castable(from) || !castable(to))
    throw UsageError("cannot cast " + from.name() + " to " + to.name() + " for a batch");
  // castable() admitted both types, so each visit finds its C++ type.
  detail::visit_dtype<kCastable>(from, [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    detail::visit_dtype<kCastable>(to, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      for (std::size_t i = 0; i < count; ++i)
        detail::store_element<To>(dst, i, detail::cast_value<To>(detail::load_element<From>(src, i)));
    });
  });
}

DataType common_dtype(const std::vector<DataType>& dtypes) {
  if (dtypes.empty()) return DataType::float_(4);
  bool same = true;
  for (const auto& t : dtypes) same = same && t == dtypes.front();
  if (same) return dtypes.front();
  std::size_t widest = 4;
  for (const auto& t : dtypes) {
    if (t.kind == DTypeKind::Float) widest = std::max(widest, t.itemsize);
    if ((t.kind == DTypeKind::Int || t.kind == DTypeKind::UInt) && t.itemsize > 2) widest = 8;
  }
  return DataType::float_(widest);
}

std::shared_ptr<std::byte> allocate_batch_buffer(const BatchAllocator& allocator, std::size_t bytes) {
  if (allocator) {
    auto p = allocator(bytes);
    if (!p && bytes != 0) throw UsageError("batch allocator returned no memory for " + std::to_string(bytes) + " bytes");
    return p;
  }
  const std::size_t size = bytes == 0 ? 1 : bytes;
  std::byte* p = detail::allocate_bytes(size);
  return std::shared_ptr<std::byte>(p, [size](std::byte* q) { detail::free_bytes(q, size); });
}

std::uint64_t count_nans(const std::byte* data, const DataType& t, std::size_t count) {
  std::uint64_t n = 0;
  detail::visit_dtype<detail::dtype_set::kFloat>(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (std::size_t i = 0; i < count; ++i) n += std::isnan(detail::load_element<T>(data, i));
  });
  return n;
}

}  // namespace lazycube::batch
