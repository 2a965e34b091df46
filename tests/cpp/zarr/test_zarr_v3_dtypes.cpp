// The Zarr v3 data types of the zarr-extensions registry (issue 34): bfloat16 and float8_*
// widened to float32 (every bit pattern against the format's definition), fixed-length
// ASCII/UCS-4 strings, numpy.datetime64/timedelta64 with unit and scale_factor (and the older
// spellings), struct's layout checks, and what is refused with a message naming the field.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "lazycube/error.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "zarr/narrow_float.hpp"
#include "zarr/zarr_array.hpp"
#include "zarr_test_writer.hpp"

namespace lazycube {
namespace {

using namespace lazycube::test;
using nlohmann::json;

ArrayPtr dtypes34_open(const fs::path& dir) { return zarr::open_array(make_file_store(dir.string()), ""); }

// A one-chunk v3 array of `shape` whose chunk "c/0/..." holds `chunk` as stored.
void dtypes34_write(const fs::path& dir, const json& data_type, const json& fill, std::uint64_t n,
                    const std::string& chunk, const json& codecs = json::array({bytes_codec()})) {
  write_file(dir / "zarr.json", v3_array_json({n}, {n}, data_type, codecs, fill).dump());
  if (!chunk.empty()) write_file(dir / "c" / "0", chunk);
}

std::string dtypes34_error(const std::function<void()>& f) { return message_of<MetadataError>(f); }

// ---- float8: the definitions of the registry's README files ----------------------------------

struct Float8Definition {
  const char* name;
  int exponent_bits, mantissa_bits, bias;
  enum { Ieee, Fnuz, E8M0 } edges;
  double max_finite, min_subnormal;  // as the registry / ml_dtypes state them
};

const Float8Definition kDtypes34Float8[] = {
    {"float8_e3m4", 3, 4, 3, Float8Definition::Ieee, 15.5, 0.015625},
    {"float8_e4m3", 4, 3, 7, Float8Definition::Ieee, 240.0, 0.001953125},
    {"float8_e4m3b11fnuz", 4, 3, 11, Float8Definition::Fnuz, 30.0, 0.0001220703125},
    {"float8_e4m3fnuz", 4, 3, 8, Float8Definition::Fnuz, 240.0, 0.0009765625},
    {"float8_e5m2", 5, 2, 15, Float8Definition::Ieee, 57344.0, 1.52587890625e-05},
    {"float8_e5m2fnuz", 5, 2, 16, Float8Definition::Fnuz, 57344.0, 7.62939453125e-06},
    {"float8_e8m0fnu", 8, 0, 127, Float8Definition::E8M0, 1.7014118346046923e+38, 5.877471754111438e-39},
};

// The value of bit pattern `p` from the format's definition: sign, biased exponent, mantissa
// with an implicit leading 1 (0 for subnormals), and the format's special encodings.
double dtypes34_reference(const Float8Definition& d, unsigned p) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (d.edges == Float8Definition::E8M0) return p == 0xff ? nan : std::pow(2.0, static_cast<int>(p) - 127);
  if (d.edges == Float8Definition::Fnuz && p == 0x80) return nan;
  const int sign = (p & 0x80) ? -1 : 1;
  const unsigned exponent = (p >> d.mantissa_bits) & ((1u << d.exponent_bits) - 1);
  const unsigned mantissa = p & ((1u << d.mantissa_bits) - 1);
  const double fraction = mantissa / std::pow(2.0, d.mantissa_bits);
  if (d.edges == Float8Definition::Ieee && exponent == (1u << d.exponent_bits) - 1)
    return mantissa == 0 ? sign * std::numeric_limits<double>::infinity() : nan;
  if (exponent == 0) return sign * fraction * std::pow(2.0, 1 - d.bias);
  return sign * (1 + fraction) * std::pow(2.0, static_cast<int>(exponent) - d.bias);
}

bool dtypes34_same(double expected, float got) {
  if (std::isnan(expected)) return std::isnan(got);
  return static_cast<double>(got) == expected && std::signbit(got) == std::signbit(expected);
}

TEST(ZarrV3DTypes, Float8EveryBitPatternMatchesItsDefinition) {
  for (const auto& d : kDtypes34Float8) {
    const zarr::NarrowFloatFormat* f = zarr::find_narrow_float(d.name);
    ASSERT_NE(f, nullptr) << d.name;
    double max = 0, min_positive = std::numeric_limits<double>::infinity();
    for (unsigned p = 0; p < 256; ++p) {
      const double want = dtypes34_reference(d, p);
      const float got = zarr::narrow_to_float(*f, p);
      EXPECT_TRUE(dtypes34_same(want, got)) << d.name << " 0x" << std::hex << p << ": " << got << " != " << want;
      if (std::isfinite(want)) max = std::max(max, want);
      if (want > 0) min_positive = std::min(min_positive, want);
      // Every non-NaN pattern converts back to itself (the unsigned-zero formats have one zero).
      if (!std::isnan(want)) {
        EXPECT_EQ(zarr::float_to_narrow(*f, got), p) << d.name << " 0x" << std::hex << p;
      }
    }
    EXPECT_EQ(max, d.max_finite) << d.name;
    EXPECT_EQ(min_positive, d.min_subnormal) << d.name;
  }
}

TEST(ZarrV3DTypes, Float8NaNInfinityAndRounding) {
  auto fmt = [](const char* n) { return *zarr::find_narrow_float(n); };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  // The registry's "NaN" representations.
  EXPECT_EQ(zarr::float_to_narrow(fmt("float8_e5m2"), nan), 0x7eu);
  EXPECT_EQ(zarr::float_to_narrow(fmt("float8_e4m3"), nan), 0x7cu);
  EXPECT_EQ(zarr::float_to_narrow(fmt("float8_e3m4"), nan), 0x78u);
  EXPECT_EQ(zarr::float_to_narrow(fmt("float8_e4m3fnuz"), nan), 0x80u);
  EXPECT_EQ(zarr::float_to_narrow(fmt("float8_e8m0fnu"), nan), 0xffu);
  EXPECT_EQ(zarr::float_to_narrow(fmt("bfloat16"), nan), 0x7fc0u);
  // Infinity: kept by the IEEE formats, NaN in the finite ones.
  EXPECT_EQ(zarr::float_to_narrow(fmt("float8_e5m2"), -inf), 0xfcu);
  EXPECT_EQ(zarr::float_to_narrow(fmt("float8_e5m2fnuz"), inf), 0x80u);
  // Round to nearest, ties to even: e5m2 1.0 = 0x3c, 1.25 = 0x3d; 1.125 is halfway → 0x3c.
  EXPECT_EQ(zarr::float_to_narrow(fmt("float8_e5m2"), 1.125f), 0x3cu);
  EXPECT_EQ(zarr::float_to_narrow(fmt("float8_e5m2"), 1.375f), 0x3eu);  // halfway 1.25/1.5 → even 1.5
  EXPECT_EQ(zarr::float_to_narrow(fmt("float8_e5m2"), 1.2f), 0x3du);
  // Overflow: past max (57344) by half a step (61440) → infinity; fnuz → NaN.
  EXPECT_EQ(zarr::float_to_narrow(fmt("float8_e5m2"), 61439.0f), 0x7bu);
  EXPECT_EQ(zarr::float_to_narrow(fmt("float8_e5m2"), 61440.0f), 0x7cu);
  EXPECT_EQ(zarr::float_to_narrow(fmt("float8_e4m3fnuz"), 1000.0f), 0x80u);
  // No negative zero in fnuz formats; e8m0fnu has no zero and no sign.
  EXPECT_EQ(zarr::float_to_narrow(fmt("float8_e4m3fnuz"), -0.0f), 0x00u);
  EXPECT_EQ(zarr::float_to_narrow(fmt("float8_e4m3"), -0.0f), 0x80u);
  EXPECT_EQ(zarr::float_to_narrow(fmt("float8_e8m0fnu"), 0.0f), 0xffu);
  EXPECT_EQ(zarr::float_to_narrow(fmt("float8_e8m0fnu"), 3.0f), 128u);  // 3 is between 2 and 4: tie → even 128 (2^1)
  EXPECT_EQ(zarr::float_to_narrow(fmt("float8_e8m0fnu"), 3.5f), 129u);
}

TEST(ZarrV3DTypes, BFloat16IsTheUpperHalfOfFloat32) {
  const zarr::NarrowFloatFormat& f = *zarr::find_narrow_float("bfloat16");
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const float got = zarr::narrow_to_float(f, b);
    ASSERT_EQ(std::bit_cast<std::uint32_t>(got), b << 16) << std::hex << b;
    if (!std::isnan(got)) {
      ASSERT_EQ(zarr::float_to_narrow(f, got), b) << std::hex << b;
    }
  }
  // Rounding: 1 + 2^-8 is halfway between 1 (0x3f80) and 1 + 2^-7: ties to even.
  EXPECT_EQ(zarr::float_to_narrow(f, 1.0f + 0x1p-8f), 0x3f80u);
  EXPECT_EQ(zarr::float_to_narrow(f, 1.0f + 3 * 0x1p-8f), 0x3f82u);
  EXPECT_EQ(zarr::float_to_narrow(f, 1.0f + 0x1p-8f + 0x1p-20f), 0x3f81u);
  EXPECT_EQ(zarr::float_to_narrow(f, std::numeric_limits<float>::max()), 0x7f80u);  // rounds up to inf
}

