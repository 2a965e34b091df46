// FNV-1a over bytes and its hexadecimal text: names derived from identities (the persistent
// chunk cache's file names, the validity index's cache files). Not for security.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lazycube {

inline std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t h = 1469598103934665603ULL) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}
inline std::uint64_t fnv1a(std::string_view text, std::uint64_t h = 1469598103934665603ULL) {
  return fnv1a(text.data(), text.size(), h);
}

// 16 lowercase hex digits.
inline std::string hex16(std::uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = digits[v & 15];
  return s;
}

}  // namespace lazycube
