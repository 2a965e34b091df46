// The Zarr v3 codecs of the zarr-extensions registry: scale_offset, cast_value, bitround,
// packbits (v3 form), reshape and zfp. Expected values come from the registry entries'
// formulas and examples computed here independently (C++ arithmetic in the array's own type,
// numpy-style rounding written out by hand), zarrs' own test vectors where it has them, and
// libzfp itself for zfp; then bad input of every kind.
#include <bit>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "test_codec_helpers.hpp"
#include "util/half.hpp"

#ifdef LAZYCUBE_HAVE_ZFP
#include <zfp.h>
#endif

namespace lazycube::codec::testing {
namespace {

using nlohmann::json;

template <class T>
ChunkData new_codec_cells(const std::vector<T>& v) {
  ChunkData d;
  d.bytes = Buffer::copy_of(view(as_bytes(v)));
  return d;
}

template <class T>
std::vector<T> new_codec_values(const ChunkData& d) {
  return from_bytes<T>(d.bytes.view());
}

// Encodes `values` (decoded side, dtype of spec) with an array->array codec.
template <class T>
ChunkData new_codec_encode(const std::string& name, const json& config, const ChunkSpec& spec, const std::vector<T>& values) {
  ChunkData out;
  make_array_codec(name, config, spec)->encode(new_codec_cells(values), spec, out);
  return out;
}

// Decodes encoded-side values with an array->array codec.
template <class Out, class In>
std::vector<Out> new_codec_decode(const std::string& name, const json& config, const ChunkSpec& spec,
                                  const std::vector<In>& encoded) {
  ChunkData in = new_codec_cells(encoded), out;
  make_array_codec(name, config, spec)->decode(in, spec, out);
  return new_codec_values<Out>(out);
}

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// ---- scale_offset ---------------------------------------------------------------------------

TEST(CodecScaleOffset, Float32DecodesInFloat32Arithmetic) {
  // The registry's example: offset 5, scale 0.1 on float32; decode = in / scale + offset.
  const json config = {{"offset", 5}, {"scale", 0.1}};
  const std::vector<float> enc = {0.0f, 1.0f, 2.5f, -3.0f, 100.0f, 1e-7f};
  const auto spec = spec_of(DataType::float_(4), {6});
  const auto got = new_codec_decode<float>("scale_offset", config, spec, enc);
  for (std::size_t i = 0; i < enc.size(); ++i) {
    const float want = enc[i] / 0.1f + 5.0f;
    EXPECT_TRUE(same_bits(got[i], want)) << i << ": " << got[i] << " vs " << want;
  }
  const std::vector<float> dec = {5.0f, 6.5f, -1.25f, 1000.0f};
  const auto back = new_codec_values<float>(new_codec_encode("scale_offset", config, spec_of(DataType::float_(4), {4}), dec));
  for (std::size_t i = 0; i < dec.size(); ++i) EXPECT_TRUE(same_bits(back[i], (dec[i] - 5.0f) * 0.1f)) << i;
}

TEST(CodecScaleOffset, Float64AndFloat16) {
  const json config = {{"offset", -273.15}, {"scale", 100}};
  const std::vector<double> enc = {0, 1, -2, 12345.5};
  const auto got = new_codec_decode<double>("scale_offset", config, spec_of(DataType::float_(8), {4}), enc);
  for (std::size_t i = 0; i < enc.size(); ++i) EXPECT_TRUE(same_bits(got[i], enc[i] / 100.0 + -273.15)) << i;

  // float16: each operation rounded to half precision.
  const json half_config = {{"offset", 1.5}, {"scale", 3}};
  const std::vector<float16> h = {to_float16(1.0f), to_float16(-7.0f), to_float16(1000.0f)};
  const auto hg = new_codec_decode<float16>("scale_offset", half_config, spec_of(DataType::float_(2), {3}), h);
  for (std::size_t i = 0; i < h.size(); ++i) {
    const float q = half_to_float(to_float16(half_to_float(h[i]) / 3.0f));
    EXPECT_EQ(hg[i].bits, to_float16(q + 1.5f).bits) << i;
  }
}

TEST(CodecScaleOffset, IntegersUseCheckedIntegerArithmetic) {
  // uint16 range reduction of the registry's example: offset 1000.
  const auto u16 = spec_of(DataType::uint(2), {3});
  EXPECT_EQ((new_codec_decode<std::uint16_t>("scale_offset", {{"offset", 1000}}, u16, std::vector<std::uint16_t>{0, 200, 255})),
            (std::vector<std::uint16_t>{1000, 1200, 1255}));
  EXPECT_EQ(new_codec_values<std::uint16_t>(new_codec_encode("scale_offset", {{"offset", 1000}}, u16,
                                                             std::vector<std::uint16_t>{1000, 1200, 1255})),
            (std::vector<std::uint16_t>{0, 200, 255}));
  // Truncating division, as C and zarrs divide.
  EXPECT_EQ((new_codec_decode<std::int32_t>("scale_offset", {{"scale", 3}}, spec_of(DataType::int_(4), {4}),
                                            std::vector<std::int32_t>{7, -7, 9, 0})),
            (std::vector<std::int32_t>{2, -2, 3, 0}));
  // Leaving the type's range is an error, naming the value.
  EXPECT_CODEC_ERROR((new_codec_decode<std::int8_t>("scale_offset", {{"offset", 100}}, spec_of(DataType::int_(1), {2}),
                                                    std::vector<std::int8_t>{1, 100})),
                     "decoding 100 leaves the range of int8");
  EXPECT_CODEC_ERROR(new_codec_encode("scale_offset", {{"offset", 1000}}, spec_of(DataType::uint(2), {1}), std::vector<std::uint16_t>{999}),
                     "encoding 999");
  EXPECT_CODEC_ERROR((new_codec_decode<std::int8_t>("scale_offset", {{"scale", -1}}, spec_of(DataType::int_(1), {1}),
                                                    std::vector<std::int8_t>{-128})),
                     "leaves the range");
}

TEST(CodecScaleOffset, MissingQuantitiesAreIdentitiesAndSpecialFloatsParse) {
  const auto f8 = spec_of(DataType::float_(8), {2});
  EXPECT_EQ((new_codec_decode<double>("scale_offset", json::object(), f8, std::vector<double>{1.5, -2})),
            (std::vector<double>{1.5, -2}));
  EXPECT_EQ((new_codec_decode<double>("scale_offset", nullptr, f8, std::vector<double>{1.5, -2})),
            (std::vector<double>{1.5, -2}));
  const auto nan = new_codec_decode<double>("scale_offset", {{"offset", "NaN"}}, f8, std::vector<double>{1, 2});
  EXPECT_TRUE(std::isnan(nan[0]) && std::isnan(nan[1]));
  // A float32 bit pattern: 0x40000000 is 2.0f.
  EXPECT_EQ((new_codec_decode<float>("scale_offset", {{"scale", "0x40000000"}}, spec_of(DataType::float_(4), {1}),
                                     std::vector<float>{3.0f})),
            (std::vector<float>{1.5f}));
}

TEST(CodecScaleOffset, BadConfigurationAndData) {
  const auto i4 = spec_of(DataType::int_(4), {4});
  EXPECT_CODEC_ERROR(make_array_codec("scale_offset", {{"scale", 0}}, i4), "'scale'");
  EXPECT_CODEC_ERROR(make_array_codec("scale_offset", {{"scale", 0.0}}, spec_of(DataType::float_(4), {1})), "must not be 0");
  EXPECT_CODEC_ERROR(make_array_codec("scale_offset", {{"offset", 1.5}}, i4), "'offset'");
  EXPECT_CODEC_ERROR(make_array_codec("scale_offset", {{"offset", 1LL << 40}}, i4), "out of the data type's range");
  EXPECT_CODEC_ERROR(make_array_codec("scale_offset", {{"offset", "lots"}}, spec_of(DataType::float_(8), {1})), "'offset'");
  EXPECT_CODEC_ERROR(make_array_codec("scale_offset", {{"offset", 1}, {"astype", "uint8"}}, i4), "'astype'");
  EXPECT_CODEC_ERROR(make_array_codec("scale_offset", {{"offset", 1}}, spec_of(DataType::boolean(), {1})),
                     "unsupported data type bool");
  EXPECT_CODEC_ERROR(make_array_codec("scale_offset", json::array(), i4), "configuration must be a JSON object");
  // A chunk whose bytes do not match the shape (truncated data).
  ChunkData in = new_codec_cells(std::vector<std::int32_t>{1, 2, 3}), out;
  EXPECT_CODEC_ERROR(make_array_codec("scale_offset", {{"offset", 1}}, i4)->decode(in, i4, out), "scale_offset");
}

// ---- cast_value -----------------------------------------------------------------------------

// numpy-style references for each rounding mode, written out (np.rint, np.trunc, np.ceil,
// np.floor, and half away from zero).
TEST(CodecCastValue, EveryRoundingModeToIntegers) {
  const std::vector<double> x = {2.5, -2.5, 1.2, -1.2, 0.5, -0.5, 3.5, -1.7, 7.0};
  const std::map<std::string, std::vector<std::int8_t>> want = {
      {"nearest-even", {2, -2, 1, -1, 0, 0, 4, -2, 7}},
      {"towards-zero", {2, -2, 1, -1, 0, 0, 3, -1, 7}},
      {"towards-positive", {3, -2, 2, -1, 1, 0, 4, -1, 7}},
      {"towards-negative", {2, -3, 1, -2, 0, -1, 3, -2, 7}},
      {"nearest-away", {3, -3, 1, -1, 1, -1, 4, -2, 7}},
  };
  const auto spec = spec_of(DataType::float_(8), {x.size()});
  for (const auto& [mode, expected] : want) {
    SCOPED_TRACE(mode);
    const json config = {{"data_type", "int8"}, {"rounding", mode}};
    EXPECT_EQ(new_codec_values<std::int8_t>(new_codec_encode("cast_value", config, spec, x)), expected);
  }
  // The default is nearest-even.
  EXPECT_EQ(new_codec_values<std::int8_t>(new_codec_encode("cast_value", {{"data_type", "int8"}}, spec, x)),
            want.at("nearest-even"));
}

TEST(CodecCastValue, EveryRoundingModeBetweenFloats) {
  // 1 + 2^-24 lies halfway between the float32 values 1 and 1 + 2^-23; 1 + 2^-25 below half.
  const double tie = 1.0 + std::ldexp(1.0, -24), low = 1.0 + std::ldexp(1.0, -25);
  const float one = 1.0f, up = 1.0f + std::ldexp(1.0f, -23);
  const std::vector<double> x = {tie, -tie, low, -low};
  const std::map<std::string, std::vector<float>> want = {
      {"nearest-even", {one, -one, one, -one}},
      {"towards-zero", {one, -one, one, -one}},
      {"towards-positive", {up, -one, up, -one}},
      {"towards-negative", {one, -up, one, -up}},
      {"nearest-away", {up, -up, one, -one}},
  };
  for (const auto& [mode, expected] : want) {
    SCOPED_TRACE(mode);
    EXPECT_EQ(new_codec_values<float>(new_codec_encode("cast_value", {{"data_type", "float32"}, {"rounding", mode}},
                                                       spec_of(DataType::float_(8), {4}), x)),
              expected);
  }
  // Integers past float precision: 2^24 + 1 to float32, 2^53 + 1 to float64.
  const std::vector<std::int64_t> big = {(1LL << 24) + 1, -((1LL << 24) + 1), (1LL << 53) + 1};
  const auto i8 = spec_of(DataType::int_(8), {3});
  EXPECT_EQ(new_codec_values<float>(new_codec_encode("cast_value", {{"data_type", "float32"}}, spec_of(DataType::int_(8), {2}),
                                                     std::vector<std::int64_t>{big[0], big[1]})),
            (std::vector<float>{16777216.0f, -16777216.0f}));
  EXPECT_EQ(new_codec_values<float>(new_codec_encode("cast_value", {{"data_type", "float32"}, {"rounding", "towards-positive"}},
                                                     spec_of(DataType::int_(8), {2}), std::vector<std::int64_t>{big[0], big[1]})),
            (std::vector<float>{16777218.0f, -16777216.0f}));
  EXPECT_EQ(new_codec_values<double>(new_codec_encode("cast_value", {{"data_type", "float64"}, {"rounding", "nearest-away"}}, i8, big)),
            (std::vector<double>{16777217.0, -16777217.0, 9007199254740994.0}));
  // uint64 max rounds up to 2^64 in float64 (nearest-even), down with towards-zero.
  const auto u8 = spec_of(DataType::uint(8), {1});
  const std::vector<std::uint64_t> top = {std::numeric_limits<std::uint64_t>::max()};
  EXPECT_EQ(new_codec_values<double>(new_codec_encode("cast_value", {{"data_type", "float64"}}, u8, top)),
            (std::vector<double>{18446744073709551616.0}));
  EXPECT_EQ(new_codec_values<double>(new_codec_encode("cast_value", {{"data_type", "float64"}, {"rounding", "towards-zero"}}, u8, top)),
            (std::vector<double>{18446744073709549568.0}));
}

TEST(CodecCastValue, OutOfRangeModes) {
  // The registry's examples: 128.0 to int8, and int16 wrapping.
  const auto f8 = spec_of(DataType::float_(8), {1});
  const std::vector<double> v128 = {128.0};
  EXPECT_CODEC_ERROR(new_codec_encode("cast_value", {{"data_type", "int8"}}, f8, v128),
                     "cannot cast float64 value 128.0 to int8");
  EXPECT_EQ(new_codec_values<std::int8_t>(new_codec_encode("cast_value", {{"data_type", "int8"}, {"out_of_range", "clamp"}}, f8, v128)),
            (std::vector<std::int8_t>{127}));
  EXPECT_EQ(new_codec_values<std::int8_t>(new_codec_encode("cast_value", {{"data_type", "int8"}, {"out_of_range", "wrap"}}, f8, v128)),
            (std::vector<std::int8_t>{-128}));
  const auto i4 = spec_of(DataType::int_(4), {3});
  EXPECT_EQ(new_codec_values<std::int16_t>(new_codec_encode("cast_value", {{"data_type", "int16"}, {"out_of_range", "wrap"}}, i4,
                                                            std::vector<std::int32_t>{32768, 32769, -32769})),
            (std::vector<std::int16_t>{-32768, -32767, 32767}));
  EXPECT_EQ(new_codec_values<std::uint8_t>(new_codec_encode("cast_value", {{"data_type", "uint8"}, {"out_of_range", "clamp"}}, i4,
                                                            std::vector<std::int32_t>{-5, 300, 7})),
            (std::vector<std::uint8_t>{0, 255, 7}));
  // Rounding applies before the range: 255.6 is 256 after nearest-even, then wraps to 0.
  EXPECT_EQ(new_codec_values<std::uint8_t>(new_codec_encode("cast_value", {{"data_type", "uint8"}, {"out_of_range", "wrap"}},
                                                            spec_of(DataType::float_(8), {3}), std::vector<double>{255.6, -1.0, 1e20})),
            (std::vector<std::uint8_t>{0, 255, static_cast<std::uint8_t>(std::fmod(1e20, 256.0))}));
  // Float targets: past the finite range, clamp gives infinity; without a mode it is an error.
  const auto f8x3 = spec_of(DataType::float_(8), {3});
  const std::vector<double> wide = {65519.0, 65520.0, -1e6};
  EXPECT_CODEC_ERROR(new_codec_encode("cast_value", {{"data_type", "float16"}}, f8x3, wide), "out of the range of float16");
  const auto h = new_codec_values<float16>(new_codec_encode("cast_value", {{"data_type", "float16"}, {"out_of_range", "clamp"}}, f8x3, wide));
  EXPECT_EQ(half_to_float(h[0]), 65504.0f);
  EXPECT_EQ(half_to_float(h[1]), std::numeric_limits<float>::infinity());
  EXPECT_EQ(half_to_float(h[2]), -std::numeric_limits<float>::infinity());
  // Rounding comes first: halfway between the largest float32 and 2^128, towards-zero gives the
  // largest float32, nearest-even 2^128, which is out of range.
  const std::vector<double> past = {static_cast<double>(std::numeric_limits<float>::max()) + std::ldexp(1.0, 103)};
  const auto f8x1 = spec_of(DataType::float_(8), {1});
  EXPECT_EQ(new_codec_values<float>(new_codec_encode("cast_value", {{"data_type", "float32"}, {"rounding", "towards-zero"}}, f8x1, past)),
            (std::vector<float>{std::numeric_limits<float>::max()}));
  EXPECT_CODEC_ERROR(new_codec_encode("cast_value", {{"data_type", "float32"}}, f8x1, past), "out of the range of float32");
}

TEST(CodecCastValue, SpecialValuesAndScalarMap) {
  const auto f8 = spec_of(DataType::float_(8), {4});
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  // NaN, infinities and signed zero between float types.
  const auto f = new_codec_values<float>(new_codec_encode("cast_value", {{"data_type", "float32"}}, f8, std::vector<double>{nan, inf, -inf, -0.0}));
  EXPECT_TRUE(std::isnan(f[0]));
  EXPECT_EQ(f[1], std::numeric_limits<float>::infinity());
  EXPECT_EQ(f[2], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(f[3] == 0.0f && std::signbit(f[3]));
  // To an integer: an error naming the value, even with clamp, unless scalar_map maps it.
  EXPECT_CODEC_ERROR(new_codec_encode("cast_value", {{"data_type", "uint8"}, {"out_of_range", "clamp"}}, spec_of(DataType::float_(8), {1}),
                                      std::vector<double>{nan}),
                     "value NaN to uint8");
  EXPECT_CODEC_ERROR(new_codec_encode("cast_value", {{"data_type", "int32"}}, spec_of(DataType::float_(8), {1}), std::vector<double>{-inf}),
                     "-Infinity");
  // The registry's NumPy-compatibility example.
  const json numpy_like = json::parse(R"({"data_type": "uint8", "rounding": "towards-zero", "out_of_range": "wrap",
      "scalar_map": {"encode": [["NaN", 0], ["+Infinity", 0], ["-Infinity", 0]]}})");
  // ("+Infinity", as the example spells it, is read as "Infinity".)
  EXPECT_EQ(new_codec_values<std::uint8_t>(new_codec_encode("cast_value", numpy_like, f8, std::vector<double>{nan, inf, -inf, 258.9})),
            (std::vector<std::uint8_t>{0, 0, 0, 2}));
  json unknown = numpy_like;
  unknown["scalar_map"]["encode"] = json::parse(R"([["Inf", 0]])");
  EXPECT_CODEC_ERROR(make_array_codec("cast_value", unknown, f8), "'scalar_map.encode'");
  // Decode direction: 0 back to NaN; the first of repeated keys wins.
  const json with_decode = json::parse(R"({"data_type": "uint8", "scalar_map": {"encode": [["NaN", 0]], "decode": [[0, "NaN"], [0, 5]]}})");
  const auto back = new_codec_decode<double>("cast_value", with_decode, spec_of(DataType::float_(8), {3}), std::vector<std::uint8_t>{0, 1, 255});
  EXPECT_TRUE(std::isnan(back[0]));
  EXPECT_EQ(back[1], 1.0);
  EXPECT_EQ(back[2], 255.0);
}

TEST(CodecCastValue, ScaleOffsetThenCastValueAsTheRegistryExample) {
  // float64 [0, 2540] with NaN fill stored as uint8: scale_offset(offset -10, scale 0.1), then
  // cast_value to uint8 mapping NaN <-> 0.
  const ChunkSpec spec = spec_of(DataType::float_(8), {5});
  CodecPipeline p;
  p.array_codecs.push_back(make_array_codec("scale_offset", {{"offset", -10}, {"scale", 0.1}}, spec));
  p.array_codecs.push_back(make_array_codec(
      "cast_value",
      json::parse(R"({"data_type": "uint8", "rounding": "nearest-even",
                      "scalar_map": {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}})"),
      spec));
  p.array_to_bytes = make_endian_codec(ByteOrder::Little);
  const std::vector<double> values = {std::numeric_limits<double>::quiet_NaN(), 0.0, 100.0, 1234.0, 2540.0};
  const Buffer stored = p.encode(new_codec_cells(values), spec);
  std::vector<std::uint8_t> codes;
  for (const double v : values) codes.push_back(std::isnan(v) ? 0 : static_cast<std::uint8_t>(std::nearbyint((v - -10.0) * 0.1)));
  EXPECT_EQ(from_bytes<std::uint8_t>(stored.view()), codes);
  std::vector<double> decoded(values.size());
  p.decode_into(stored.view(), spec, {reinterpret_cast<std::byte*>(decoded.data()), decoded.size() * 8});
  EXPECT_TRUE(std::isnan(decoded[0]));
  for (std::size_t i = 1; i < values.size(); ++i) EXPECT_EQ(decoded[i], static_cast<double>(codes[i]) / 0.1 + -10.0) << i;
}

TEST(CodecCastValue, WideningDecodesAreExactConversions) {
  // Stored narrow, decoded wide (the common case): every value converts exactly.
  std::vector<std::int16_t> i2(65536);
  std::iota(i2.begin(), i2.end(), std::int16_t{-32768});
  const auto f4 = new_codec_decode<float>("cast_value", {{"data_type", "int16"}}, spec_of(DataType::float_(4), {65536}), i2);
  for (std::size_t i = 0; i < i2.size(); ++i) ASSERT_EQ(f4[i], static_cast<float>(i2[i])) << i;
  std::vector<float16> h(65536);
  for (std::size_t i = 0; i < h.size(); ++i) h[i].bits = static_cast<std::uint16_t>(i);
  const auto f8 = new_codec_decode<double>("cast_value", {{"data_type", "float16"}}, spec_of(DataType::float_(8), {65536}), h);
  for (std::size_t i = 0; i < h.size(); ++i) {
    const double want = half_to_float(h[i]);
    ASSERT_TRUE(std::isnan(want) ? std::isnan(f8[i]) : same_bits(f8[i], want)) << i;
  }
  EXPECT_EQ((new_codec_decode<std::int64_t>("cast_value", {{"data_type", "uint32"}}, spec_of(DataType::int_(8), {2}),
                                            std::vector<std::uint32_t>{0, 4294967295u})),
            (std::vector<std::int64_t>{0, 4294967295LL}));
}

TEST(CodecCastValue, BadConfigurationAndData) {
  const auto f8 = spec_of(DataType::float_(8), {2});
  EXPECT_CODEC_ERROR(make_array_codec("cast_value", {{"data_type", "int8"}, {"rounding", "sideways"}}, f8), "unknown mode 'sideways'");
  EXPECT_CODEC_ERROR(make_array_codec("cast_value", {{"data_type", "int8"}, {"rounding", "sideways"}}, f8), "'rounding'");
  EXPECT_CODEC_ERROR(make_array_codec("cast_value", {{"data_type", "int8"}, {"out_of_range", "saturate"}}, f8),
                     "unknown mode 'saturate'");
  EXPECT_CODEC_ERROR(make_array_codec("cast_value", {{"data_type", "float32"}, {"out_of_range", "wrap"}}, f8), "'wrap' needs an integer");
  EXPECT_CODEC_ERROR(make_array_codec("cast_value", json::object(), f8), "'data_type': missing");
  EXPECT_CODEC_ERROR(make_array_codec("cast_value", {{"data_type", "string"}}, f8), "'data_type'");
  EXPECT_CODEC_ERROR(make_array_codec("cast_value", {{"data_type", "bool"}}, f8), "'data_type'");
  EXPECT_CODEC_ERROR(make_array_codec("cast_value", {{"data_type", "uint8"}}, spec_of(DataType::boolean(), {2})),
                     "unsupported array data type bool");
  EXPECT_CODEC_ERROR(make_array_codec("cast_value", {{"data_type", "uint8"}, {"scale", 2}}, f8), "'scale'");
  const auto with_map = [](const char* map) {
    return json{{"data_type", "uint8"}, {"scalar_map", json::parse(map)}};
  };
  EXPECT_CODEC_ERROR(make_array_codec("cast_value", with_map(R"({"encode": [[1]]})"), f8), "pairs");
  EXPECT_CODEC_ERROR(make_array_codec("cast_value", with_map(R"({"encode": [[1.0, 300]]})"), f8), "out of the data type's range");
  EXPECT_CODEC_ERROR(make_array_codec("cast_value", with_map(R"({"both": []})"), f8), "unknown key 'both'");
  EXPECT_CODEC_ERROR(make_array_codec("cast_value", with_map(R"({"decode": [[0.5, 1]]})"), f8), "expected an integer");
  // Encoded bytes that do not fill the chunk (truncated data).
  ChunkData in = new_codec_cells(std::vector<std::uint8_t>{1}), out;
  EXPECT_CODEC_ERROR(make_array_codec("cast_value", {{"data_type", "uint8"}}, f8)->decode(in, f8, out), "expected 2");
}

// ---- bitround -------------------------------------------------------------------------------

TEST(CodecBitround, EncodeRoundsDecodeIsIdentity) {
  // zarrs' test vectors (keepbits 3).
  const auto f4 = spec_of(DataType::float_(4), {4});
  EXPECT_EQ(new_codec_values<float>(new_codec_encode("bitround", {{"keepbits", 3}}, f4,
                                                     std::vector<float>{0.0f, 1.23456789f, -8.3587192834f, 98765.43210f})),
            (std::vector<float>{0.0f, 1.25f, -8.0f, 98304.0f}));
  EXPECT_EQ(new_codec_values<std::uint32_t>(new_codec_encode("bitround", {{"keepbits", 3}}, spec_of(DataType::uint(4), {7}),
                                                             std::vector<std::uint32_t>{0, 1024, 1280, 1664, 1685, 123145182, 4294967295u})),
            (std::vector<std::uint32_t>{0, 1024, 1280, 1536, 1792, 117440512, 3758096384u}));
  EXPECT_EQ(new_codec_values<std::uint8_t>(new_codec_encode("bitround", {{"keepbits", 3}}, spec_of(DataType::uint(1), {9}),
                                                            std::vector<std::uint8_t>{0, 3, 7, 15, 17, 54, 89, 128, 255})),
            (std::vector<std::uint8_t>{0, 3, 7, 16, 16, 56, 96, 128, 224}));
  // numcodecs.BitRound's arithmetic on the bits, written out for float64 keepbits 10: add half
  // a quantum minus one plus the kept lowest bit, then mask.
  const std::vector<double> d = {3.141592653589793, -2.718281828459045, 1e-300, 6.02214076e23};
  const auto got = new_codec_values<double>(new_codec_encode("numcodecs.bitround", {{"keepbits", 10}}, spec_of(DataType::float_(8), {4}), d));
  for (std::size_t i = 0; i < d.size(); ++i) {
    const auto b = std::bit_cast<std::uint64_t>(d[i]);
    const unsigned mask_bits = 52 - 10;
    const std::uint64_t r = (b + ((b >> mask_bits) & 1) + ((std::uint64_t{1} << (mask_bits - 1)) - 1)) & (~std::uint64_t{0} << mask_bits);
    EXPECT_EQ(std::bit_cast<std::uint64_t>(got[i]), r) << i;
  }
  // Decoding leaves any bytes as they are.
  const std::vector<double> raw = {1.0000001, -3.3};
  EXPECT_EQ((new_codec_decode<double>("bitround", {{"keepbits", 2}}, spec_of(DataType::float_(8), {2}), raw)), raw);
  // keepbits at least the mantissa: unchanged.
  EXPECT_EQ(new_codec_values<float>(new_codec_encode("bitround", {{"keepbits", 23}}, spec_of(DataType::float_(4), {1}), std::vector<float>{1.2345678f})),
            (std::vector<float>{1.2345678f}));
}

TEST(CodecBitround, BadConfiguration) {
  const auto f4 = spec_of(DataType::float_(4), {1});
  EXPECT_CODEC_ERROR(make_array_codec("bitround", json::object(), f4), "'keepbits': missing");
  EXPECT_CODEC_ERROR(make_array_codec("bitround", {{"keepbits", -1}}, f4), "'keepbits'");
  EXPECT_CODEC_ERROR(make_array_codec("bitround", {{"keepbits", "ten"}}, f4), "'keepbits'");
  EXPECT_CODEC_ERROR(make_array_codec("bitround", {{"keepbits", 3}, {"dtype", "<f4"}}, f4), "'dtype'");
  EXPECT_CODEC_ERROR(make_array_codec("bitround", {{"keepbits", 3}}, spec_of(DataType::boolean(), {1})), "unsupported data type bool");
  ChunkData in = new_codec_cells(std::vector<float>{1, 2}), out;
  EXPECT_CODEC_ERROR(make_array_codec("bitround", {{"keepbits", 3}}, f4)->decode(in, f4, out), "does not match");
}

// ---- reshape --------------------------------------------------------------------------------

std::vector<std::uint64_t> reshaped(const json& shape, std::vector<std::uint64_t> in) {
  return make_array_codec("reshape", {{"shape", shape}}, spec_of(DataType::int_(4), in))
      ->encoded_spec(spec_of(DataType::int_(4), in))
      .shape;
}

TEST(CodecReshape, ShapesFromSizesAxesAndMinusOne) {
  // The registry's example.
  EXPECT_EQ(reshaped(json::parse("[[0, 1], [2], 3]"), {100, 50, 64, 3}), (std::vector<std::uint64_t>{5000, 64, 3}));
  EXPECT_EQ(reshaped(json::parse("[-1]"), {2, 3, 4}), (std::vector<std::uint64_t>{24}));
  EXPECT_EQ(reshaped(json::parse("[4, -1]"), {2, 3, 4}), (std::vector<std::uint64_t>{4, 6}));
  EXPECT_EQ(reshaped(json::parse("[[0], 12]"), {2, 3, 4}), (std::vector<std::uint64_t>{2, 12}));
  EXPECT_EQ(reshaped(json::parse("[[0, 1], 10, [3, 4]]"), {2, 5, 10, 3, 7}), (std::vector<std::uint64_t>{10, 10, 21}));
  EXPECT_EQ(reshaped(json::parse("[1, 6, 1, 4]"), {2, 3, 4}), (std::vector<std::uint64_t>{1, 6, 1, 4}));
}

TEST(CodecReshape, DataKeepsItsOrderThroughAPipeline) {
  // reshape then transpose: the stored bytes are the transpose of the C-order reshaped data.
  const ChunkSpec spec = spec_of(DataType::int_(4), {2, 3, 2});
  CodecPipeline p;
  p.array_codecs.push_back(make_array_codec("reshape", {{"shape", json::parse("[[0, 1], 2]")}}, spec));
  p.array_codecs.push_back(make_array_codec("transpose", {{"order", {1, 0}}}, p.array_codecs[0]->encoded_spec(spec)));
  p.array_to_bytes = make_endian_codec(ByteOrder::Little);
  std::vector<std::int32_t> v(12);
  std::iota(v.begin(), v.end(), 0);
  const Buffer stored = p.encode(new_codec_cells(v), spec);
  std::vector<std::int32_t> want;  // 6x2 C order, transposed to 2x6
  for (int c = 0; c < 2; ++c)
    for (int r = 0; r < 6; ++r) want.push_back(v[r * 2 + c]);
  EXPECT_EQ(from_bytes<std::int32_t>(stored.view()), want);
  ChunkData out;
  p.decode(stored.view(), spec, out);
  EXPECT_EQ(new_codec_values<std::int32_t>(out), v);
  // Variable-length strings pass through too.
  const ChunkSpec s = spec_of(DataType::string(), {2, 2});
  ChunkData strings, enc, dec;
  strings.strings = {"a", "bb", "", "d"};
  const auto r = make_array_codec("reshape", {{"shape", json::array({-1})}}, s);
  r->encode(strings, s, enc);
  r->decode(enc, s, dec);
  EXPECT_EQ(dec.strings, strings.strings);
}

TEST(CodecReshape, BadShapes) {
  const auto spec = spec_of(DataType::int_(4), {2, 3, 4});
  const auto bad = [&](const char* shape, const char* needle) {
    SCOPED_TRACE(shape);
    EXPECT_CODEC_ERROR(make_array_codec("reshape", {{"shape", json::parse(shape)}}, spec), needle);
    EXPECT_CODEC_ERROR(make_array_codec("reshape", {{"shape", json::parse(shape)}}, spec), "'shape'");
  };
  bad("[5]", "makes 5 elements, the chunk has 24");
  bad("[-1, -1]", "only once");
  bad("[0, 24]", "positive or -1");
  bad("[-1, 5]", "no size for -1");
  bad("[[1], [0], 4]", "strictly increasing");
  bad("[[1, 0], 4]", "strictly increasing");
  bad("[[3], 24]", "not an axis");
  bad("[[1, 2], 2]", "does not line up");
  bad("[\"x\"]", "entries must be");
  bad("7", "expected a list");
  EXPECT_CODEC_ERROR(make_array_codec("reshape", json::object(), spec), "'shape': missing");
  EXPECT_CODEC_ERROR(make_array_codec("reshape", {{"shape", json::array({24})}, {"order", "C"}}, spec), "'order'");
  ChunkData in = new_codec_cells(std::vector<std::int32_t>{1}), out;
  EXPECT_CODEC_ERROR(make_array_codec("reshape", {{"shape", json::array({-1})}}, spec)->decode(in, spec, out), "does not match");
}

// ---- packbits (v3) --------------------------------------------------------------------------

std::vector<std::byte> packbits_encode(const json& config, const ChunkSpec& spec, const ChunkData& data) {
  const Buffer b = make_array_to_bytes_codec("packbits", config, spec)->encode(data, spec);
  return {b.view().begin(), b.view().end()};
}

template <class T>
std::vector<T> packbits_decode(const json& config, const ChunkSpec& spec, const std::vector<std::byte>& enc) {
  ChunkData out;
  make_array_to_bytes_codec("packbits", config, spec)->decode(view(enc), spec, out);
  return new_codec_values<T>(out);
}

TEST(CodecPackBits, BoolsLeastSignificantBitFirstWithEachPadding) {
  // Elements 0, 3 and 4 set: bits 0, 3, 4 of the first byte (0x19); 3 padding bits.
  const auto spec = spec_of(DataType::boolean(), {5});
  const auto data = new_codec_cells(std::vector<std::uint8_t>{1, 0, 0, 1, 1});
  EXPECT_EQ(packbits_encode(json::object(), spec, data), from_hex("19"));
  EXPECT_EQ(packbits_encode({{"padding_encoding", "first_byte"}}, spec, data), from_hex("0319"));
  EXPECT_EQ(packbits_encode({{"padding_encoding", "last_byte"}}, spec, data), from_hex("1903"));
  // The schema's spellings mean the same.
  EXPECT_EQ(packbits_encode({{"padding_encoding", "start_byte"}}, spec, data), from_hex("0319"));
  EXPECT_EQ(packbits_encode({{"padding_encoding", "end_byte"}}, spec, data), from_hex("1903"));
  for (const char* p : {"none", "first_byte", "last_byte", "start_byte", "end_byte"}) {
    SCOPED_TRACE(p);
    const json config = {{"padding_encoding", p}};
    EXPECT_EQ(packbits_decode<std::uint8_t>(config, spec, packbits_encode(config, spec, data)), (std::vector<std::uint8_t>{1, 0, 0, 1, 1}));
  }
  // 17 bools: three bytes, 7 padding bits.
  std::vector<std::uint8_t> many(17, 1);
  EXPECT_EQ(packbits_encode({{"padding_encoding", "first_byte"}}, spec_of(DataType::boolean(), {17}), new_codec_cells(many)),
            from_hex("07ffff01"));
}

TEST(CodecPackBits, BitRangesAndSignExtension) {
  // uint8 bits 0..3: two nibbles per byte, the first element in the low nibble.
  EXPECT_EQ(packbits_encode({{"first_bit", 0}, {"last_bit", 3}}, spec_of(DataType::uint(1), {4}),
                            new_codec_cells(std::vector<std::uint8_t>{1, 2, 15, 4})),
            from_hex("214f"));
  // int8 in 4 bits: negative values come back sign-extended.
  const auto i1 = spec_of(DataType::int_(1), {4});
  const json nib = {{"last_bit", 3}};
  const auto enc = packbits_encode(nib, i1, new_codec_cells(std::vector<std::int8_t>{-1, 7, -8, 3}));
  EXPECT_EQ(enc, from_hex("7f38"));
  EXPECT_EQ(packbits_decode<std::int8_t>(nib, i1, enc), (std::vector<std::int8_t>{-1, 7, -8, 3}));
  // int16 bits 4..11 (schema spelling): shifted back to bit 4, sign-extended from bit 11.
  const auto i2 = spec_of(DataType::int_(2), {2});
  const json mid = {{"start_bit", 4}, {"end_bit", 11}};
  const std::vector<std::int16_t> v16 = {0x07B0, static_cast<std::int16_t>(0xF850)};
  const auto e2 = packbits_encode(mid, i2, new_codec_cells(v16));
  EXPECT_EQ(e2, from_hex("7b85"));
  EXPECT_EQ(packbits_decode<std::int16_t>(mid, i2, e2), v16);
  // Bits outside the field are lost: 0x0AB0 has bit 11 set, so it comes back sign-extended.
  EXPECT_EQ(packbits_decode<std::int16_t>(mid, spec_of(DataType::int_(2), {1}), from_hex("ab")),
            (std::vector<std::int16_t>{static_cast<std::int16_t>(0xFAB0)}));
  // 12-bit unsigned fields across byte boundaries.
  const auto u2 = spec_of(DataType::uint(2), {3});
  const json twelve = {{"last_bit", 11}, {"padding_encoding", "last_byte"}};
  const std::vector<std::uint16_t> v12 = {0xABC, 0x123, 0xFFF};
  const auto e12 = packbits_encode(twelve, u2, new_codec_cells(v12));
  EXPECT_EQ(e12, from_hex("bc3a12ff0f04"));
  EXPECT_EQ(packbits_decode<std::uint16_t>(twelve, u2, e12), v12);
  // Whole little-endian words: the `bytes` codec's layout.
  const std::vector<float> f = {1.5f, -2.0f};
  EXPECT_EQ(packbits_encode(json::object(), spec_of(DataType::float_(4), {2}), new_codec_cells(f)), as_bytes(f));
  const std::vector<float> c = {1.0f, 2.0f, -3.0f, 4.0f};  // two complex64
  EXPECT_EQ(packbits_decode<float>(json::object(), spec_of(DataType::complex(8), {2}), as_bytes(c)), c);
}

TEST(CodecPackBits, BadConfigurationAndData) {
  const auto spec = spec_of(DataType::boolean(), {5});
  const auto u1 = spec_of(DataType::uint(1), {2});
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("packbits", {{"padding_encoding", "middle"}}, spec), "'padding_encoding'");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("packbits", {{"first_bit", 5}, {"last_bit", 2}}, u1), "less than first_bit");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("packbits", {{"last_bit", 8}}, u1), "'last_bit'");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("packbits", {{"first_bit", 1}, {"start_bit", 1}}, u1), "given twice");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("packbits", {{"bits", 3}}, u1), "'bits'");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("packbits", json::object(), spec_of(DataType::datetime("s"), {1})),
                     "unsupported data type");
  const json first = {{"padding_encoding", "first_byte"}};
  EXPECT_CODEC_ERROR(packbits_decode<std::uint8_t>(first, spec, from_hex("0519")), "padding byte says 5");
  EXPECT_CODEC_ERROR(packbits_decode<std::uint8_t>(first, spec, from_hex("03")), "chunk holds 1 bytes, expected 2");
  EXPECT_CODEC_ERROR(packbits_decode<std::uint8_t>(json::object(), spec, from_hex("1919")), "expected 1");
  EXPECT_CODEC_ERROR(packbits_decode<std::uint8_t>(json::object(), spec, {}), "chunk holds 0 bytes");
  // The numcodecs filter under its v2 id is still the other codec (most significant bit first).
  EXPECT_EQ(decode_exact(*make_v2_bytes_codec({{"id", "packbits"}}, DataType::boolean()), view(from_hex("0398")), 5),
            as_bytes(std::vector<std::uint8_t>{1, 0, 0, 1, 1}));
}

