// GRIB2 messages with complex packing (data representation templates 5.2 and 5.3) whose missing
// points are coded in the data themselves (missing-value management, code table 5.5: 1 =
// primary missing values, 2 = primary and secondary), written by hand from the WMO GRIB2
// specification: ecCodes 2.28 does not write missing-value management. The message is ecCodes'
// GRIB2 sample (its grid, its sections 0-4) with sections 5, 6 and 7 replaced; which points are
// missing is known from the construction, independently of any decoder. Only with
// LAZYCUBE_HAVE_ECCODES.
#pragma once

#ifdef LAZYCUBE_HAVE_ECCODES

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "grib_test_messages.hpp"

namespace lazycube::test::grib {

// Bits written most significant first, padded to a whole octet by octets().
class BitWriter {
 public:
  void put(std::uint64_t value, unsigned bits) {
    for (unsigned b = bits; b-- > 0;) {
      if (bit_ % 8 == 0) bytes_.push_back(std::byte{0});
      if (((value >> b) & 1) != 0) bytes_.back() |= std::byte{static_cast<unsigned char>(0x80 >> (bit_ % 8))};
      ++bit_;
    }
  }
  void align() { bit_ = (bit_ + 7) / 8 * 8; }
  const std::vector<std::byte>& octets() const { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
  std::uint64_t bit_ = 0;
};

struct ComplexMessage {
  std::vector<std::byte> bytes;
  std::vector<bool> missing;  // per grid point, from the construction
};

// `template_number` 2 (complex packing) or 3 (with spatial differencing of `order` 1 or 2);
// `management` 1 or 2 (code table 5.5). Groups of 8 points; every fifth group is missing as a
// whole (a group of width 0 whose reference is the all-ones code, or all-ones less one for a
// secondary missing value), and within the other groups (width 6) some points carry the
// primary (63) or, with management 2, the secondary (62) missing code.
inline ComplexMessage complex_missing_message(int template_number, int management, int order = 1) {
  Handle h(codes_handle_new_from_samples(nullptr, "GRIB2"));
  if (!h) throw std::runtime_error("ecCodes has no sample GRIB2");
  std::size_t n = 0;
  check(codes_get_size(h.get(), "values", &n), "size of values");
  const auto sample = message_bytes(h.get());

  constexpr unsigned kGroup = 8, kBits = 8, kWidth = 6;
  const std::size_t groups = (n + kGroup - 1) / kGroup;
  ComplexMessage out;
  out.missing.assign(n, false);
  BitWriter refs, widths, lengths, values;
  if (template_number == 3) {  // extra descriptors (2 octets each): the first `order` values, then the bias (signed)
    refs.put(1200, 16);
    if (order == 2) refs.put(1210, 16);
    refs.put(0x8000 | 20, 16);  // bias -20: sign bit and magnitude
  }
  for (std::size_t g = 0; g < groups; ++g) {
    const std::size_t first = g * kGroup, count = std::min<std::size_t>(kGroup, n - first);
    if (g % 5 == 2) {
      const bool secondary = management == 2 && g % 10 == 7;
      refs.put(secondary ? (1u << kBits) - 2 : (1u << kBits) - 1, kBits);
      widths.put(0, 8);
      for (std::size_t i = first; i < first + count; ++i) out.missing[i] = true;
    } else {
      refs.put(g % 17, kBits);
      widths.put(kWidth, 8);
      for (std::size_t i = first; i < first + count; ++i) {
        std::uint64_t code = (i * 7) % 40;
        if (i % 11 == 4) {
          code = (1u << kWidth) - 1;
          out.missing[i] = true;
        } else if (management == 2 && i % 11 == 9) {
          code = (1u << kWidth) - 2;
          out.missing[i] = true;
        }
        values.put(code, kWidth);
      }
    }
    lengths.put(count, 8);  // scaled group lengths (reference 0, increment 1)
  }
  refs.align();

  BitWriter s5;
  const unsigned s5_length = template_number == 3 ? 49 : 47;
  s5.put(s5_length, 32);
  s5.put(5, 8);
  s5.put(n, 32);                  // number of values (no bitmap: every point)
  s5.put(template_number, 16);
  float reference = 2500.0f;      // R
  std::uint32_t r = 0;
  std::memcpy(&r, &reference, 4);
  s5.put(r, 32);
  s5.put(0, 16);                  // E
  s5.put(1, 16);                  // D: values are (X + R) / 10
  s5.put(kBits, 8);               // bits of the group references
  s5.put(0, 8);                   // floating point
  s5.put(1, 8);                   // group splitting: general
  s5.put(management, 8);
  s5.put(0x7f7fffff, 32);         // primary missing value substitute (not used by decoders)
  s5.put(0x7f7ffffe, 32);         // secondary
  s5.put(groups, 32);
  s5.put(0, 8);                   // reference for group widths
  s5.put(8, 8);                   // bits of the group widths
  s5.put(0, 32);                  // reference for group lengths
  s5.put(1, 8);                   // length increment
  s5.put(n - (groups - 1) * kGroup, 32);  // true length of the last group
  s5.put(8, 8);                   // bits of the scaled group lengths
  if (template_number == 3) {
    s5.put(order, 8);
    s5.put(2, 8);                 // octets of each extra descriptor
  }

  std::vector<std::byte> s7;
  for (const BitWriter* part : {&refs, &widths, &lengths, &values})
    s7.insert(s7.end(), part->octets().begin(), part->octets().end());
  BitWriter s7_header;
  s7_header.put(5 + s7.size(), 32);
  s7_header.put(7, 8);

  // The sample's sections 0-4, then ours, then "7777".
  std::size_t at = 16;
  while (std::to_integer<unsigned>(sample[at + 4]) != 5) {
    std::uint32_t len = 0;
    for (int i = 0; i < 4; ++i) len = (len << 8) | std::to_integer<unsigned>(sample[at + i]);
    at += len;
  }
  std::vector<std::byte>& m = out.bytes;
  m.assign(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(at));
  m.insert(m.end(), s5.octets().begin(), s5.octets().end());
  for (unsigned v : {0u, 0u, 0u, 6u, 6u, 255u}) m.push_back(std::byte{static_cast<unsigned char>(v)});  // no bitmap
  m.insert(m.end(), s7_header.octets().begin(), s7_header.octets().end());
  m.insert(m.end(), s7.begin(), s7.end());
  for (char c : {'7', '7', '7', '7'}) m.push_back(std::byte{static_cast<unsigned char>(c)});
  const std::uint64_t total = m.size();
  for (int i = 0; i < 8; ++i) m[8 + i] = std::byte{static_cast<unsigned char>(total >> (8 * (7 - i)))};
  return out;
}

}  // namespace lazycube::test::grib

#endif  // LAZYCUBE_HAVE_ECCODES