// ---- reading arrays --------------------------------------------------------------------------

TEST(ZarrV3DTypes, Float8ArraysReadAsFloat32) {
  std::string all(256, '\0');
  for (unsigned p = 0; p < 256; ++p) all[p] = static_cast<char>(p);
  for (const auto& d : kDtypes34Float8) {
    for (const bool sharded : {false, true}) {
      TempDir tmp;
      const json codecs = sharded ? json::array({sharding_codec({64}, json::array({bytes_codec()}))})
                                  : json::array({bytes_codec("big")});  // "endian" has no effect on 1 byte
      if (sharded) {
        // A shard of four inner chunks of 64, the index (offset, length pairs) at the end + crc32c.
        json meta = v3_array_json({256}, {256}, d.name, codecs, "NaN");
        auto parsed = zarr::parse_v3_array(meta, "x");
        codec::ChunkData chunk;
        chunk.bytes.resize(256 * 4);
        for (unsigned p = 0; p < 256; ++p) {
          const float v = zarr::narrow_to_float(*zarr::find_narrow_float(d.name), p);
          std::memcpy(chunk.bytes.data() + 4 * p, &v, 4);
        }
        Buffer enc = parsed.codecs.encode(chunk, {parsed.dtype, {256}});
        ASSERT_EQ(enc.size(), 256u + 4 * 16 + 4) << d.name;  // one byte per element, then the index
        // The encoder wrote each pattern back (NaNs as the canonical one); the inner chunks lie
        // in order: put every NaN pattern in place too.
        for (unsigned p = 0; p < 256; ++p) {
          if (!std::isnan(dtypes34_reference(d, p))) {
            ASSERT_EQ(static_cast<unsigned>(enc.data()[p]), p) << d.name;
          }
        }
        std::memcpy(enc.data(), all.data(), 256);
        write_file(tmp.path() / "zarr.json", meta.dump());
        write_file(tmp.path() / "c" / "0", enc.data(), enc.size());
      } else {
        dtypes34_write(tmp.path(), d.name, "NaN", 256, all, codecs);
      }
      ArrayPtr a = dtypes34_open(tmp.path());
      EXPECT_EQ(a->dtype(), DataType::float_(4)) << d.name;
      NDArray r = a->read_all();
      auto v = r.values<float>();
      for (unsigned p = 0; p < 256; ++p)
        ASSERT_TRUE(dtypes34_same(dtypes34_reference(d, p), v[p])) << d.name << " sharded " << sharded << " 0x"
                                                                   << std::hex << p;
      // A partial read of the inner chunks.
      NDArray part = a->read({{100, 20, 1}});
      for (unsigned k = 0; k < 20; ++k)
        ASSERT_TRUE(dtypes34_same(dtypes34_reference(d, 100 + k), part.values<float>()[k])) << d.name;
    }
  }
}

