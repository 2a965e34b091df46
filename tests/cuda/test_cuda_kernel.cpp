// The CUDA unpack + normalise kernel against the CPU reference, and the pinned allocator, on a
// real device. Exits 77 (ctest: skipped) printing the reason when no device is usable.
//
// Tolerance: the kernel computes in float for inputs of at most 16 bits (and float32), so an
// element may differ from the double-precision reference by rounding of the folded constants
// and of one fused multiply-add: |gpu - cpu| <= 1e-6 * (|raw * a| + |b| + |cpu|), with
// a = scale / std and b = (offset - mean) / std. NaN must match NaN.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lazycube/adapters/cuda.hpp"
#include "lazycube/error.hpp"

namespace {

using lazycube::DataType;
using lazycube::cuda::BatchShape;
using lazycube::cuda::ChannelTransform;

int g_failures = 0;

void fail(const std::string& what) {
  std::printf("FAIL: %s\n", what.c_str());
  ++g_failures;
}

void cuda_ok(cudaError_t err, const char* call) {
  if (err != cudaSuccess) {
    std::printf("FAIL: %s: %s\n", call, cudaGetErrorString(err));
    std::exit(1);
  }
}

template <class T>
void check_kernel(const char* name, const DataType& dtype, const BatchShape& shape,
                  const std::vector<T>& in, const std::vector<ChannelTransform>& ch,
                  cudaStream_t stream) {
  std::vector<float> cpu(shape.size());
  lazycube::cuda::unpack_normalize_host(in.data(), dtype, cpu.data(), shape, ch);
  void* d_in = nullptr;
  float* d_out = nullptr;
  cuda_ok(cudaMalloc(&d_in, in.size() * sizeof(T)), "cudaMalloc");
  cuda_ok(cudaMalloc(reinterpret_cast<void**>(&d_out), shape.size() * sizeof(float)), "cudaMalloc");
  cuda_ok(cudaMemcpyAsync(d_in, in.data(), in.size() * sizeof(T), cudaMemcpyHostToDevice, stream),
          "cudaMemcpyAsync");
  lazycube::cuda::unpack_normalize_device(d_in, dtype, d_out, shape, ch, stream);
  std::vector<float> gpu(shape.size());
  cuda_ok(cudaMemcpyAsync(gpu.data(), d_out, gpu.size() * sizeof(float), cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync");
  cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  cudaFree(d_in);
  cudaFree(d_out);
  std::size_t bad = 0, nans = 0;
  for (std::uint64_t i = 0; i < shape.size(); ++i) {
    const ChannelTransform& t = ch[(i / shape.inner) % shape.channels];
    if (std::isnan(cpu[i]) || std::isnan(gpu[i])) {
      nans += std::isnan(cpu[i]) ? 1 : 0;
      if (std::isnan(cpu[i]) != std::isnan(gpu[i])) ++bad;
      continue;
    }
    const double raw = static_cast<double>(in[i]);
    const double tol = 1e-6 * (std::abs(raw * t.scale / t.std) + std::abs((t.offset - t.mean) / t.std) +
                               std::abs(static_cast<double>(cpu[i])));
    if (std::abs(static_cast<double>(gpu[i]) - cpu[i]) > tol) {
      if (bad < 5)
        std::printf("  %s element %llu: gpu %.9g cpu %.9g\n", name, static_cast<unsigned long long>(i),
                    gpu[i], cpu[i]);
      ++bad;
    }
  }
  if (bad) fail(std::string(name) + ": " + std::to_string(bad) + " elements differ");
  else std::printf("ok: %s (%llu elements, %zu NaN)\n", name,
                   static_cast<unsigned long long>(shape.size()), nans);
}

std::vector<ChannelTransform> random_transforms(std::size_t n, std::mt19937& rng, bool fills) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<ChannelTransform> ch(n);
  for (std::size_t c = 0; c < n; ++c) {
    ch[c].scale = std::pow(10.0, 2.0 * u(rng));
    ch[c].offset = 1e5 * u(rng);
    ch[c].mean = ch[c].offset + 10.0 * u(rng);
    ch[c].std = 0.5 + std::abs(u(rng)) * 100.0;
    if (fills && c % 2 == 0) ch[c].fill = -32767;
    if (fills && c % 3 == 0) ch[c].missing = 0;
  }
  return ch;
}

void check_pinned_allocator() {
  auto alloc = lazycube::cuda::pinned_allocator();
  const std::size_t n = 1 << 20;
  auto buf = alloc(n);
  cudaPointerAttributes attr{};
  cuda_ok(cudaPointerGetAttributes(&attr, buf.get()), "cudaPointerGetAttributes");
  if (attr.type != cudaMemoryTypeHost) fail("pinned_allocator: memory is not page-locked host memory");
  if (reinterpret_cast<std::uintptr_t>(buf.get()) % 64 != 0) fail("pinned_allocator: not 64-byte aligned");
  std::memset(buf.get(), 0x5a, n);
  void* d = nullptr;
  cuda_ok(cudaMalloc(&d, n), "cudaMalloc");
  cuda_ok(cudaMemcpy(d, buf.get(), n, cudaMemcpyHostToDevice), "cudaMemcpy");
  std::memset(buf.get(), 0, n);
  cuda_ok(cudaMemcpy(buf.get(), d, n, cudaMemcpyDeviceToHost), "cudaMemcpy");
  cudaFree(d);
  const auto* p = reinterpret_cast<const unsigned char*>(buf.get());
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != 0x5a) {
      fail("pinned_allocator: round trip through the device changed byte " + std::to_string(i));
      break;
    }
  buf.reset();  // cudaFreeHost
  cuda_ok(cudaGetLastError(), "cudaFreeHost");
  std::printf("ok: pinned_allocator\n");
}

}  // namespace

