// The unpack + normalise kernel: out = raw * a + b per channel, NaN where raw equals the
// channel's fill or missing value. A 2-D grid-stride loop: y over (sample, channel) rows,
// x over the elements of a row, so the channel (and its constants) is fixed per row and no
// per-element division is needed.
//
// Precision: inputs of at most 16 bits and float32 are exact in float, so those compute in
// float (one fused multiply-add); wider integers and float64 compute in double. The CPU
// reference computes in double; the GPU test allows rtol 1e-6 of the operands' magnitude.
#include <cstdint>
#include <cstring>

#include "kernel_launch.hpp"

namespace lazycube::cuda::detail {

namespace {

// Channel constants travel as a kernel argument (copied at launch: safe with concurrent
// streams, unlike __constant__ memory). 64 x 40 bytes stays under the 4 KB argument limit.
constexpr std::uint32_t kMaxChannelsPerLaunch = 64;
struct LaunchParams {
  ChannelParams ch[kMaxChannelsPerLaunch];
};

template <class T> struct ComputeOf { using type = double; };
template <> struct ComputeOf<std::int8_t> { using type = float; };
template <> struct ComputeOf<std::uint8_t> { using type = float; };
template <> struct ComputeOf<std::int16_t> { using type = float; };
template <> struct ComputeOf<std::uint16_t> { using type = float; };
template <> struct ComputeOf<float> { using type = float; };

__device__ inline float fused(float x, float a, float b) { return fmaf(x, a, b); }
__device__ inline double fused(double x, double a, double b) { return fma(x, a, b); }

template <class T>
__device__ inline T from_bits(std::uint64_t bits) {
  T v;
  memcpy(&v, &bits, sizeof(T));
  return v;
}

// Rows are the (sample, channel) pairs of channels [c0, c0 + nc): row r is sample r / nc,
// channel c0 + r % nc.
template <class T>
__global__ void unpack_normalize_kernel(const T* __restrict__ in, float* __restrict__ out,
                                        std::uint64_t rows, std::uint64_t inner,
                                        std::uint64_t channels, std::uint32_t c0,
                                        std::uint32_t nc, LaunchParams p) {
  using C = typename ComputeOf<T>::type;
  const float nan = __int_as_float(0x7fc00000);
  for (std::uint64_t r = blockIdx.y * std::uint64_t(blockDim.y) + threadIdx.y; r < rows;
       r += std::uint64_t(gridDim.y) * blockDim.y) {
    const std::uint64_t sample = r / nc;
    const std::uint32_t local = static_cast<std::uint32_t>(r - sample * nc);
    const ChannelParams& q = p.ch[local];
    const C a = static_cast<C>(q.a), b = static_cast<C>(q.b);
    const bool has_fill = (q.flags & kHasFill) != 0, has_missing = (q.flags & kHasMissing) != 0;
    const T fill = from_bits<T>(q.fill_bits), missing = from_bits<T>(q.missing_bits);
    const std::uint64_t base = (sample * channels + c0 + local) * inner;
    for (std::uint64_t j = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; j < inner;
         j += std::uint64_t(gridDim.x) * blockDim.x) {
      const T v = in[base + j];
      const bool masked = (has_fill && v == fill) || (has_missing && v == missing);
      out[base + j] = masked ? nan : static_cast<float>(fused(static_cast<C>(v), a, b));
    }
  }
}

std::uint32_t min_u32(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::uint32_t>(a < b ? a : b);
}

template <class T>
cudaError_t launch(const void* in, float* out, std::uint64_t samples, std::uint64_t channels,
                   std::uint64_t inner, const ChannelParams* params, cudaStream_t stream) {
  // 256 threads per block: x covers a row (a power of two >= 32, up to 256), y the rest.
  std::uint32_t bx = 32;
  while (bx < 256 && bx < inner) bx *= 2;
  const std::uint32_t by = 256 / bx;
  for (std::uint64_t c0 = 0; c0 < channels; c0 += kMaxChannelsPerLaunch) {
    const auto nc = min_u32(channels - c0, kMaxChannelsPerLaunch);
    LaunchParams p{};
    for (std::uint32_t c = 0; c < nc; ++c) p.ch[c] = params[c0 + c];
    const std::uint64_t rows = samples * nc;
    const dim3 block(bx, by);
    const dim3 grid(min_u32((inner + bx - 1) / bx, 4096), min_u32((rows + by - 1) / by, 65535));
    unpack_normalize_kernel<T><<<grid, block, 0, stream>>>(
        static_cast<const T*>(in), out, rows, inner, channels, static_cast<std::uint32_t>(c0),
        nc, p);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

}  // namespace

cudaError_t launch_unpack_normalize(InType type, const void* in, float* out,
                                    std::uint64_t samples, std::uint64_t channels,
                                    std::uint64_t inner, const ChannelParams* params,
                                    cudaStream_t stream) {
  switch (type) {
    case InType::I8: return launch<std::int8_t>(in, out, samples, channels, inner, params, stream);
    case InType::U8: return launch<std::uint8_t>(in, out, samples, channels, inner, params, stream);
    case InType::I16: return launch<std::int16_t>(in, out, samples, channels, inner, params, stream);
    case InType::U16: return launch<std::uint16_t>(in, out, samples, channels, inner, params, stream);
    case InType::I32: return launch<std::int32_t>(in, out, samples, channels, inner, params, stream);
    case InType::U32: return launch<std::uint32_t>(in, out, samples, channels, inner, params, stream);
    case InType::I64: return launch<std::int64_t>(in, out, samples, channels, inner, params, stream);
    case InType::U64: return launch<std::uint64_t>(in, out, samples, channels, inner, params, stream);
    case InType::F32: return launch<float>(in, out, samples, channels, inner, params, stream);
    case InType::F64: return launch<double>(in, out, samples, channels, inner, params, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace lazycube::cuda::detail