TEST(ZarrV3DTypes, BFloat16ArraysReadBothByteOrders) {
  const std::vector<std::uint16_t> bits = {0x3f80, 0xc000, 0x7f80, 0xff80, 0x7fc0, 0x0001, 0x8000, 0x4049};
  for (const char* endian : {"little", "big"}) {
    TempDir tmp;
    std::string chunk;
    for (auto b : bits) {
      const char lo = static_cast<char>(b & 0xff), hi = static_cast<char>(b >> 8);
      chunk += std::string(endian[0] == 'l' ? std::string{lo, hi} : std::string{hi, lo});
    }
    dtypes34_write(tmp.path(), "bfloat16", 0, bits.size(), chunk, json::array({bytes_codec(endian)}));
    const ArrayPtr a = dtypes34_open(tmp.path());
    EXPECT_EQ(a->stored_dtype(), "bfloat16");  // what the float32 elements are widened from
    NDArray r = a->read_all();
    ASSERT_EQ(r.dtype, DataType::float_(4));
    for (std::size_t i = 0; i < bits.size(); ++i)
      EXPECT_EQ(std::bit_cast<std::uint32_t>(r.values<float>()[i]), std::uint32_t{bits[i]} << 16) << endian << i;
  }
}

TEST(ZarrV3DTypes, NarrowFloatFillValues) {
  struct Case {
    const char* type;
    json fill;
    float expect;  // NaN compares as NaN
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<Case> cases = {
      {"bfloat16", "NaN", nan},
      {"bfloat16", "0x3f80", 1.0f},
      {"bfloat16", "-Infinity", -std::numeric_limits<float>::infinity()},
      {"bfloat16", 3.140625, 3.140625f},
      {"bfloat16", 0.1, std::bit_cast<float>(0x3dcd0000u)},  // rounded to the nearest bfloat16
      {"float8_e5m2", "0x7e", nan},
      {"float8_e5m2", "0x3c", 1.0f},
      {"float8_e5m2", -2, -2.0f},
      {"float8_e5m2", "Infinity", std::numeric_limits<float>::infinity()},
      {"float8_e4m3fnuz", "NaN", nan},
      {"float8_e4m3fnuz", "0x80", nan},
      {"float8_e4m3fnuz", 0.3, 0.3125f},
      {"float8_e8m0fnu", "0x7f", 1.0f},
      {"float8_e8m0fnu", 0.25, 0.25f},
      {"float8_e3m4", 0, 0.0f},
  };
  for (const auto& c : cases) {
    TempDir tmp;
    dtypes34_write(tmp.path(), c.type, c.fill, 3, "");  // no chunk: reads the fill value
    NDArray r = dtypes34_open(tmp.path())->read_all();
    for (float v : r.values<float>())
      EXPECT_TRUE(std::isnan(c.expect) ? std::isnan(v) : v == c.expect) << c.type << " " << c.fill.dump() << " read " << v;
  }
}

// ---- fixed-length strings and times ----------------------------------------------------------

TEST(ZarrV3DTypes, FixedLengthAsciiAndUcs4Strings) {
  {
    TempDir tmp;
    json t = {{"name", "fixed-length-ascii"}, {"configuration", {{"length_bits", 24}}}};
    dtypes34_write(tmp.path(), t, "abc", 2, std::string("hi\0xyz", 6));
    NDArray r = dtypes34_open(tmp.path())->read_all();
    EXPECT_EQ(r.dtype.numpy_str(), "|S3");
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(r.data.data()), 6), std::string("hi\0xyz", 6));
    TempDir empty;
    dtypes34_write(empty.path(), t, "ab", 1, "");  // the fill is the text itself, not base64
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(dtypes34_open(empty.path())->read_all().data.data()), 3),
              std::string("ab\0", 3));
  }
  {
    TempDir tmp;
    json t = {{"name", "fixed-length-ucs4"}, {"configuration", {{"length_bits", 64}}}};
    const std::u32string text = U"\u00e9t\u00e9!";  // two elements of two code points
    dtypes34_write(tmp.path(), t, "", 2, std::string(reinterpret_cast<const char*>(text.data()), 16));
    NDArray r = dtypes34_open(tmp.path())->read_all();
    EXPECT_EQ(r.dtype.numpy_str(), "<U2");
    EXPECT_EQ(std::memcmp(r.data.data(), text.data(), 16), 0);
  }
  for (const char* name : {"fixed-length-bytes", "raw_bytes"}) {
    TempDir tmp;
    json t = {{"name", name},
              {"configuration", name[0] == 'r' ? json{{"length_bytes", 2}} : json{{"length_bits", 16}}}};
    dtypes34_write(tmp.path(), t, "AP8=", 1, "");  // base64 fill, b"\x00\xff"
    NDArray r = dtypes34_open(tmp.path())->read_all();
    EXPECT_EQ(r.dtype.numpy_str(), "|S2") << name;
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(r.data.data()), 2), std::string("\0\xff", 2)) << name;
  }
}