int main() {
  if (lazycube::cuda::device_count() == 0) {
    std::printf("SKIP: %s\n", lazycube::cuda::unavailable_reason().c_str());
    return 77;
  }
  try {
    std::mt19937 rng(42);
    cudaStream_t stream = nullptr;
    cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

    {  // packed int16, several channels with fill / missing values
      const BatchShape shape{6, 5, 37 * 41};
      std::vector<std::int16_t> in(shape.size());
      std::uniform_int_distribution<int> d(-32768, 32767);
      for (auto& v : in) v = static_cast<std::int16_t>(d(rng) % 50 == 0 ? -32767 : d(rng));
      check_kernel("int16", DataType::int_(2), shape, in, random_transforms(5, rng, true), stream);
    }
    {  // uint8, rows shorter than a warp
      const BatchShape shape{33, 3, 7};
      std::vector<std::uint8_t> in(shape.size());
      std::uniform_int_distribution<int> d(0, 255);
      for (auto& v : in) v = static_cast<std::uint8_t>(d(rng));
      auto ch = random_transforms(3, rng, false);
      ch[1].fill = 255;
      check_kernel("uint8", DataType::uint(1), shape, in, ch, stream);
    }
    {  // float32 with NaNs, default stream
      const BatchShape shape{4, 2, 1000};
      std::vector<float> in(shape.size());
      std::normal_distribution<float> d(280.0f, 20.0f);
      for (std::size_t i = 0; i < in.size(); ++i) in[i] = i % 97 == 0 ? NAN : d(rng);
      check_kernel("float32", DataType::float_(4), shape, in, random_transforms(2, rng, false), nullptr);
    }
    {  // more channels than one launch takes (64)
      const BatchShape shape{3, 70, 300};
      std::vector<std::int16_t> in(shape.size());
      std::uniform_int_distribution<int> d(-32768, 32767);
      for (auto& v : in) v = static_cast<std::int16_t>(d(rng));
      check_kernel("int16 x 70 channels", DataType::int_(2), shape, in, random_transforms(70, rng, true), stream);
    }
    {  // int64 computes in double
      const BatchShape shape{2, 3, 500};
      std::vector<std::int64_t> in(shape.size());
      std::uniform_int_distribution<std::int64_t> d(-(1LL << 40), 1LL << 40);
      for (auto& v : in) v = d(rng);
      check_kernel("int64", DataType::int_(8), shape, in, random_transforms(3, rng, true), stream);
    }
    check_pinned_allocator();
    cudaStreamDestroy(stream);
  } catch (const lazycube::Error& e) {
    fail(std::string("lazycube error: ") + e.what());
  }
  if (g_failures) std::printf("%d check(s) failed\n", g_failures);
  return g_failures ? 1 : 0;
}
