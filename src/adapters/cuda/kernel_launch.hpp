// Host entry of the unpack + normalise kernel (unpack_normalize.cu), called by
// cuda_runtime.cpp. C++17 and CUDA runtime types only: nvcc compiles the definition.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "channel_params.hpp"

namespace lazycube::cuda::detail {

// Enqueues the transform of a (samples, channels, inner) batch on `stream`: `in` and `out`
// are device pointers, `params` a host array of `channels` entries (passed by value to the
// kernels, at most kMaxChannelsPerLaunch per launch, so nothing outlives the call). Returns
// the first launch error (cudaSuccess when all launches were enqueued).
cudaError_t launch_unpack_normalize(InType type, const void* in, float* out,
                                    std::uint64_t samples, std::uint64_t channels,
                                    std::uint64_t inner, const ChannelParams* params,
                                    cudaStream_t stream);

}  // namespace lazycube::cuda::detail