TEST(ZarrV3DTypes, DatetimeAndTimedeltaNewAndOldSpellings) {
  struct Case {
    json type;
    std::string numpy;
  };
  const std::vector<Case> cases = {
      {{{"name", "numpy.datetime64"}, {"configuration", {{"unit", "ms"}, {"scale_factor", 10}}}}, "<M8[10ms]"},
      {{{"name", "numpy.timedelta64"}, {"configuration", {{"unit", "h"}, {"scale_factor", 1}}}}, "<m8[h]"},
      {{{"name", "numpy.datetime64"}, {"configuration", {{"unit", "\u03bcs"}, {"scale_factor", 2147483647}}}},
       "<M8[2147483647us]"},
      {{{"name", "numpy.datetime64"}, {"configuration", {{"unit", "generic"}, {"scale_factor", 1}}}}, "<M8"},
      // before zarr-python 3.3: no scale_factor; the registry's first draft: "datetime64"/"timedelta64"
      {{{"name", "numpy.datetime64"}, {"configuration", {{"unit", "D"}}}}, "<M8[D]"},
      {{{"name", "datetime64"}, {"configuration", {{"unit", "s"}}}}, "<M8[s]"},
      {{{"name", "timedelta64"}, {"configuration", {{"unit", "ns"}}}}, "<m8[ns]"},
  };
  const std::vector<std::int64_t> values = {0, -1, 1700000000, std::numeric_limits<std::int64_t>::min()};
  for (const auto& c : cases) {
    TempDir tmp;
    dtypes34_write(tmp.path(), c.type, "NaT", values.size(),
                   std::string(reinterpret_cast<const char*>(values.data()), 8 * values.size()));
    NDArray r = dtypes34_open(tmp.path())->read_all();
    EXPECT_EQ(r.dtype.numpy_str(), c.numpy) << c.type.dump();
    auto got = r.values<std::int64_t>();
    EXPECT_EQ(std::vector<std::int64_t>(got.begin(), got.end()), values) << c.type.dump();
  }
}