// ---- optional (conditional) ---------------------------------------------------------------

std::vector<std::byte> optional_decode(const json& config, const std::vector<std::byte>& enc, std::size_t size) {
  return decode_exact(*make_bytes_codec("optional", config, spec_of(DataType::int_(4), {size / 4})), view(enc), size);
}

TEST(CodecOptional, TheHeaderSaysWhichCodecsToUndo) {
  // codecs [shuffle(4), zstd]: each chunk may have had none, either or both applied.
  const json config = json::parse(R"({"codecs": [{"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}},
                                                 {"name": "zstd", "configuration": {"level": 1}}]})");
  std::vector<std::int32_t> v(64);
  std::iota(v.begin(), v.end(), -20);
  const auto raw = as_bytes(v);
  const ChunkSpec spec = spec_of(DataType::int_(4), {64});
  const auto shuffle = make_bytes_codec("numcodecs.shuffle", {{"elementsize", 4}}, spec);
  const auto zstd = make_bytes_codec("zstd", {{"level", 1}}, spec);
  const auto with_header = [](std::uint8_t mask, const Buffer& body) {
    std::vector<std::byte> out{std::byte{mask}};
    out.insert(out.end(), body.view().begin(), body.view().end());
    return out;
  };
  const Buffer shuffled = shuffle->encode(view(raw));
  EXPECT_EQ(optional_decode(config, with_header(0, Buffer::copy_of(view(raw))), raw.size()), raw);
  EXPECT_EQ(optional_decode(config, with_header(1, shuffled), raw.size()), raw);
  EXPECT_EQ(optional_decode(config, with_header(2, zstd->encode(view(raw))), raw.size()), raw);
  EXPECT_EQ(optional_decode(config, with_header(3, zstd->encode(shuffled.view())), raw.size()), raw);
  // Also as `conditional` (its name in the registry) and with a wider header.
  std::vector<std::byte> wide = {std::byte{2}, std::byte{0}};
  const Buffer z = zstd->encode(view(raw));
  wide.insert(wide.end(), z.view().begin(), z.view().end());
  json wider = config;
  wider["header_bits"] = 16;
  EXPECT_EQ(decode_exact(*make_bytes_codec("conditional", wider, spec), view(wide), raw.size()), raw);
  // Encoding applies no codec (the proposal's default mask): a zero header, then the bytes.
  const Buffer enc = make_bytes_codec("optional", config, spec)->encode(view(raw));
  EXPECT_EQ(static_cast<unsigned>(enc.view()[0]), 0u);
  EXPECT_EQ(optional_decode(config, {enc.view().begin(), enc.view().end()}, raw.size()), raw);
}

