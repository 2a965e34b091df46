// CPU reference of unpack + normalise (lazycube/adapters/cuda.hpp): computed in double from
// the folded per-channel constants (channel_plan.hpp) and rounded once to float32.
#include <algorithm>
#include <cstring>
#include <limits>

#include "channel_plan.hpp"
#include "lazycube/adapters/cuda.hpp"
#include "lazycube/error.hpp"
#include "util/thread_pool.hpp"

namespace lazycube::cuda {

namespace {

using detail::ChannelParams;
using detail::InType;

// Elements per parallel task: big enough that scheduling is noise, small enough to spread a
// batch of a few MB over the pool.
constexpr std::uint64_t kTaskElements = 1u << 18;

template <class T>
T from_bits(std::uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

// n consecutive elements of one (sample, channel) row.
template <class T>
void transform_segment(const T* in, float* out, std::uint64_t n, const ChannelParams& p) {
  const double a = p.a, b = p.b;
  if (p.flags == 0) {
    for (std::uint64_t j = 0; j < n; ++j)
      out[j] = static_cast<float>(static_cast<double>(in[j]) * a + b);
    return;
  }
  const bool has_fill = (p.flags & detail::kHasFill) != 0;
  const bool has_missing = (p.flags & detail::kHasMissing) != 0;
  const T fill = from_bits<T>(p.fill_bits), missing = from_bits<T>(p.missing_bits);
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  for (std::uint64_t j = 0; j < n; ++j) {
    const T v = in[j];
    const bool masked = (has_fill && v == fill) || (has_missing && v == missing);
    out[j] = masked ? kNaN : static_cast<float>(static_cast<double>(v) * a + b);
  }
}

// Flat element range [begin, end) of the batch, row by row.
template <class T>
void transform_range(const T* in, float* out, const BatchShape& shape,
                     const std::vector<ChannelParams>& params, std::uint64_t begin,
                     std::uint64_t end) {
  while (begin < end) {
    const std::uint64_t row = begin / shape.inner;
    const std::uint64_t row_end = std::min(end, (row + 1) * shape.inner);
    transform_segment(in + begin, out + begin, row_end - begin, params[row % shape.channels]);
    begin = row_end;
  }
}

template <class T>
void transform(const void* in, float* out, const BatchShape& shape,
               const std::vector<ChannelParams>& params) {
  const auto* src = static_cast<const T*>(in);
  const std::uint64_t total = shape.size();
  const std::uint64_t tasks = (total + kTaskElements - 1) / kTaskElements;
  if (tasks <= 1) {
    transform_range(src, out, shape, params, 0, total);
    return;
  }
  parallel_for(static_cast<std::size_t>(tasks), [&](std::size_t k) {
    const std::uint64_t begin = k * kTaskElements;
    transform_range(src, out, shape, params, begin, std::min(total, begin + kTaskElements));
  });
}

}  // namespace

void unpack_normalize_host(const void* in, const DataType& in_dtype, float* out,
                           const BatchShape& shape, std::span<const ChannelTransform> channels) {
  const InType type = detail::input_type(in_dtype);
  const std::vector<ChannelParams> params = detail::plan_channels(type, shape, channels);
  if (shape.size() == 0) return;
  if (in == nullptr || out == nullptr)
    throw UsageError("unpack_normalize_host: null input or output buffer for " +
                     std::to_string(shape.size()) + " elements");
  // input_type() accepted in_dtype, so the visit finds its C++ type.
  lazycube::detail::visit_dtype<detail::kInputDTypes>(in_dtype, [&](auto tag) {
    transform<typename decltype(tag)::type>(in, out, shape, params);
  });
}

}  // namespace lazycube::cuda
