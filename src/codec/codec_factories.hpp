// Codec building blocks shared between codec files. The codecs themselves are built through
// the registry (codec_registry.hpp), each from its own file.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "lazycube/codec/codec.hpp"

namespace lazycube::codec::detail {

using BytesCodecPtr = std::shared_ptr<const BytesToBytesCodec>;

// Runs a numcodecs filter (a bytes->bytes codec over native-order element bytes) as a v3
// array->array codec, as zarr-python 3's numcodecs.* wrappers do.
std::shared_ptr<const ArrayToArrayCodec> make_filter_array_codec(BytesCodecPtr filter);

}  // namespace lazycube::codec::detail