TEST(CodecOptional, BadConfigurationAndData) {
  const ChunkSpec spec = spec_of(DataType::int_(4), {4});
  const json one = json::parse(R"({"codecs": [{"name": "zstd"}]})");
  EXPECT_CODEC_ERROR(make_bytes_codec("optional", json::object(), spec), "'codecs': missing");
  EXPECT_CODEC_ERROR(make_bytes_codec("optional", json::parse(R"({"codecs": [{"name": "bytes"}]})"), spec),
                     "not a bytes->bytes codec");
  EXPECT_CODEC_ERROR(make_bytes_codec("optional", json::parse(R"({"codecs": [{"name": "nope"}]})"), spec), "'codecs'");
  EXPECT_CODEC_ERROR(make_bytes_codec("optional", json::parse(R"({"codecs": [{"name": "zstd"}], "header_bits": 4})"), spec),
                     "'header_bits'");
  EXPECT_CODEC_ERROR(make_bytes_codec("optional", json::parse(R"({"codecs": [], "mask": 1})"), spec), "'mask'");
  // A bit past the codec list, a missing header, a body the bit's codec cannot decode.
  EXPECT_CODEC_ERROR(optional_decode(one, from_hex("0200000000"), 4), "sets bit 1 but there are only 1 codecs");
  EXPECT_CODEC_ERROR(optional_decode(json::parse(R"({"codecs": [{"name": "zstd"}], "header_bits": 16})"), from_hex("00"), 4),
                     "truncated chunk");
  EXPECT_THROW(optional_decode(one, from_hex("0100000000"), 4), CodecError);
  EXPECT_CODEC_ERROR(optional_decode(one, from_hex("00000000"), 4), "expected 4");
}