// ---- refusals ----------------------------------------------------------------------------------

TEST(ZarrV3DTypes, BadDataTypesAreRefusedNamingTheField) {
  struct Case {
    json type;
    std::vector<std::string> parts;
  };
  auto dt = [](const char* unit, json scale) {
    json c = {{"unit", unit}};
    if (!scale.is_null()) c["scale_factor"] = scale;
    return json{{"name", "numpy.datetime64"}, {"configuration", c}};
  };
  const std::vector<Case> cases = {
      {"float8_e4m3fnx", {"unknown data type name 'float8_e4m3fnx'"}},
      {"bfloat8", {"unknown data type name 'bfloat8'"}},
      {{{"name", "float8_e5m2"}, {"configuration", {{"bias", 15}}}}, {"unknown configuration field 'bias'"}},
      {{{"name", "bfloat16"}, {"configuration", 3}}, {"configuration must be an object"}},
      {dt("s", 0), {"configuration.scale_factor", "[1, 2147483647]", "0"}},
      {dt("s", 2147483648LL), {"configuration.scale_factor", "2147483648"}},
      {dt("s", "10"), {"configuration.scale_factor", "\"10\""}},
      {dt("fortnight", 1), {"configuration.unit 'fortnight'"}},
      {{{"name", "numpy.timedelta64"}, {"configuration", {{"scale_factor", 1}}}}, {"missing configuration.unit"}},
      {{{"name", "numpy.datetime64"}, {"configuration", {{"unit", "s"}, {"scale_factor", 1}, {"calendar", "noleap"}}}},
       {"unknown configuration field 'calendar'"}},
      {{{"name", "datetime64"}, {"configuration", {{"unit", "s"}, {"scale_factor", 2}}}},
       {"unknown configuration field 'scale_factor'"}},
      {{{"name", "fixed-length-ascii"}, {"configuration", {{"length_bits", 20}}}},
       {"configuration.length_bits must be a multiple of 8", "20"}},
      {{{"name", "fixed-length-ucs4"}, {"configuration", {{"length_bits", 48}}}},
       {"configuration.length_bits must be a multiple of 32"}},
      {{{"name", "fixed-length-ascii"}, {"configuration", json::object()}}, {"missing configuration.length_bits"}},
      {{{"name", "fixed-length-ucs4"}, {"configuration", {{"length_bytes", 8}}}},
       {"unknown configuration field 'length_bytes'"}},
      {{{"name", "fixed_length_utf32"}, {"configuration", {{"length_bytes", 6}}}},
       {"configuration.length_bytes must be a multiple of 4"}},
      {{{"name", "raw_bytes"}, {"configuration", {{"length_bytes", 0}}}}, {"configuration.length_bytes"}},
  };
  for (const auto& c : cases) {
    TempDir tmp;
    dtypes34_write(tmp.path(), c.type, nullptr, 2, "");
    const std::string e = dtypes34_error([&] { dtypes34_open(tmp.path()); });
    EXPECT_NE(e.find("unsupported data_type"), std::string::npos) << e;
    for (const auto& part : c.parts) EXPECT_NE(e.find(part), std::string::npos) << c.type.dump() << ": " << e;
  }
}

