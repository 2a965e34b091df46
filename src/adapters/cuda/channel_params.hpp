// Per-channel constants of unpack + normalise, folded once on the host and shared by the CPU
// reference (unpack_normalize.cpp) and the CUDA kernel (cuda/unpack_normalize.cu). Plain
// C++17 with no lazycube includes: nvcc compiles it too.
#pragma once

#include <cstdint>

namespace lazycube::cuda::detail {

// Input element types the transform accepts.
enum class InType : int { I8, U8, I16, U16, I32, U32, I64, U64, F32, F64 };

enum : std::uint32_t { kHasFill = 1u, kHasMissing = 2u };

// out = raw * a + b with a = scale / std and b = (offset - mean) / std (the documented
// formula, folded). fill_bits / missing_bits hold the fill and missing values converted to
// the input type (native byte order, low bytes); a flag is set only when that conversion is
// exact, so that comparing in the input type equals comparing the values themselves.
struct ChannelParams {
  double a = 1.0;
  double b = 0.0;
  std::uint64_t fill_bits = 0;
  std::uint64_t missing_bits = 0;
  std::uint32_t flags = 0;
};

}  // namespace lazycube::cuda::detail
