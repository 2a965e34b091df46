#include "fletcher32.hpp"

namespace lazycube::codec::detail {

std::uint32_t fletcher32(ByteView data) {
  // 16-bit words read big-endian; sums folded every 360 words so they cannot overflow.
  const auto* p = reinterpret_cast<const std::uint8_t*>(data.data());
  std::size_t words = data.size() / 2;
  std::uint32_t sum1 = 0, sum2 = 0;
  auto fold = [](std::uint32_t s) { return (s & 0xffff) + (s >> 16); };
  while (words > 0) {
    std::size_t block = words > 360 ? 360 : words;
    words -= block;
    for (; block > 0; --block, p += 2) {
      sum1 += (static_cast<std::uint32_t>(p[0]) << 8) | p[1];
      sum2 += sum1;
    }
    sum1 = fold(sum1);
    sum2 = fold(sum2);
  }
  if (data.size() % 2 != 0) {
    // A trailing odd byte counts as the high byte of a final word.
    sum1 += static_cast<std::uint32_t>(*p) << 8;
    sum2 += sum1;
    sum1 = fold(sum1);
    sum2 = fold(sum2);
  }
  sum1 = fold(sum1);
  sum2 = fold(sum2);
  return (sum2 << 16) | sum1;
}

}  // namespace lazycube::codec::detail