TEST(ZarrV3DTypes, BadFillValuesAreRefusedNamingTheType) {
  struct Case {
    json type, fill;
    std::vector<std::string> parts;
  };
  const json ascii = {{"name", "fixed-length-ascii"}, {"configuration", {{"length_bits", 16}}}};
  const std::vector<Case> cases = {
      {"float8_e4m3fnuz", "Infinity", {"float8_e4m3fnuz has no infinity"}},
      {"float8_e8m0fnu", "-Infinity", {"float8_e8m0fnu has no infinity"}},
      {"float8_e4m3fnuz", 1000, {"fill_value 1000", "float8_e4m3fnuz", "out of range"}},
      {"float8_e8m0fnu", -1, {"float8_e8m0fnu", "only positive powers of two"}},
      {"float8_e5m2", "0x7e00", {"float8_e5m2", "\"0x\" and 2 hex digits"}},
      {"bfloat16", "0x7fc00000", {"bfloat16", "\"0x\" and 4 hex digits"}},
      {"bfloat16", "nan?", {"fill_value \"nan?\"", "bfloat16"}},
      {"float8_e3m4", true, {"fill_value true", "float8_e3m4"}},
      {ascii, "\u00e9", {"not ASCII text"}},
      {ascii, "abc", {"longer than the item size"}},
      {{{"name", "numpy.datetime64"}, {"configuration", {{"unit", "s"}, {"scale_factor", 1}}}}, "yesterday",
       {"fill_value \"yesterday\""}},
  };
  for (const auto& c : cases) {
    TempDir tmp;
    dtypes34_write(tmp.path(), c.type, c.fill, 2, "");
    const std::string e = dtypes34_error([&] { dtypes34_open(tmp.path()); });
    for (const auto& part : c.parts) EXPECT_NE(e.find(part), std::string::npos) << c.fill.dump() << ": " << e;
  }
}

// ---- struct: the layout checks (reading records: test_zarr_v3_struct.cpp) ----------------------

json dtypes34_struct(const json& fields, const char* name = "struct") {
  return {{"name", name}, {"configuration", {{"fields", fields}}}};
}

TEST(ZarrV3DTypes, StructIsParsedWithItsPackedLayout) {
  const json point = dtypes34_struct(json::array({{{"name", "x"}, {"data_type", "float32"}},
                                                  {{"name", "y"}, {"data_type", "float32"}}}));
  struct Case {
    json type, fill;
    std::string layout;
  };
  const std::vector<Case> cases = {
      {dtypes34_struct(json::array({{{"name", "id"}, {"data_type", "int32"}},
                                    {{"name", "flags"}, {"data_type", {{"name", "uint8"}}}},
                                    {{"name", "value"}, {"data_type", "float64"}}})),
       {{"id", 1}, {"flags", 2}, {"value", "NaN"}},
       "struct{id: int32, flags: uint8, value: float64}"},
      {dtypes34_struct(json::array({{{"name", "point"}, {"data_type", point}}, {{"name", "value"}, {"data_type", "float64"}}})),
       {{"point", {{"x", 1.0}, {"y", 2.0}}}, {"value", 3.14}},
       "struct{point: struct{x: float32, y: float32}, value: float64}"},
      // the legacy alias: [name, data_type] pairs, base64 of the packed record as fill
      {dtypes34_struct(json::array({json::array({"x", "float32"}), json::array({"t", {{"name", "numpy.datetime64"},
                                                                                  {"configuration", {{"unit", "s"}, {"scale_factor", 1}}}}})}),
                       "structured"),
       "AAAAAAAAAAAAAAAA", "struct{x: float32, t: datetime64[s]}"},
  };
  for (const auto& c : cases) {
    TempDir tmp;
    dtypes34_write(tmp.path(), c.type, c.fill, 2, "");
    const ArrayPtr a = dtypes34_open(tmp.path());
    EXPECT_EQ(a->dtype().name(), c.layout);
    EXPECT_EQ(a->dtype().kind, DTypeKind::Record);
  }
}

