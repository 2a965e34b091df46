#include "bit_packing.hpp"

#include <cstring>

namespace lazycube::codec::detail {

namespace {

inline unsigned packed_bit_index(std::uint64_t position, BitOrder order) {
  return order == BitOrder::LsbFirst ? static_cast<unsigned>(position % 8) : 7u - static_cast<unsigned>(position % 8);
}

}  // namespace

void pack_bit_fields(const std::byte* in, std::uint64_t count, std::size_t unit, unsigned first,
                     unsigned bits, BitOrder order, std::byte* out) {
  std::memset(out, 0, (count * bits + 7) / 8);
  std::uint64_t pos = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t word = 0;
    std::memcpy(&word, in + i * unit, unit);  // little-endian host (dtype.cpp checks)
    word >>= first;
    for (unsigned b = 0; b < bits; ++b, ++pos)
      if ((word >> b) & 1u) out[pos / 8] |= std::byte(1u << packed_bit_index(pos, order));
  }
}

void unpack_bit_fields(const std::byte* in, std::uint64_t count, std::size_t unit, unsigned first,
                       unsigned bits, bool sign_extend, BitOrder order, std::byte* out) {
  std::uint64_t pos = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t field = 0;
    for (unsigned b = 0; b < bits; ++b, ++pos)
      if ((static_cast<unsigned>(in[pos / 8]) >> packed_bit_index(pos, order)) & 1u) field |= std::uint64_t{1} << b;
    std::uint64_t word = field << first;
    const unsigned top = first + bits;  // bits of the word the field reaches
    if (sign_extend && bits > 0 && ((field >> (bits - 1)) & 1u) && top < 64) word |= ~std::uint64_t{0} << top;
    std::memcpy(out + i * unit, &word, unit);
  }
}

}  // namespace lazycube::codec::detail
