// Internal helpers shared by the codec implementations: error text, decode limits,
// configuration reading, little-endian words and per-thread scratch buffers.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lazycube/codec/codec.hpp"
#include "lazycube/error.hpp"

namespace lazycube::codec::detail {

[[noreturn]] void fail(const std::string& message);

// The most a decode may produce: the exact size when fixed, else max_size. A max_size of 0
// (a default-constructed DecodeLimits) means kMaxUnboundedDecode.
std::uint64_t decode_cap(const DecodeLimits& limits);
// Throws "<codec>: decoded N bytes, expected M" when an exact size is set and differs.
void check_exact(std::string_view codec, std::uint64_t decoded, const DecodeLimits& limits);
// Throws "<codec>: stream claims N decoded bytes, more than the limit of M" when over the cap.
void check_claim(std::string_view codec, std::uint64_t claimed, const DecodeLimits& limits);

inline std::uint32_t load_le32(const std::byte* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);  // host is little-endian (checked in dtype.cpp)
  return v;
}
inline void store_le32(std::byte* p, std::uint32_t v) { std::memcpy(p, &v, 4); }

std::string hex32(std::uint32_t v);

// Reads one codec's configuration object and reports problems naming the codec and key.
class ConfigReader {
 public:
  ConfigReader(std::string codec, const nlohmann::json& config);

  const std::string& codec() const { return codec_; }
  const nlohmann::json* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  std::int64_t integer(std::string_view key, std::optional<std::int64_t> fallback = {}) const;
  double number(std::string_view key, std::optional<double> fallback = {}) const;
  std::string string(std::string_view key, std::optional<std::string> fallback = {}) const;
  // A numpy dtype string such as "<i4"; the CodecError names the key.
  ParsedNumpyDType dtype(std::string_view key, std::optional<std::string> fallback = {}) const;
  [[noreturn]] void bad(std::string_view key, std::string_view why) const;
  // Refuses any key not in `known` (registry codecs whose spec makes extra keys invalid).
  void only(std::initializer_list<std::string_view> known) const;

 private:
  const nlohmann::json& required(std::string_view key) const;
  std::string codec_;
  const nlohmann::json& config_;
};

// A per-thread stack of reusable buffers. Nested decodes (a shard's inner chunks decoded while
// the shard's bytes are still held in scratch) each get their own level, and steady-state
// decoding allocates nothing.
class ScratchLease {
 public:
  ScratchLease();
  ~ScratchLease();
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  Buffer& buffer() { return *buffer_; }

 private:
  Buffer* buffer_;
};

// Grows an output buffer for streaming decoders without ever exceeding `cap` bytes.
// Returns false when the buffer is already at the cap.
bool grow_output(Buffer& out, std::uint64_t cap);

}  // namespace lazycube::codec::detail