// ---- zfp ------------------------------------------------------------------------------------

#ifdef LAZYCUBE_HAVE_ZFP

std::vector<double> zfp_test_field(std::size_t n) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::sin(0.3 * static_cast<double>(i)) * 100 + 0.01 * static_cast<double>(i % 7);
  return v;
}

// libzfp's own compression of a field of `shape` (C order) of `type`, `set` choosing the mode.
template <class T, class Set>
std::vector<std::byte> zfp_reference(std::vector<T> data, zfp_type type, const std::vector<std::size_t>& shape, Set&& set) {
  zfp_field* field = nullptr;
  if (shape.size() == 1) field = zfp_field_1d(data.data(), type, shape[0]);
  if (shape.size() == 2) field = zfp_field_2d(data.data(), type, shape[1], shape[0]);
  if (shape.size() == 3) field = zfp_field_3d(data.data(), type, shape[2], shape[1], shape[0]);
  zfp_stream* zfp = zfp_stream_open(nullptr);
  set(zfp);
  std::vector<std::byte> buffer(zfp_stream_maximum_size(zfp, field));
  bitstream* s = stream_open(buffer.data(), buffer.size());
  zfp_stream_set_bit_stream(zfp, s);
  zfp_stream_rewind(zfp);
  buffer.resize(zfp_compress(zfp, field));
  stream_close(s);
  zfp_stream_close(zfp);
  zfp_field_free(field);
  return buffer;
}

