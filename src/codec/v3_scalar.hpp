// Numeric values in Zarr v3 codec configurations (scale_offset's offset and scale, cast_value's
// data_type and scalar_map): a data type by its v3 name, and a scalar in the fill-value JSON
// encoding of that type (integers as JSON integers; floats as numbers, "NaN", "Infinity",
// "-Infinity" or a "0x..." bit pattern of the type's width). Bad values are a CodecError naming
// the codec and the key (ConfigReader::bad).
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>
#include <nlohmann/json.hpp>

#include "codec_util.hpp"
#include "util/half.hpp"

namespace lazycube::codec::detail {

// The real-number data types these codecs compute with: int8..int64, uint8..uint64,
// float16/32/64 (bool, complex, dates and strings are refused).
bool is_real_number_dtype(const DataType& t);

// A v3 data type name ("uint8", "float32", ...; {"name": ...} objects too) of a real-number
// type.
DataType v3_real_dtype(const ConfigReader& cfg, std::string_view key, const nlohmann::json& v);

// The value of an integer scalar (range unchecked) and of a float scalar of `float_bytes` bytes.
__int128 v3_integer_scalar(const ConfigReader& cfg, std::string_view key, const nlohmann::json& v);
double v3_float_scalar(const ConfigReader& cfg, std::string_view key, const nlohmann::json& v,
                       std::size_t float_bytes);

// A scalar of the element type T (as lazycube::detail::visit_dtype hands it out).
template <class T>
T v3_scalar(const ConfigReader& cfg, std::string_view key, const nlohmann::json& v) {
  if constexpr (std::is_integral_v<T>) {
    const __int128 x = v3_integer_scalar(cfg, key, v);
    if (x < std::numeric_limits<T>::min() || x > std::numeric_limits<T>::max())
      cfg.bad(key, v.dump() + " is out of the data type's range");
    return static_cast<T>(x);
  } else if constexpr (std::is_same_v<T, float16>) {
    return to_float16(static_cast<float>(v3_float_scalar(cfg, key, v, 2)));
  } else {
    return static_cast<T>(v3_float_scalar(cfg, key, v, sizeof(T)));
  }
}

}  // namespace lazycube::codec::detail
