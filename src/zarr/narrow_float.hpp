// The narrow floating-point data types of the zarr-extensions registry (`bfloat16`, `float8_*`,
// `float6_*`, `float4_e2m1fn`; the 4- and 6-bit ones stored one per byte by the bytes codec, in
// the low bits, the upper bits ignored).
// NumPy here has no such dtypes: lazycube widens them to float32 on read. The array's dtype is
// float32; only the innermost array->bytes codec sees the stored 1- or 2-byte elements (it is
// wrapped by make_narrow_float_codec).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "lazycube/codec/codec.hpp"

namespace lazycube::zarr {

struct NarrowFloatFormat {
  // How the format departs from IEEE 754 at its edges.
  enum class Special {
    Ieee,  // all-ones exponent: infinities (mantissa 0) and NaNs; signed zero
    Fnuz,  // finite, NaN only at 0b1000'0000, no negative zero (LLVM's "fnuz")
    E8M0,  // unsigned power of two 2^(bits - 127), no zero, NaN at 0xff (float8_e8m0fnu)
    Fn,    // finite only (float6_*, float4_e2m1fn): no infinity, no NaN; signed zero. Encoding
           // saturates at the largest finite value (OCP MX); NaN has no pattern (encoded as 0)
  };
  std::string_view name;  // the v3 data_type name
  unsigned bytes;         // stored bytes: 1 (float8, float6, float4) or 2 (bfloat16)
  unsigned exponent_bits;
  unsigned mantissa_bits;
  int bias;
  Special special;

  bool has_infinity() const { return special == Special::Ieee; }
  bool has_nan() const { return special != Special::Fn; }
  // The format's bits: sign, exponent, mantissa (e8m0fnu: no sign).
  unsigned bits() const { return (special == Special::E8M0 ? 0 : 1) + exponent_bits + mantissa_bits; }
};

// The registry entry named `name`; nullptr for any other name.
const NarrowFloatFormat* find_narrow_float(std::string_view name);

// Stored bits → float32 (exact: every value of these formats is a float32).
float narrow_to_float(const NarrowFloatFormat& format, std::uint32_t bits);
// float32 → stored bits, rounding to nearest, ties to even. NaN maps to the format's NaN; a
// value past the largest finite one becomes ±infinity (IEEE formats) or NaN (formats without
// infinity); e8m0fnu takes the nearest power of two for positive values and NaN for zero and
// negative ones.
std::uint32_t float_to_narrow(const NarrowFloatFormat& format, float value);

// Fill value in the forms the registry gives it (a JSON number, "NaN", "Infinity"/"-Infinity"
// where the format has infinities, or "0x.." of exactly the stored width), as the float32 the
// widened array reads; a number rounds to the format. MetadataError naming `where`, the value
// and the type otherwise (fill_value.cpp).
float parse_narrow_float_fill(const NarrowFloatFormat& format, const nlohmann::json& value,
                              const std::string& where);

// Wraps the array->bytes codec `stored` (built for elements of DataType::uint(format.bytes)):
// the result decodes stored elements into float32 chunks and encodes float32 chunks back.
std::shared_ptr<const codec::ArrayToBytesCodec> make_narrow_float_codec(
    const NarrowFloatFormat& format, std::shared_ptr<const codec::ArrayToBytesCodec> stored);

}  // namespace lazycube::zarr
