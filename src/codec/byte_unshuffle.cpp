// Byte unshuffle with AVX2 kernels for the common element sizes (int16/float32/float64), picked
// at run time so the library still runs on CPUs without AVX2. Each kernel reads 32 bytes from
// every byte plane and interleaves them with unpack instructions; unpack works within 128-bit
// lanes, so a final lane permute puts the elements back in order.
#include "byte_unshuffle.hpp"

#include <immintrin.h>

#include <cstring>
#include <vector>

namespace lazycube::codec::detail {
namespace {

using Kernel = std::size_t (*)(const std::byte* const*, std::byte*, std::size_t);

#define LAZYCUBE_AVX2 __attribute__((target("avx2")))

LAZYCUBE_AVX2 inline __m256i load(const std::byte* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
LAZYCUBE_AVX2 inline void store(std::byte* p, __m256i v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
}

// Each kernel unshuffles the first of `count` elements in steps of 32 from the byte planes
// in[0..elementsize) and returns how many it did.
LAZYCUBE_AVX2 std::size_t unshuffle2_avx2(const std::byte* const* in, std::byte* out,
                                          std::size_t count) {
  std::size_t i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m256i b0 = load(in[0] + i), b1 = load(in[1] + i);
    const __m256i lo = _mm256_unpacklo_epi8(b0, b1);  // elements 0-7 | 16-23
    const __m256i hi = _mm256_unpackhi_epi8(b0, b1);  // elements 8-15 | 24-31
    std::byte* o = out + 2 * i;
    store(o, _mm256_permute2x128_si256(lo, hi, 0x20));
    store(o + 32, _mm256_permute2x128_si256(lo, hi, 0x31));
  }
  return i;
}

LAZYCUBE_AVX2 std::size_t unshuffle4_avx2(const std::byte* const* in, std::byte* out,
                                          std::size_t count) {
  std::size_t i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m256i b0 = load(in[0] + i), b1 = load(in[1] + i);
    const __m256i b2 = load(in[2] + i), b3 = load(in[3] + i);
    const __m256i l01 = _mm256_unpacklo_epi8(b0, b1), h01 = _mm256_unpackhi_epi8(b0, b1);
    const __m256i l23 = _mm256_unpacklo_epi8(b2, b3), h23 = _mm256_unpackhi_epi8(b2, b3);
    const __m256i e0 = _mm256_unpacklo_epi16(l01, l23);  // elements 0-3 | 16-19
    const __m256i e1 = _mm256_unpackhi_epi16(l01, l23);  // 4-7 | 20-23
    const __m256i e2 = _mm256_unpacklo_epi16(h01, h23);  // 8-11 | 24-27
    const __m256i e3 = _mm256_unpackhi_epi16(h01, h23);  // 12-15 | 28-31
    std::byte* o = out + 4 * i;
    store(o, _mm256_permute2x128_si256(e0, e1, 0x20));
    store(o + 32, _mm256_permute2x128_si256(e2, e3, 0x20));
    store(o + 64, _mm256_permute2x128_si256(e0, e1, 0x31));
    store(o + 96, _mm256_permute2x128_si256(e2, e3, 0x31));
  }
  return i;
}

LAZYCUBE_AVX2 std::size_t unshuffle8_avx2(const std::byte* const* in, std::byte* out,
                                          std::size_t count) {
  std::size_t i = 0;
  for (; i + 32 <= count; i += 32) {
    __m256i b[8];
    for (int k = 0; k < 8; ++k) b[k] = load(in[k] + i);
    // Bytes into pairs, pairs into quads, quads into whole 8-byte elements.
    __m256i p[8], q[8], e[8];
    for (int k = 0; k < 4; ++k) {
      p[2 * k] = _mm256_unpacklo_epi8(b[2 * k], b[2 * k + 1]);      // 0-7 | 16-23
      p[2 * k + 1] = _mm256_unpackhi_epi8(b[2 * k], b[2 * k + 1]);  // 8-15 | 24-31
    }
    for (int k = 0; k < 2; ++k) {
      for (int h = 0; h < 2; ++h) {
        const __m256i x = p[4 * k + h], y = p[4 * k + 2 + h];
        q[4 * k + 2 * h] = _mm256_unpacklo_epi16(x, y);      // 0-3 | 16-19 (h = 0), 8-11 | 24-27
        q[4 * k + 2 * h + 1] = _mm256_unpackhi_epi16(x, y);  // 4-7 | 20-23 (h = 0), 12-15 | 28-31
      }
    }
    for (int k = 0; k < 4; ++k) {
      e[2 * k] = _mm256_unpacklo_epi32(q[k], q[4 + k]);      // elements 4k, 4k+1 | +16
      e[2 * k + 1] = _mm256_unpackhi_epi32(q[k], q[4 + k]);  // elements 4k+2, 4k+3 | +16
    }
    std::byte* o = out + 8 * i;
    for (int k = 0; k < 4; ++k) {
      store(o + 32 * k, _mm256_permute2x128_si256(e[2 * k], e[2 * k + 1], 0x20));        // 4k..
      store(o + 128 + 32 * k, _mm256_permute2x128_si256(e[2 * k], e[2 * k + 1], 0x31));  // 16+4k..
    }
  }
  return i;
}

bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}

Kernel kernel_for(std::size_t elementsize) {
  if (!have_avx2()) return nullptr;
  switch (elementsize) {
    case 2: return unshuffle2_avx2;
    case 4: return unshuffle4_avx2;
    case 8: return unshuffle8_avx2;
    default: return nullptr;
  }
}

}  // namespace

bool unshuffle_is_vectorised(std::size_t elementsize) { return kernel_for(elementsize) != nullptr; }

void unshuffle_planes(const std::byte* const* planes, std::size_t elementsize, std::size_t count,
                      std::byte* out) {
  const Kernel kernel = kernel_for(elementsize);
  const std::size_t done = kernel ? kernel(planes, out, count) : 0;
  for (std::size_t i = done; i < count; ++i)
    for (std::size_t b = 0; b < elementsize; ++b) out[i * elementsize + b] = planes[b][i];
}

void unshuffle_bytes(const std::byte* in, std::byte* out, std::size_t size, std::size_t elementsize) {
  std::size_t done = 0;
  if (elementsize > 1) {
    const std::size_t count = size / elementsize;
    std::vector<const std::byte*> planes(elementsize);
    for (std::size_t b = 0; b < elementsize; ++b) planes[b] = in + b * count;
    unshuffle_planes(planes.data(), elementsize, count, out);
    done = count * elementsize;
  }
  if (size > done) std::memcpy(out + done, in + done, size - done);
}

}  // namespace lazycube::codec::detail
