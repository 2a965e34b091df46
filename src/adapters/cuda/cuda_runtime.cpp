// The CUDA side of lazycube/adapters/cuda.hpp in a build with nvcc: device discovery, pinned
// host memory and the device transform, over the static CUDA runtime (a machine without a
// driver loads this fine and reports 0 devices).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <string>

#include "channel_plan.hpp"
#include "kernel_launch.hpp"
#include "lazycube/adapters/cuda.hpp"
#include "lazycube/error.hpp"

namespace lazycube::cuda {

namespace {

void check(cudaError_t err, const char* call) {
  if (err != cudaSuccess)
    throw Error(std::string("CUDA ") + call + " failed: " + cudaGetErrorString(err));
}

struct Discovery {
  int count = 0;
  std::string reason;
};

// Asked once per process: cudaGetDeviceCount initialises the runtime (and fails quickly
// without a driver).
const Discovery& discovery() {
  static const Discovery d = [] {
    Discovery out;
    const cudaError_t err = cudaGetDeviceCount(&out.count);
    if (err != cudaSuccess) {
      out.count = 0;
      out.reason = std::string("CUDA cudaGetDeviceCount failed: ") + cudaGetErrorString(err);
      cudaGetLastError();  // clear it: later calls must not report it again
    } else if (out.count == 0) {
      out.reason = "no CUDA device found";
    }
    return out;
  }();
  return d;
}

void require_device(const char* what) {
  if (device_count() == 0)
    throw UsageError(std::string(what) + ": no usable CUDA device (" + unavailable_reason() + ")");
}

// The device owning `ptr`; UsageError (naming `what`) when it is not device memory.
int device_of(const void* ptr, const char* what) {
  cudaPointerAttributes attr{};
  const cudaError_t err = cudaPointerGetAttributes(&attr, ptr);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw UsageError(std::string("unpack_normalize_device: ") + what + " is not a CUDA pointer (" +
                     cudaGetErrorString(err) + ")");
  }
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged)
    throw UsageError(std::string("unpack_normalize_device: ") + what +
                     " is not device memory (pass device pointers; copy host batches first)");
  return attr.device;
}

// Makes `device` current for the scope (our runtime shares the driver's per-thread context
// with any other runtime in the process, e.g. torch's: restore what was current).
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    check(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) check(cudaSetDevice(device), "cudaSetDevice");
    else previous_ = -1;
  }
  ~DeviceScope() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace

bool built_with_cuda() { return true; }

int device_count() { return discovery().count; }

std::string unavailable_reason() { return discovery().reason; }

void unpack_normalize_device(const void* device_in, const DataType& in_dtype, float* device_out,
                             const BatchShape& shape, std::span<const ChannelTransform> channels,
                             void* stream) {
  const detail::InType type = detail::input_type(in_dtype);
  const auto params = detail::plan_channels(type, shape, channels);
  require_device("unpack_normalize_device");
  if (shape.size() == 0) return;
  const int device = device_of(device_out, "device_out");
  if (device_of(device_in, "device_in") != device)
    throw UsageError("unpack_normalize_device: device_in and device_out are on different devices");
  DeviceScope scope(device);
  check(detail::launch_unpack_normalize(type, device_in, device_out, shape.samples, shape.channels,
                                        shape.inner, params.data(),
                                        static_cast<cudaStream_t>(stream)),
        "kernel launch (unpack_normalize)");
}

namespace {

// Freed pinned blocks kept for reuse: cudaHostAlloc/cudaFreeHost cost milliseconds (they map
// and lock pages and synchronise the device), and a training loop allocates same-sized batch
// buffers over and over. Bounded: beyond kPoolBytes a freed block goes back to CUDA.
class PinnedPool {
 public:
  static PinnedPool& instance() {
    static PinnedPool* pool = new PinnedPool();  // never destroyed: deleters may run at exit
    return *pool;
  }

  std::byte* take(std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find(bytes);
      if (it != free_.end()) {
        std::byte* p = it->second;
        free_.erase(it);
        pooled_bytes_ -= bytes;
        return p;
      }
    }
    void* p = nullptr;
    // Page-aligned (more than the 64 bytes BatchAllocator promises); portable: pinned for
    // every device.
    check(cudaHostAlloc(&p, bytes, cudaHostAllocPortable), "cudaHostAlloc");
    return static_cast<std::byte*>(p);
  }

  void give_back(std::byte* p, std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (pooled_bytes_ + bytes <= kPoolBytes) {
        free_.emplace(bytes, p);
        pooled_bytes_ += bytes;
        return;
      }
    }
    cudaFreeHost(p);
  }

 private:
  static constexpr std::size_t kPoolBytes = std::size_t{512} << 20;
  std::mutex mutex_;
  std::multimap<std::size_t, std::byte*> free_;
  std::size_t pooled_bytes_ = 0;
};

}  // namespace

batch::BatchAllocator pinned_allocator() {
  require_device("pinned_allocator");
  return [](std::size_t bytes) {
    const std::size_t n = bytes == 0 ? 1 : bytes;
    std::byte* p = PinnedPool::instance().take(n);
    return std::shared_ptr<std::byte>(p, [n](std::byte* q) { PinnedPool::instance().give_back(q, n); });
  };
}

}  // namespace lazycube::cuda