void zfp_reversible(zfp_stream* z) { zfp_stream_set_reversible(z); }

std::vector<std::byte> zfp_encode(const json& config, const ChunkSpec& spec, const ChunkData& data) {
  const Buffer b = make_array_to_bytes_codec("zfp", config, spec)->encode(data, spec);
  return {b.view().begin(), b.view().end()};
}

template <class T>
std::vector<T> zfp_decode(const json& config, const ChunkSpec& spec, const std::vector<std::byte>& enc) {
  ChunkData out;
  make_array_to_bytes_codec("zfp", config, spec)->decode(view(enc), spec, out);
  return new_codec_values<T>(out);
}

TEST(CodecZfp, EveryModeMatchesLibzfp) {
  const auto v = zfp_test_field(4 * 5 * 6);
  const auto spec = spec_of(DataType::float_(8), {4, 5, 6});
  struct Case {
    json config;
    std::function<void(zfp_stream*)> set;
    double tolerance;
  };
  const std::vector<Case> cases = {
      {{{"mode", "reversible"}}, [](zfp_stream* z) { zfp_stream_set_reversible(z); }, 0.0},
      {{{"mode", "fixed_rate"}, {"rate", 16}}, [](zfp_stream* z) { zfp_stream_set_rate(z, 16, zfp_type_double, 3, zfp_false); }, 1.0},
      {{{"mode", "fixed_precision"}, {"precision", 24}}, [](zfp_stream* z) { zfp_stream_set_precision(z, 24); }, 1e-2},
      {{{"mode", "fixed_accuracy"}, {"tolerance", 1e-4}}, [](zfp_stream* z) { zfp_stream_set_accuracy(z, 1e-4); }, 1e-4},
      {{{"mode", "expert"}, {"minbits", 0}, {"maxbits", 4096}, {"maxprec", 40}, {"minexp", -30}},
       [](zfp_stream* z) { zfp_stream_set_params(z, 0, 4096, 40, -30); }, 1e-6},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.config.dump());
    const auto ref = zfp_reference(v, zfp_type_double, {4, 5, 6}, c.set);
    EXPECT_EQ(zfp_encode(c.config, spec, new_codec_cells(v)), ref);
    const auto got = zfp_decode<double>(c.config, spec, ref);
    ASSERT_EQ(got.size(), v.size());
    for (std::size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(got[i], v[i], c.tolerance) << i;
  }
  // 1-d and 2-d fields: zfp's x is the last (fastest) axis.
  const auto ref2 = zfp_reference(zfp_test_field(30), zfp_type_double, {5, 6}, zfp_reversible);
  EXPECT_EQ(zfp_decode<double>({{"mode", "reversible"}}, spec_of(DataType::float_(8), {5, 6}), ref2), zfp_test_field(30));
  const auto ref1 = zfp_reference(zfp_test_field(7), zfp_type_double, {7}, zfp_reversible);
  EXPECT_EQ(zfp_decode<double>({{"mode", "reversible"}}, spec_of(DataType::float_(8), {7}), ref1), zfp_test_field(7));
  // A 0-d chunk is one value in 1-d.
  EXPECT_EQ(zfp_decode<double>({{"mode", "reversible"}}, spec_of(DataType::float_(8), {}), ref1).size(), 1u);
}

