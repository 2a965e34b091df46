// Builders of the individual codecs, used by the registry. Each takes the name the codec was
// asked for (a v2 id such as "zlib" or a v3 name such as "numcodecs.zlib"; the codec reports it
// back from name()), its configuration and the spec of its decoded side.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "lazycube/codec/codec.hpp"

namespace lazycube::codec::detail {

using BytesCodecPtr = std::shared_ptr<const BytesToBytesCodec>;
#define LAZYCUBE_BYTES_BUILDER(fn) \
  BytesCodecPtr fn(const std::string& name, const nlohmann::json& config, const ChunkSpec& decoded)

// Compressors.
LAZYCUBE_BYTES_BUILDER(make_blosc);
LAZYCUBE_BYTES_BUILDER(make_zstd);
LAZYCUBE_BYTES_BUILDER(make_lz4);
LAZYCUBE_BYTES_BUILDER(make_gzip);
LAZYCUBE_BYTES_BUILDER(make_zlib);
LAZYCUBE_BYTES_BUILDER(make_bz2);
LAZYCUBE_BYTES_BUILDER(make_lzma);
// Checksums.
LAZYCUBE_BYTES_BUILDER(make_crc32c);
LAZYCUBE_BYTES_BUILDER(make_adler32);
LAZYCUBE_BYTES_BUILDER(make_crc32);
LAZYCUBE_BYTES_BUILDER(make_fletcher32);
// numcodecs filters.
LAZYCUBE_BYTES_BUILDER(make_delta);
LAZYCUBE_BYTES_BUILDER(make_fixedscaleoffset);
LAZYCUBE_BYTES_BUILDER(make_quantize);
LAZYCUBE_BYTES_BUILDER(make_astype);
LAZYCUBE_BYTES_BUILDER(make_shuffle);
LAZYCUBE_BYTES_BUILDER(make_packbits);
LAZYCUBE_BYTES_BUILDER(make_categorize);

#undef LAZYCUBE_BYTES_BUILDER

// v3 `bytes` codec from its configuration.
std::shared_ptr<const ArrayToBytesCodec> make_bytes_codec_v3(const nlohmann::json& config,
                                                             const ChunkSpec& decoded);
// Variable-length codecs (v2 object codecs and v3 names).
std::shared_ptr<const ArrayToBytesCodec> make_vlen_codec(const std::string& name, bool utf8);
// Runs a numcodecs filter (a bytes->bytes codec over native-order element bytes) as a v3
// array->array codec, as zarr-python 3's numcodecs.* wrappers do.
std::shared_ptr<const ArrayToArrayCodec> make_filter_array_codec(BytesCodecPtr filter);

// Byte swapping of `count` units of `unit` bytes, in place.
void swap_bytes(MutableByteView data, std::size_t unit);

}  // namespace lazycube::codec::detail
