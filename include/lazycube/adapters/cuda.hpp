// GPU hand-off: unpack scale/offset-encoded (CF "packed") integer channels and normalise per
// channel, on the GPU (CUDA kernel, built when nvcc is present at configure time) or on the
// CPU (the reference implementation, always built); page-locked (pinned) host memory for
// batch buffers. No CUDA headers here: device pointers and streams travel as void*.
//
// Layout of a batch: (samples, channels, inner) in C order, `inner` being the product of the
// window dims. For every element of channel c:
//   v = (raw == fill[c] or raw == missing[c]) ? NaN : raw * scale[c] + offset[c]   (unpack)
//   out = (v - mean[c]) / std[c]                                                  (normalise)
// Float inputs skip the fill test unless a fill is given (NaN stays NaN either way).
// A fill or missing value matches only when it converts exactly to the input type (-1 never
// matches a uint8 255; 0.5 no integer).
//
// Both sides compute out = raw * (scale / std) + (offset - mean) / std, the formula above
// with the constants folded per channel. The CPU reference computes in double and rounds once
// to float32. The GPU computes in float for inputs of at most 16 bits and float32 (exact in
// float; one fused multiply-add) and in double for wider ones, and agrees with the reference
// within 1e-6 * (|raw * scale / std| + |(offset - mean) / std| + |out|) (tests/cuda).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "lazycube/batch/batch_generator.hpp"
#include "lazycube/dtype.hpp"

namespace lazycube::cuda {

// How one channel turns from stored values into normalised float32.
struct ChannelTransform {
  double scale = 1.0;                 // CF scale_factor
  double offset = 0.0;                // CF add_offset
  std::optional<double> fill;         // CF _FillValue (in stored units) -> NaN
  std::optional<double> missing;      // CF missing_value (in stored units) -> NaN
  double mean = 0.0;                  // normalisation: (v - mean) / std
  double std = 1.0;                   // must be > 0 (UsageError otherwise)
};

struct BatchShape {
  std::uint64_t samples = 0;
  std::uint64_t channels = 0;
  std::uint64_t inner = 0;  // elements per (sample, channel)
  std::uint64_t size() const { return samples * channels * inner; }
};

// Whether the CUDA kernels were compiled into this build.
bool built_with_cuda();
// Number of CUDA devices usable now (0 without a build with CUDA, a driver or a device).
int device_count();
// Why device_count() is 0, for messages and test skips ("" when a device is usable).
std::string unavailable_reason();

// CPU reference: `in` holds shape.size() values of `in_dtype` (int8..uint64, float32,
// float64); `out` receives shape.size() float32. `channels` has shape.channels entries.
// UsageError for an unsupported dtype, a wrong channel count or std <= 0.
void unpack_normalize_host(const void* in, const DataType& in_dtype, float* out,
                           const BatchShape& shape, std::span<const ChannelTransform> channels);

// The same on the GPU: `device_in` and `device_out` are device pointers, `stream` a
// cudaStream_t (nullptr: the default stream). Asynchronous on `stream`. UsageError when no
// device is usable (unavailable_reason() says why); StoreError-free: CUDA failures throw
// lazycube::Error naming the CUDA call and its error string.
void unpack_normalize_device(const void* device_in, const DataType& in_dtype, float* device_out,
                             const BatchShape& shape, std::span<const ChannelTransform> channels,
                             void* stream);

// Pinned host memory for BatchOptions::allocator: buffers come from cudaHostAlloc (portable)
// and, when freed, go to a process-wide pool (up to 512 MiB) that serves later buffers of the
// same size, since every pin costs milliseconds; beyond that they go back to cudaFreeHost.
// Throws UsageError (with unavailable_reason()) when no device is usable.
batch::BatchAllocator pinned_allocator();

}  // namespace lazycube::cuda
