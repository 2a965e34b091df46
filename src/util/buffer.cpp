#include "lazycube/util/buffer.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

namespace lazycube::detail {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
// Below this, plain aligned new (malloc's arenas suit small, short-lived buffers). glibc's own
// initial mmap threshold: decoded chunks of a few hundred KiB (a 256 x 256 float32 map) are
// mapped and pooled too, or, once glibc's adaptive threshold has grown past them, a stream of
// them fragments its heaps and RSS grows ~50 % past what is live.
constexpr std::size_t kMapThreshold = std::size_t{128} << 10;

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

bool huge_pages_off() {
  static const bool off = std::getenv("LAZYCUBE_NO_HUGEPAGES") != nullptr;
  return off;
}

// Large buffers (decoded chunks, outputs) are mapped directly: freeing one returns its memory
// to the system (glibc would keep freed blocks of this size in its heap once its adaptive
// mmap threshold grows, and RSS would creep past the cache budget). They are 2 MiB aligned
// with MADV_HUGEPAGE when rounding up to whole huge pages wastes at most 1/8: first-touch page
// faults then cost 512x fewer faults, which matters when a cache fills with fresh chunks.
bool use_huge_pages(std::size_t size) {
  return !huge_pages_off() && round_up(size, kHugePage) - size <= size / 8;
}

std::size_t mapped_size(std::size_t size) {
  return use_huge_pages(size) ? round_up(size, kHugePage) : round_up(size, 4096);
}

// Recently freed mapped blocks, kept for reuse: a fresh block costs the kernel zeroing every
// page on first touch, which dominated filling a chunk cache, allocating one batch buffer per
// batch, and receiving remote chunks (on this project's VMs first touch costs ~20x bare metal).
// The pool may hold what keeps the mapped total (handed out + pooled) at or below the highest
// total handed out so far, so it never raises the peak RSS by more than kPoolFloor; without that
// room a wave of 256 transfers of 1 MiB, freed after decoding and then allocated again for the
// next wave, got fresh memory each time. kPoolCeiling bounds what an idle process keeps after a
// large transient.
constexpr std::size_t kPoolFloor = std::size_t{32} << 20;
constexpr std::size_t kPoolCeiling = std::size_t{512} << 20;
constexpr std::size_t kMaxPooledBlock = std::size_t{8} << 20;  // larger outputs go straight back
struct FreeBlock {
  std::byte* p;
  std::size_t length;
};
std::mutex pool_mutex;
std::vector<FreeBlock> pool;   // most recently freed last
std::size_t pool_bytes = 0;
std::size_t live_bytes = 0;    // poolable blocks handed out
std::size_t peak_live = 0;     // the most of them ever handed out at once

std::byte* take_from_pool(std::size_t length) {
  std::lock_guard lock(pool_mutex);
  if (length <= kMaxPooledBlock) {
    live_bytes += length;
    peak_live = std::max(peak_live, live_bytes);
  }
  for (std::size_t i = pool.size(); i-- > 0;) {
    if (pool[i].length != length) continue;
    std::byte* p = pool[i].p;
    pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(i));
    pool_bytes -= length;
    return p;
  }
  return nullptr;
}

bool give_to_pool(std::byte* p, std::size_t length) {
  std::lock_guard lock(pool_mutex);
  if (length > kMaxPooledBlock) return false;
  live_bytes -= length;
  const std::size_t room = std::clamp(peak_live - live_bytes, kPoolFloor, kPoolCeiling);
  while (pool_bytes + length > room && !pool.empty()) {  // oldest out
    ::munmap(pool.front().p, pool.front().length);
    pool_bytes -= pool.front().length;
    pool.erase(pool.begin());
  }
  if (pool_bytes + length > room) return false;
  pool.push_back({p, length});
  pool_bytes += length;
  return true;
}
}  // namespace

std::byte* allocate_bytes(std::size_t size) {
  if (size < kMapThreshold) return static_cast<std::byte*>(::operator new(size, std::align_val_t{64}));
  const std::size_t length = mapped_size(size);
  if (std::byte* reused = take_from_pool(length)) return reused;
  if (!use_huge_pages(size)) {
    void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<std::byte*>(p);
  }
  // Over-map by one huge page and trim, so the block starts on a 2 MiB boundary.
  void* raw = ::mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = round_up(base, kHugePage);
  if (aligned > base) ::munmap(raw, aligned - base);
  const std::uintptr_t end = aligned + length;
  const std::uintptr_t raw_end = base + length + kHugePage;
  if (raw_end > end) ::munmap(reinterpret_cast<void*>(end), raw_end - end);
  // Advice only: without THP support this is a no-op.
  ::madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);
  return reinterpret_cast<std::byte*>(aligned);
}

void free_bytes(std::byte* p, std::size_t size) noexcept {
  if (size < kMapThreshold) ::operator delete(p, std::align_val_t{64});
  else if (const std::size_t length = mapped_size(size); !give_to_pool(p, length)) ::munmap(p, length);
}

}  // namespace lazycube::detail