TEST(ZarrV3DTypes, BadStructsAreRefusedNamingTheField) {
  const json f4 = "float32";
  struct Case {
    json type, fill;
    std::vector<std::string> parts;
  };
  const std::vector<Case> cases = {
      {dtypes34_struct(json::array({{{"name", "x"}, {"data_type", f4}}, {{"name", "x"}, {"data_type", "int8"}}})),
       nullptr, {"field 'x' is declared twice", "overlap"}},
      {dtypes34_struct(json::array()), nullptr, {"configuration.fields must be a non-empty list"}},
      {{{"name", "struct"}}, nullptr, {"missing configuration.fields"}},
      {dtypes34_struct(json::array({{{"data_type", f4}}})), nullptr, {"field 0 has no name"}},
      {dtypes34_struct(json::array({{{"name", "a"}}})), nullptr, {"field 'a' has no data_type"}},
      {dtypes34_struct(json::array({{{"name", "a"}, {"data_type", f4}, {"offset", 4}}})), nullptr,
       {"field 0 has the unknown key 'offset'"}},
      {dtypes34_struct(json::array({json::array({"a", "float32"})})), nullptr, {"field 0 must be"}},
      {dtypes34_struct(json::array({{{"name", "s"}, {"data_type", "string"}}})), nullptr,
       {"field 's' has the variable-length type", "fixed size"}},
      {dtypes34_struct(json::array({{{"name", "b"}, {"data_type", "bfloat16"}}})), nullptr, {"field 'b'", "bfloat16"}},
      {dtypes34_struct(json::array({{{"name", "q"}, {"data_type", "float128"}}})), nullptr,
       {"field 'q'", "unknown data type name 'float128'"}},
      {dtypes34_struct(json::array({{{"name", "big"}, {"data_type", {{"name", "fixed_length_utf32"}, {"configuration", {{"length_bytes", 2147483644}}}}}},
                                    {{"name", "tail"}, {"data_type", "float64"}}})),
       nullptr, {"field 'tail' ends past the largest record"}},
      {dtypes34_struct(json::array({{{"name", "x"}, {"data_type", f4}}, {{"name", "y"}, {"data_type", f4}}})),
       {{"x", 1.0}}, {"struct field 'y' has no entry in the fill_value"}},
      {dtypes34_struct(json::array({{{"name", "x"}, {"data_type", "int8"}}})), {{"x", 300}},
       {"struct field 'x'", "fill_value 300", "out of range"}},
      {dtypes34_struct(json::array({{{"name", "x"}, {"data_type", "int8"}}})), {{"x", 1}, {"z", 2}},
       {"unknown field 'z'"}},
      {dtypes34_struct(json::array({{{"name", "x"}, {"data_type", f4}}}), "structured"), "AAAA",
       {"not base64 of 4 bytes"}},
  };
  for (const auto& c : cases) {
    TempDir tmp;
    dtypes34_write(tmp.path(), c.type, c.fill, 2, "");
    const std::string e = dtypes34_error([&] { dtypes34_open(tmp.path()); });
    for (const auto& part : c.parts) EXPECT_NE(e.find(part), std::string::npos) << c.type.dump() << ": " << e;
  }
}

// ---- float6 / float4: finite formats (no infinity, no NaN), one per byte, upper bits ignored ----

struct FnDefinition {
  const char* name;
  int exponent_bits, mantissa_bits, bias;
  double max_finite, min_subnormal;  // as the registry's formats (OCP MX) give them
};

const FnDefinition kDtypes34Fn[] = {
    {"float6_e2m3fn", 2, 3, 1, 7.5, 0.125},
    {"float6_e3m2fn", 3, 2, 3, 28.0, 0.0625},
    {"float4_e2m1fn", 2, 1, 1, 6.0, 0.5},
};

// The value of the stored byte `p`: its low 1 + e + m bits, sign, biased exponent, mantissa.
double dtypes34_fn_reference(const FnDefinition& d, unsigned p) {
  const unsigned bits = 1 + d.exponent_bits + d.mantissa_bits;
  p &= (1u << bits) - 1;
  const int sign = (p >> (bits - 1)) & 1u ? -1 : 1;
  const unsigned exponent = (p >> d.mantissa_bits) & ((1u << d.exponent_bits) - 1);
  const double fraction = (p & ((1u << d.mantissa_bits) - 1)) / std::pow(2.0, d.mantissa_bits);
  if (exponent == 0) return sign * fraction * std::pow(2.0, 1 - d.bias);
  return sign * (1 + fraction) * std::pow(2.0, static_cast<int>(exponent) - d.bias);
}

TEST(ZarrV3DTypes, Float6AndFloat4EveryBytePatternMatchesItsDefinition) {
  for (const auto& d : kDtypes34Fn) {
    const zarr::NarrowFloatFormat* f = zarr::find_narrow_float(d.name);
    ASSERT_NE(f, nullptr) << d.name;
    const unsigned patterns = 1u << (1 + d.exponent_bits + d.mantissa_bits);
    double max = 0, min_positive = std::numeric_limits<double>::infinity();
    for (unsigned p = 0; p < 256; ++p) {
      const double want = dtypes34_fn_reference(d, p);
      const float got = zarr::narrow_to_float(*f, p);
      EXPECT_TRUE(dtypes34_same(want, got)) << d.name << " 0x" << std::hex << p << ": " << got << " != " << want;
      ASSERT_FALSE(std::isnan(got) || std::isinf(got)) << d.name;
      if (p < patterns) {
        EXPECT_EQ(zarr::float_to_narrow(*f, got), p) << d.name << " 0x" << std::hex << p;
        max = std::max(max, want);
        if (want > 0) min_positive = std::min(min_positive, want);
      }
    }
    EXPECT_EQ(max, d.max_finite) << d.name;
    EXPECT_EQ(min_positive, d.min_subnormal) << d.name;
    // No infinity or NaN: encoding saturates at the largest finite value (OCP MX).
    const unsigned max_bits = patterns / 2 - 1;
    EXPECT_EQ(zarr::float_to_narrow(*f, 1e6f), max_bits) << d.name;
    EXPECT_EQ(zarr::float_to_narrow(*f, -std::numeric_limits<float>::infinity()), max_bits | patterns / 2) << d.name;
  }
  // Ties to even: float4 1.25 lies between 1 (0b0010) and 1.5 (0b0011).
  EXPECT_EQ(zarr::float_to_narrow(*zarr::find_narrow_float("float4_e2m1fn"), 1.25f), 0x2u);
  EXPECT_EQ(zarr::float_to_narrow(*zarr::find_narrow_float("float4_e2m1fn"), 5.0f), 0x6u);  // 4 and 6: even 4
}

