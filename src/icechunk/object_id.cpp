#include "object_id.hpp"

namespace lazycube::icechunk {

namespace {
constexpr char kAlphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

int digit_of(char c) {
  for (int i = 0; i < 32; ++i)
    if (kAlphabet[i] == c) return i;
  return -1;
}
}  // namespace

std::string encode_id(const std::uint8_t* bytes, std::size_t n) {
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (std::size_t i = 0; i < n; ++i) {
    acc = (acc << 8) | bytes[i];
    bits += 8;
    while (bits >= 5) {
      out += kAlphabet[(acc >> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += kAlphabet[(acc << (5 - bits)) & 31];  // zero bits appended on the right
  return out;
}

std::optional<Id12> decode_id12(std::string_view name) {
  if (name.size() != 20) return std::nullopt;
  Id12 id{};
  std::uint32_t acc = 0;
  int bits = 0;
  std::size_t n = 0;
  for (char c : name) {
    const int d = digit_of(c);
    if (d < 0) return std::nullopt;
    acc = (acc << 5) | static_cast<std::uint32_t>(d);
    bits += 5;
    if (bits >= 8) {
      if (n == id.size()) return std::nullopt;
      id[n++] = static_cast<std::uint8_t>((acc >> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  if (n != id.size() || (acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return id;
}

}  // namespace lazycube::icechunk
