// The codecs fuzz_codec decodes, by selector byte (make_seeds.cpp encodes a seed for each):
// every bytes->bytes codec of the registry with the configurations numcodecs and xarray
// write, then vlen-utf8, vlen-bytes, then the sharding configurations.
#pragma once

#include <cstddef>

namespace lazycube::fuzz {

struct BytesCase {
  const char* config;  // the v2 codec object
  const char* dtype;   // the array's dtype (numpy typestr)
};

inline constexpr BytesCase kBytesCases[] = {
    {R"({"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1})", "<f4"},
    {R"({"id": "zstd", "level": 1})", "<f4"},
    {R"({"id": "lz4", "acceleration": 1})", "<f4"},
    {R"({"id": "gzip", "level": 1})", "<f4"},
    {R"({"id": "zlib", "level": 1})", "<f4"},
    {R"({"id": "bz2", "level": 1})", "<f4"},
    {R"({"id": "lzma", "format": 1, "check": -1, "preset": null, "filters": null})", "<f4"},
    {R"({"id": "lzma", "format": 2, "check": 0, "preset": null, "filters": null})", "<f4"},
    {R"({"id": "lzma", "format": 3, "check": -1, "preset": null, "filters": [{"id": 33, "preset": 1}]})", "<f4"},
    {R"({"id": "crc32c"})", "<f4"},
    {R"({"id": "crc32"})", "<f4"},
    {R"({"id": "adler32"})", "<f4"},
    {R"({"id": "fletcher32"})", "<f4"},
    {R"({"id": "shuffle", "elementsize": 4})", "<f4"},
    {R"({"id": "delta", "dtype": "<i4"})", "<i4"},
    {R"({"id": "delta", "dtype": "<f8", "astype": "<f4"})", "<f8"},
    {R"({"id": "fixedscaleoffset", "offset": 1, "scale": 10, "dtype": "<f8", "astype": "<i2"})", "<f8"},
    {R"({"id": "quantize", "digits": 3, "dtype": "<f8"})", "<f8"},
    {R"({"id": "packbits"})", "|b1"},
    {R"({"id": "categorize", "labels": ["a", "bb", "ccc"], "dtype": "<U3", "astype": "|u1"})", "<U3"},
    {R"({"id": "astype", "encode_dtype": "<i2", "decode_dtype": "<f8"})", "<f8"},
};
inline constexpr std::size_t kBytesCount = sizeof(kBytesCases) / sizeof(kBytesCases[0]);

// Sharding: shards of 4x4 int16, inner chunks 2x2.
inline constexpr const char* kShardCases[] = {
    R"({"chunk_shape": [2, 2], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]})",
    R"({"chunk_shape": [2, 2], "codecs": [{"name": "bytes", "configuration": {"endian": "big"}}, {"name": "zstd"}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "index_location": "start"})",
};
inline constexpr std::size_t kShardCount = sizeof(kShardCases) / sizeof(kShardCases[0]);

}  // namespace lazycube::fuzz