TEST(ZarrV3DTypes, Float6AndFloat4ArraysReadAsFloat32) {
  std::string all(256, '\0');
  for (unsigned p = 0; p < 256; ++p) all[p] = static_cast<char>(p);
  for (const auto& d : kDtypes34Fn) {
    TempDir tmp;
    dtypes34_write(tmp.path(), d.name, 1.5, 256, all);
    ArrayPtr a = dtypes34_open(tmp.path());
    EXPECT_EQ(a->dtype(), DataType::float_(4)) << d.name;
    EXPECT_EQ(a->stored_dtype(), d.name);
    float fill;
    std::memcpy(&fill, a->fill_value_bytes().data(), 4);
    EXPECT_EQ(fill, 1.5f) << d.name;
    const NDArray r = a->read_all();
    const auto v = r.values<float>();
    for (unsigned p = 0; p < 256; ++p)
      ASSERT_TRUE(dtypes34_same(dtypes34_fn_reference(d, p), v[p])) << d.name << " 0x" << std::hex << p;
    // Fill values the format cannot hold.
    for (const json& bad : {json("NaN"), json("Infinity"), json(d.max_finite * 2)}) {
      TempDir t2;
      dtypes34_write(t2.path(), d.name, bad, 4, "");
      const std::string e = dtypes34_error([&] { dtypes34_open(t2.path()); });
      EXPECT_NE(e.find(std::string("is not valid for ") + d.name), std::string::npos) << bad.dump() << ": " << e;
    }
  }
}

// ---- cast_value: the fill value must survive encode then decode ------------------------------

TEST(ZarrV3DTypes, CastValueFillValueMustSurviveTheRoundTrip) {
  auto cast = [](json config) {
    return json::array({{{"name", "cast_value"}, {"configuration", std::move(config)}}, bytes_codec()});
  };
  const json nan_map = {{"encode", json::array({json::array({"NaN", -128})})},
                        {"decode", json::array({json::array({-128, "NaN"})})}};
  struct Case {
    json config, fill;
    const char* error;  // nullptr: opens
  };
  const std::vector<Case> cases = {
      {{{"data_type", "int8"}}, 3.0, nullptr},
      {{{"data_type", "int8"}, {"scalar_map", nan_map}}, "NaN", nullptr},
      {{{"data_type", "int8"}}, 0.5, "encoded then decoded it is another value"},  // rounds to 0
      {{{"data_type", "int8"}, {"out_of_range", "clamp"}}, 300, "encoded then decoded it is another value"},
      {{{"data_type", "int8"}}, "NaN", "cannot cast float32 value NaN to int8"},
      {{{"data_type", "int8"}}, 1000, "out of the range of int8"},
  };
  for (const auto& c : cases) {
    TempDir tmp;
    dtypes34_write(tmp.path(), "float32", c.fill, 4, "", cast(c.config));
    if (c.error == nullptr) {
      EXPECT_NO_THROW(dtypes34_open(tmp.path())) << c.config.dump() << " " << c.fill.dump();
      continue;
    }
    const std::string e = dtypes34_error([&] { dtypes34_open(tmp.path()); });
    EXPECT_NE(e.find("fill_value " + c.fill.dump() + " does not survive codec cast_value"), std::string::npos) << e;
    EXPECT_NE(e.find(c.error), std::string::npos) << e;
  }
}

TEST(ZarrV3DTypes, Float8ChunkOfTheWrongSizeIsACodecError) {
  TempDir tmp;
  dtypes34_write(tmp.path(), "float8_e5m2", 0, 8, std::string(5, '\0'));
  EXPECT_THROW(dtypes34_open(tmp.path())->read_all(), CodecError);
}

}  // namespace
}  // namespace lazycube
