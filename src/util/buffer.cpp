#include "lazycube/util/buffer.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace lazycube::detail {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
// Below this, plain aligned new: huge-page rounding would waste memory on small buffers.
constexpr std::size_t kHugeThreshold = std::size_t{8} << 20;

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }
}  // namespace

std::byte* allocate_bytes(std::size_t size) {
  static const bool off = std::getenv("LAZYCUBE_NO_HUGEPAGES") != nullptr;
  if (off || size < kHugeThreshold) return static_cast<std::byte*>(::operator new(size, std::align_val_t{64}));
  void* p = std::aligned_alloc(kHugePage, round_up(size, kHugePage));
  if (p == nullptr) throw std::bad_alloc();
  // Advice only: without THP support this is a no-op.
  ::madvise(p, round_up(size, kHugePage), MADV_HUGEPAGE);
  return static_cast<std::byte*>(p);
}

void free_bytes(std::byte* p, std::size_t size) noexcept {
  static const bool off = std::getenv("LAZYCUBE_NO_HUGEPAGES") != nullptr;
  if (off || size < kHugeThreshold) ::operator delete(p, std::align_val_t{64});
  else std::free(p);
}

}  // namespace lazycube::detail
