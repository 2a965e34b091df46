// zarrs' `optional` data type and `optional` codec (zarr-extensions registry). An element is a
// value of the inner type or null. lazycube reads it as a number with null as NaN: float and
// complex inner types keep their type, bool and integer ones are widened to float64 (as xarray
// does with masked integers). This is what the data type means, not CF decoding: raw reads give
// the same values.
// The codec (array->bytes): u64 LE length of the encoded mask, u64 LE length of the encoded
// data, the mask (bool per element, true where present) through `mask_codecs`, then the present
// elements only, flattened in C order, through `data_codecs`.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "lazycube/codec/codec.hpp"
#include "lazycube/dtype.hpp"

namespace lazycube::zarr {

// The type an optional array of `inner` reads as; MetadataError (naming `where`) for an inner
// type lazycube cannot give a NaN (strings, records, times, nested optional).
DataType optional_read_type(const DataType& inner, const std::string& where);

// The fill value's native bytes in the read type: null is NaN, [v] the inner value v.
Buffer optional_fill_bytes(const nlohmann::json& fill, const DataType& inner, const std::string& where);

// Whether a codec entry named `name` with `config` is zarrs' optional codec (mask_codecs /
// data_codecs), not the per-chunk codec switch once proposed under the same name.
bool is_optional_array_codec(const std::string& name, const nlohmann::json& config);

// The optional codec for chunks of `decoded` (the read type), elements stored as `inner`.
std::shared_ptr<const codec::ArrayToBytesCodec> make_optional_array_codec(const nlohmann::json& config,
                                                                           const codec::ChunkSpec& decoded,
                                                                           const DataType& inner, const std::string& where);

}  // namespace lazycube::zarr
