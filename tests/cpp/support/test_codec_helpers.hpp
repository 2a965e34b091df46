// Shared helpers for the codec tests.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lazycube/codec/codec.hpp"
#include "lazycube/error.hpp"

namespace lazycube::codec {
// Names parameterised cases over registered_codecs() after the codec.
inline void PrintTo(const RegisteredCodec& c, std::ostream* os) { *os << c.id; }
}  // namespace lazycube::codec

namespace lazycube::codec::testing {

// A test name for a registered codec ("vlen-utf8" -> "vlen_utf8").
inline std::string codec_case_name(const ::testing::TestParamInfo<RegisteredCodec>& info) {
  std::string name = info.param.id;
  // Codecs sharing an id under different names (v2 "packbits" and v3 "packbits") are told apart
  // by the file that registered them, and those of one file (gribberish) by the Zarr version
  // that names them.
  int same_id = 0, same_file = 0;
  for (const auto& c : registered_codecs()) {
    same_id += c.id == info.param.id;
    same_file += c.id == info.param.id && c.source_file == info.param.source_file;
  }
  if (same_id > 1) name += "_" + std::filesystem::path(info.param.source_file).stem().string();
  if (same_file > 1) name += info.param.v2_id.empty() ? "_v3" : "_v2";
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

inline std::vector<std::byte> from_hex(std::string_view hex) {
  std::vector<std::byte> out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<std::byte>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

template <class T>
std::vector<std::byte> as_bytes(const std::vector<T>& v) {
  std::vector<std::byte> out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

template <class T>
std::vector<T> from_bytes(ByteView b) {
  std::vector<T> out(b.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), b.data(), out.size() * sizeof(T));
  return out;
}

inline ByteView view(const std::vector<std::byte>& v) { return {v.data(), v.size()}; }

// Decodes with an exact expected size through decode().
inline std::vector<std::byte> decode_exact(const BytesToBytesCodec& c, ByteView in,
                                           std::size_t size) {
  Buffer scratch;
  DecodeLimits limits;
  limits.exact_size = size;
  limits.max_size = size;
  ByteView out = c.decode(in, scratch, limits);
  return {out.begin(), out.end()};
}

// Decodes with no size known (bounded only by kMaxUnboundedDecode).
inline std::vector<std::byte> decode_unbounded(const BytesToBytesCodec& c, ByteView in) {
  Buffer scratch;
  DecodeLimits limits;
  limits.max_size = kMaxUnboundedDecode;
  ByteView out = c.decode(in, scratch, limits);
  return {out.begin(), out.end()};
}

// Asserts that `stmt` throws CodecError whose message contains `needle`.
#define EXPECT_CODEC_ERROR(stmt, needle)                                               \
  do {                                                                                 \
    try {                                                                              \
      stmt;                                                                            \
      ADD_FAILURE() << "expected CodecError containing '" << (needle) << "'";          \
    } catch (const ::lazycube::CodecError& e) {                                        \
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)                \
          << "message: " << e.what();                                                  \
    }                                                                                  \
  } while (0)

inline ChunkSpec spec_of(DataType t, std::vector<std::uint64_t> shape) { return {t, shape}; }

}  // namespace lazycube::codec::testing
