// Icechunk object ids (12 bytes: snapshots, manifests, chunks; 8 bytes: nodes) and their
// Crockford base32 names (uppercase, no padding; 20 characters for 12 bytes).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lazycube::icechunk {

using Id12 = std::array<std::uint8_t, 12>;
using Id8 = std::array<std::uint8_t, 8>;

std::string encode_id(const std::uint8_t* bytes, std::size_t n);
inline std::string encode_id(const Id12& id) { return encode_id(id.data(), id.size()); }
// The 12 bytes of a 20-character name; nullopt when it is not one (wrong length or alphabet,
// or non-zero padding bits).
std::optional<Id12> decode_id12(std::string_view name);

}  // namespace lazycube::icechunk