TEST(CodecZfp, IntegersAndNarrowTypesRoundTrip) {
  const json rev = {{"mode", "reversible"}};
  const auto round_trip = [&](auto values, DataType t, std::vector<std::uint64_t> shape) {
    using T = typename decltype(values)::value_type;
    const auto spec = spec_of(t, shape);
    EXPECT_EQ(zfp_decode<T>(rev, spec, zfp_encode(rev, spec, new_codec_cells(values))), values) << t.name();
  };
  round_trip(std::vector<std::int8_t>{-128, -1, 0, 1, 127, 5, 6, 7}, DataType::int_(1), {2, 4});
  round_trip(std::vector<std::uint8_t>{0, 1, 128, 255, 3, 4}, DataType::uint(1), {6});
  round_trip(std::vector<std::int16_t>{-32768, -1, 0, 32767}, DataType::int_(2), {4});
  round_trip(std::vector<std::uint16_t>{0, 65535, 1, 2}, DataType::uint(2), {2, 2});
  round_trip(std::vector<std::int32_t>{-5, 1 << 30, 7, 8}, DataType::int_(4), {4});
  round_trip(std::vector<std::int64_t>{-5, 1LL << 50, 7, 8}, DataType::int_(8), {1, 2, 2});
  round_trip(std::vector<float>{1.5f, -2.25f, 1e30f, 0.0f}, DataType::float_(4), {1, 1, 2, 2});
  // uint32 past the signed range clamps (as zarrs).
  const auto u4 = spec_of(DataType::uint(4), {2});
  EXPECT_EQ(zfp_decode<std::uint32_t>(rev, u4, zfp_encode(rev, u4, new_codec_cells(std::vector<std::uint32_t>{7, 4000000000u}))),
            (std::vector<std::uint32_t>{7, 2147483647u}));
  // int8 is promoted by the spec's shift: the stream is libzfp's int32 stream of v << 23.
  const std::vector<std::int32_t> promoted = {-128 * (1 << 23), 5 * (1 << 23)};
  const auto buffer = zfp_reference(promoted, zfp_type_int32, {2}, zfp_reversible);
  EXPECT_EQ(zfp_encode(rev, spec_of(DataType::int_(1), {2}), new_codec_cells(std::vector<std::int8_t>{-128, 5})), buffer);
}

