// Fields of a few bits packed one after another into bytes: the Zarr v3 `packbits` codec
// (least significant bit of each byte first) and numcodecs' PackBits filter (numpy.packbits:
// most significant bit first), and the padding count both may store in an extra byte.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lazycube::codec::detail {

enum class BitOrder { LsbFirst, MsbFirst };

// The zero bits that pad `total_bits` to whole bytes (0..7).
inline unsigned padding_bits(std::uint64_t total_bits) {
  return static_cast<unsigned>((8 - total_bits % 8) % 8);
}

// Packs `count` components of `unit` bytes (little-endian words, unit <= 8) read from `in`:
// bits [first, first + bits) of component i go to bits [i * bits, (i + 1) * bits) of the
// stream, the field's lowest bit first. `out` holds ceil(count * bits / 8) bytes; padding bits
// are zero.
void pack_bit_fields(const std::byte* in, std::uint64_t count, std::size_t unit, unsigned first,
                     unsigned bits, BitOrder order, std::byte* out);

// The inverse: writes `count` components of `unit` bytes to `out`, each field shifted back to
// bit `first`, the bits outside it zero, or copies of the field's top bit above it when
// `sign_extend`.
void unpack_bit_fields(const std::byte* in, std::uint64_t count, std::size_t unit, unsigned first,
                       unsigned bits, bool sign_extend, BitOrder order, std::byte* out);

}  // namespace lazycube::codec::detail
