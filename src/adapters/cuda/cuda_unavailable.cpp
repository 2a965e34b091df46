// lazycube/adapters/cuda.hpp in a build without nvcc: no devices, and the device functions
// say so with a UsageError (the CPU reference lives in the core library and always works).
#include <string>

#include "lazycube/adapters/cuda.hpp"
#include "lazycube/error.hpp"

namespace lazycube::cuda {

namespace {
constexpr const char* kReason = "lazycube was built without CUDA (no nvcc at configure time)";
}

bool built_with_cuda() { return false; }

int device_count() { return 0; }

std::string unavailable_reason() { return kReason; }

void unpack_normalize_device(const void*, const DataType&, float*, const BatchShape&,
                             std::span<const ChannelTransform>, void*) {
  throw UsageError(std::string("unpack_normalize_device: ") + kReason);
}

batch::BatchAllocator pinned_allocator() {
  throw UsageError(std::string("pinned_allocator: ") + kReason);
}

}  // namespace lazycube::cuda