TEST(CodecZfp, BadConfigurationAndData) {
  const auto f8 = spec_of(DataType::float_(8), {4, 4});
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("zfp", {{"mode", "lossy"}}, f8), "unknown mode 'lossy'");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("zfp", json::object(), f8), "'mode': missing");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("zfp", {{"mode", "fixed_rate"}}, f8), "'rate': missing");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("zfp", {{"mode", "fixed_rate"}, {"rate", -1}}, f8), "'rate'");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("zfp", {{"mode", "fixed_precision"}, {"precision", 99}}, f8), "'precision'");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("zfp", {{"mode", "reversible"}, {"rate", 4}}, f8), "'rate'");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("zfp", {{"mode", "expert"}, {"minbits", 10}, {"maxbits", 5}, {"maxprec", 8}, {"minexp", 0}}, f8),
                     "'minbits'");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("zfp", {{"mode", "fixed_accuracy"}, {"tolerance", 0.1}}, spec_of(DataType::int_(4), {4})),
                     "fixed_accuracy needs floating-point data");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("zfp", {{"mode", "reversible"}}, spec_of(DataType::float_(8), {1, 1, 1, 1, 2})),
                     "chunks of 5 dimensions");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("zfp", {{"mode", "reversible"}}, spec_of(DataType::string(), {2})),
                     "unsupported data type");
  // Truncated streams and garbage: a CodecError or a chunk of the right size, never a crash
  // or a read past the chunk (zfp streams carry no length to check everything against). A
  // stream cut to nothing is always refused.
  const json rev = {{"mode", "reversible"}};
  const auto v = zfp_test_field(16);
  const auto enc = zfp_encode(rev, f8, new_codec_cells(v));
  EXPECT_CODEC_ERROR(zfp_decode<double>(rev, f8, {}), "truncated chunk");
  for (std::size_t keep : {std::size_t{1}, std::size_t{8}, enc.size() / 2, enc.size() - 8}) {
    SCOPED_TRACE(keep);
    try {
      EXPECT_EQ(zfp_decode<double>(rev, f8, std::vector<std::byte>(enc.begin(), enc.begin() + static_cast<long>(keep))).size(), 16u);
    } catch (const CodecError& e) {
      EXPECT_NE(std::string(e.what()).find("zfp"), std::string::npos) << e.what();
    }
  }
  std::vector<std::byte> junk(40);
  for (std::size_t i = 0; i < junk.size(); ++i) junk[i] = std::byte(static_cast<unsigned char>(i * 37 + 11));
  try {
    EXPECT_EQ(zfp_decode<double>(rev, f8, junk).size(), 16u);
  } catch (const CodecError&) {
  }
}

#else

TEST(CodecZfp, WithoutLibzfpIsACodecErrorNamingTheLibrary) {
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("zfp", {{"mode", "reversible"}}, spec_of(DataType::float_(8), {4})),
                     "codec 'zfp' needs libzfp");
}

#endif

}  // namespace
}  // namespace lazycube::codec::testing
