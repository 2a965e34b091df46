// IEEE 754 binary16 <-> binary32 conversion (numpy float16), round-to-nearest-even.
#pragma once

#include <bit>
#include <cstdint>

namespace lazycube {

// A numpy float16 element as stored: its binary16 bits. It has no arithmetic on purpose: the
// dtype dispatch (detail::visit_dtype in util/element_cast.hpp) hands float16 elements out as this
// type, and code that computes with them converts explicitly (half_to_float / float_to_half).
struct float16 {
  std::uint16_t bits = 0;
};
static_assert(sizeof(float16) == 2);

inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | (std::uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

inline std::uint16_t float_to_half(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u)  // inf or nan (keep a quiet nan payload bit)
    return sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u | ((abs >> 13) & 0x3ffu) : 0u);
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // overflow -> inf
  if (abs < 0x38800000u) {                        // subnormal or zero in half
    if (abs < 0x33000000u) return sign;           // underflow -> 0
    const std::uint32_t e = abs >> 23;
    const std::uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - e;          // 14..24
    std::uint32_t half_m = m >> shift;
    const std::uint32_t rem = m & ((1u << shift) - 1);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_m & 1u))) ++half_m;
    return sign | static_cast<std::uint16_t>(half_m);
  }
  std::uint32_t h = ((abs - 0x38000000u) >> 13);
  const std::uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return sign | static_cast<std::uint16_t>(h);
}

inline float half_to_float(float16 h) { return half_to_float(h.bits); }
inline float16 to_float16(float f) { return float16{float_to_half(f)}; }

}  // namespace lazycube
