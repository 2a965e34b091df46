// The virtual GRIB codec (src/codec/grib_codec.cpp): one GRIB1/GRIB2 message decoded to its
// field, value for value as ecCodes' own API decodes it (and as GDAL's GRIB driver, within the
// precision of its own unpacking), for ecCodes' samples of both editions and several grids, the
// real ERA5 GRIB1 file of ../shared/data/real and the same file converted to GRIB2; bitmap
// points as NaN; the coordinates for var latitude/longitude; under every name it is registered
// under (v3 gribberish, v2 gribberish and grib, numcodecs.*). A truncated message, bytes that are
// no GRIB message and a chunk of another size are CodecErrors naming the codec.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "gdal_test_files.hpp"
#include "grib_complex_messages.hpp"
#include "grib_test_messages.hpp"
#include "test_codec_helpers.hpp"
#include "test_support.hpp"

namespace lazycube::codec::testing {
namespace {

#ifdef LAZYCUBE_HAVE_ECCODES

namespace grib = ::lazycube::test::grib;

double smooth(std::size_t i) { return 250.0 + 20.0 * std::sin(static_cast<double>(i) * 0.01) + static_cast<double>(i % 13) * 0.25; }

// The message decoded by the codec under v3 `name` into a chunk of `shape` and `dtype`.
std::vector<double> decode_v3(const std::vector<std::byte>& message, std::vector<std::uint64_t> shape,
                              const DataType& dtype = DataType::float_(8), nlohmann::json config = nlohmann::json::object(),
                              const std::string& name = "gribberish") {
  const ChunkSpec spec = spec_of(dtype, std::move(shape));
  const auto codec = make_array_to_bytes_codec(name, config, spec);
  ChunkData out;
  codec->decode(view(message), spec, out);
  if (dtype.itemsize == 8) return from_bytes<double>(out.bytes.view());
  const auto f = from_bytes<float>(out.bytes.view());
  return {f.begin(), f.end()};
}

// The same through a v2 filter object ({"id": id}), decoded without a size given.
std::vector<double> decode_v2(const std::vector<std::byte>& message, const std::string& id) {
  const auto codec = make_v2_bytes_codec({{"id", id}, {"var", "t"}, {"dtype", "<f8"}}, DataType::float_(8));
  return from_bytes<double>(view(decode_unbounded(*codec, view(message))));
}

// Equal value for value, NaN where the other is NaN.
void expect_same_field(const std::vector<double>& got, const std::vector<double>& want, double tolerance = 0) {
  ASSERT_EQ(got.size(), want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool same = std::isnan(want[i]) ? std::isnan(got[i]) : std::fabs(got[i] - want[i]) <= tolerance;
    if (!same && bad++ < 5) ADD_FAILURE() << "point " << i << ": " << got[i] << ", expected " << want[i];
  }
  EXPECT_EQ(bad, 0u);
}

class GribSamples : public ::testing::TestWithParam<const char*> {};

TEST_P(GribSamples, DecodesAsEccodesDoes) {
  if (!std::filesystem::exists(grib::samples_dir() / (std::string(GetParam()) + ".tmpl")))
    GTEST_SKIP() << "ecCodes sample " << GetParam() << " not found in " << grib::samples_dir();
  const auto message = grib::sample_message(GetParam(), smooth);
  const auto want = grib::decode(message);
  expect_same_field(decode_v3(message, {want.size()}), want);
  for (const char* id : {"grib", "gribberish"}) {
    SCOPED_TRACE(id);
    expect_same_field(decode_v2(message, id), want);
  }
  // float32: ecCodes' doubles narrowed.
  const auto narrow = decode_v3(message, {want.size()}, DataType::float_(4));
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(narrow[i], static_cast<double>(static_cast<float>(want[i]))) << i;
}

TEST_P(GribSamples, BitmapPointsAreNaN) {
  if (!std::filesystem::exists(grib::samples_dir() / (std::string(GetParam()) + ".tmpl")))
    GTEST_SKIP() << "ecCodes sample " << GetParam() << " not found in " << grib::samples_dir();
  const auto message = grib::sample_message(GetParam(), [](std::size_t i) { return i % 7 == 3 ? std::nan("") : smooth(i); });
  const auto want = grib::decode(message);
  std::size_t missing = 0;
  for (double v : want) missing += std::isnan(v);
  ASSERT_GT(missing, 0u) << "the sample message has no bitmap";
  const auto got = decode_v3(message, {want.size()});
  expect_same_field(got, want);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(std::isnan(got[i]), i % 7 == 3) << i;
}

TEST_P(GribSamples, LatitudeAndLongitudeVars) {
  if (!std::filesystem::exists(grib::samples_dir() / (std::string(GetParam()) + ".tmpl")))
    GTEST_SKIP() << "ecCodes sample " << GetParam() << " not found in " << grib::samples_dir();
  const auto message = grib::sample_message(GetParam(), smooth);
  for (const char* var : {"latitude", "longitude"}) {
    SCOPED_TRACE(var);
    const auto want = grib::decode(message, var == std::string("latitude") ? "latitudes" : "longitudes");
    expect_same_field(decode_v3(message, {want.size()}, DataType::float_(8), {{"var", var}}), want);
  }
}

INSTANTIATE_TEST_SUITE_P(Eccodes, GribSamples,
                         ::testing::Values("GRIB1", "GRIB2", "regular_ll_sfc_grib2", "gg_sfc_grib1", "reduced_gg_pl_32_grib2",
                                           "polar_stereographic_sfc_grib2", "ccsds_grib2"));

// Simple packing is decoded without an ecCodes handle (the fast path), every other packing and
// constant fields through ecCodes: both give ecCodes' own values, bit for bit.
TEST(GribCodec, EveryPackingDecodesAsEccodes) {
  const auto with_gaps = [](std::size_t i) { return i % 5 == 1 ? std::nan("") : smooth(i); };
  for (const char* sample : {"GRIB1", "GRIB2"}) {
    // Data representation templates 5.0, 5.4, 5.3, 5.42, 5.2, 5.40, 5.41, 5.50001, 5.61 (GRIB2);
    // GRIB1's simple and second-order packing. With gaps: the bitmap's points NaN.
    for (const char* packing : {"grid_simple", "grid_ieee", "grid_complex_spatial_differencing", "grid_ccsds",
                                "grid_complex", "grid_jpeg", "grid_png", "grid_second_order",
                                "grid_simple_log_preprocessing"}) {
      if (std::string(sample) == "GRIB1" && std::string(packing) != "grid_simple" &&
          std::string(packing) != "grid_second_order")
        continue;
      SCOPED_TRACE(std::string(sample) + " " + packing);
      std::vector<std::vector<std::byte>> messages = {grib::sample_message(sample, smooth, packing),
                                                      grib::sample_message(sample, with_gaps, packing)};
      // A constant field (no bits per value); ecCodes cannot write one with some packings.
      if (std::string(packing) == "grid_simple" || std::string(packing) == "grid_ieee")
        messages.push_back(grib::sample_message(sample, [](std::size_t) { return 280.0; }, packing));
      for (const auto& message : messages) {
        const auto want = grib::decode(message);
        expect_same_field(decode_v3(message, {want.size()}), want);
      }
    }
  }
}

// Complex packing's missing-value management (templates 5.2 and 5.3, primary and secondary
// missing values, as NCEP's WAVEWATCH fields use it): no bitmap, the missing points coded in the
// data. ecCodes decodes them to its missingValue (9999 by default); the codec gives NaN there,
// every other point ecCodes' value bit for bit, in float64 and float32, v3 and v2.
TEST(GribCodec, ComplexPackingMissingValuesAreNaN) {
  struct Case {
    int template_number, management, order;
  };
  for (const Case c : {Case{2, 1, 0}, Case{2, 2, 0}, Case{3, 1, 1}, Case{3, 2, 1}, Case{3, 1, 2}, Case{3, 2, 2}}) {
    SCOPED_TRACE("template 5." + std::to_string(c.template_number) + ", missing-value management " +
                 std::to_string(c.management) + ", order " + std::to_string(c.order));
    const auto message = grib::complex_missing_message(c.template_number, c.management, c.order);
    const auto raw = grib::decode(message.bytes);
    ASSERT_EQ(raw.size(), message.missing.size());
    std::size_t missing = 0;
    for (std::size_t i = 0; i < raw.size(); ++i) {
      ASSERT_EQ(raw[i] == 9999.0, message.missing[i]) << "ecCodes and the construction disagree at point " << i;
      missing += message.missing[i];
    }
    ASSERT_GT(missing, raw.size() / 5);
    std::vector<double> want = raw;
    for (std::size_t i = 0; i < want.size(); ++i)
      if (message.missing[i]) want[i] = std::nan("");
    expect_same_field(decode_v3(message.bytes, {want.size()}), want);
    for (const char* id : {"grib", "gribberish"}) {
      SCOPED_TRACE(id);
      expect_same_field(decode_v2(message.bytes, id), want);
    }
    const auto narrow = decode_v3(message.bytes, {want.size()}, DataType::float_(4));
    for (std::size_t i = 0; i < want.size(); ++i)
      if (message.missing[i]) ASSERT_TRUE(std::isnan(narrow[i])) << i;
      else ASSERT_EQ(narrow[i], static_cast<double>(static_cast<float>(want[i]))) << i;
  }
}

TEST(GribCodec, TheChunkShapeMustHoldTheMessagesPoints) {
  const auto message = grib::sample_message("GRIB2", smooth);
  const std::size_t n = grib::decode(message).size();
  // Any shape of that many elements takes the field, in the message's scanning order.
  EXPECT_EQ(decode_v3(message, {1, n}), grib::decode(message));
  EXPECT_CODEC_ERROR(decode_v3(message, {n + 1}), "gribberish");
  EXPECT_CODEC_ERROR(decode_v3(message, {n + 1}), std::to_string(n) + " points");
  EXPECT_CODEC_ERROR(decode_v3(message, {n + 1}), std::to_string(n + 1) + " elements");
  const auto v2 = make_v2_bytes_codec({{"id", "grib"}}, DataType::float_(8));
  EXPECT_CODEC_ERROR(decode_exact(*v2, view(message), (n - 1) * 8), "grib");
  std::vector<std::byte> small((n - 1) * 8);
  EXPECT_CODEC_ERROR(v2->decode_into(view(message), {small.data(), small.size()}), "grib");
}

TEST(GribCodec, TruncatedOrForeignBytesAreCodecErrors) {
  const auto message = grib::sample_message("GRIB2", smooth);
  const auto grib1 = grib::sample_message("GRIB1", smooth);
  const std::size_t n = grib::decode(message).size();
  for (const auto* m : {&message, &grib1}) {
    for (std::size_t keep : {std::size_t{0}, std::size_t{4}, std::size_t{15}, std::size_t{16}, m->size() / 2, m->size() - 1}) {
      SCOPED_TRACE(keep);
      const std::vector<std::byte> cut(m->begin(), m->begin() + static_cast<std::ptrdiff_t>(keep));
      EXPECT_CODEC_ERROR(decode_v3(cut, {n}), "gribberish");
      EXPECT_CODEC_ERROR(decode_v2(cut, "grib"), "grib");
    }
  }
  const std::vector<std::byte> half(message.begin(), message.begin() + static_cast<std::ptrdiff_t>(message.size() / 2));
  EXPECT_CODEC_ERROR(decode_v3(half, {n}), "truncated GRIB message");
  std::vector<std::byte> no_end = message;
  no_end[no_end.size() - 1] = std::byte{'8'};
  EXPECT_CODEC_ERROR(decode_v3(no_end, {n}), "'7777'");
  std::vector<std::byte> foreign(message.size(), std::byte{0x42});
  EXPECT_CODEC_ERROR(decode_v3(foreign, {n}), "not a GRIB message");
  std::vector<std::byte> edition3 = message;
  edition3[7] = std::byte{3};
  EXPECT_CODEC_ERROR(decode_v3(edition3, {n}), "edition 3");
}

TEST(GribCodec, CorruptHeadersAreCodecErrorsOrAField) {
  // Every header byte of simple-packed GRIB1 and GRIB2 messages (with and without a bitmap)
  // changed in turn: the codec's own parser and ecCodes either decode a field of the chunk's size
  // or throw CodecError (ASan and the fuzz target check that nothing reads out of bounds).
  const auto with_gaps = [](std::size_t i) { return i % 5 == 1 ? std::nan("") : smooth(i); };
  for (const char* sample : {"GRIB1", "GRIB2"}) {
    for (const auto& message : {grib::sample_message(sample, smooth), grib::sample_message(sample, with_gaps)}) {
      const std::size_t n = grib::decode(message).size();
      for (std::size_t i = 0; i < std::min<std::size_t>(message.size(), 160); ++i) {
        for (const unsigned char x : {0x01, 0x80, 0xff}) {
          std::vector<std::byte> bad = message;
          bad[i] ^= std::byte{x};
          try {
            EXPECT_EQ(decode_v3(bad, {n}).size(), n);
          } catch (const CodecError&) {
          }
        }
      }
    }
  }
}

TEST(GribCodec, ConfigurationIsChecked) {
  const ChunkSpec spec = spec_of(DataType::float_(8), {496});
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("gribberish", {{"north_up", true}}, spec), "'north_up'");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("gribberish", {{"adjust_longitude_range", true}}, spec), "'adjust_longitude_range'");
  EXPECT_NO_THROW(make_array_to_bytes_codec("gribberish", {{"var", "t2m"}, {"north_up", false}}, spec));
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("gribberish", {{"level", 3}}, spec), "'level'");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("gribberish", {}, spec_of(DataType::int_(4), {496})), "float32 or float64");
  EXPECT_CODEC_ERROR(make_v2_bytes_codec({{"id", "grib"}, {"dtype", "<f4"}}, DataType::float_(8)), "'dtype'");
  // Read only.
  const auto codec = make_array_to_bytes_codec("gribberish", {}, spec);
  ChunkData data;
  data.bytes = Buffer(496 * 8);
  EXPECT_CODEC_ERROR(codec->encode(data, spec), "gribberish");
  EXPECT_EQ(codec->to_json(), nlohmann::json({{"name", "gribberish"}}));
}

TEST(GribCodec, NumcodecsNamesUnderZarrV3) {
  const auto message = grib::sample_message("GRIB2", smooth);
  const auto want = grib::decode(message);
  for (const char* name : {"numcodecs.grib", "numcodecs.gribberish"}) {
    SCOPED_TRACE(name);
    const auto codec = make_bytes_codec(name, nlohmann::json::object(), spec_of(DataType::float_(8), {want.size()}));
    expect_same_field(from_bytes<double>(view(decode_exact(*codec, view(message), want.size() * 8))), want);
  }
}

// The real ERA5 2 m temperature file (GRIB1, 744 messages) and its GRIB2 conversion: every
// message, as a virtual chunk's byte range, decodes as ecCodes and GDAL decode it.
void expect_file_decodes(const std::filesystem::path& path, long edition) {
  const auto messages = grib::messages_of(path);
  ASSERT_FALSE(messages.empty());
  const auto gdal = grib::gdal_fields(path);
  ASSERT_EQ(gdal.size(), messages.size());
  for (std::size_t k = 0; k < messages.size(); ++k) {
    SCOPED_TRACE("message " + std::to_string(k));
    const auto& m = messages[k];
    ASSERT_EQ(m.edition, edition);
    const auto bytes = grib::read_range(path, m);
    const auto got = decode_v3(bytes, {static_cast<std::uint64_t>(m.nj), static_cast<std::uint64_t>(m.ni)});
    expect_same_field(got, grib::decode(bytes));
    // GDAL unpacks through its own decoder (degrib), in float32 for GRIB2.
    expect_same_field(got, gdal[k], 1e-3);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(GribCodecRealFile, Era5Grib1DecodesAsEccodesAndGdal) {
  LAZYCUBE_REQUIRE_REAL_FILE(path, "era5-2mt-2019-03-uk.grib");
  expect_file_decodes(path, 1);
}

TEST(GribCodecRealFile, Era5ConvertedToGrib2DecodesAsEccodesAndGdal) {
  LAZYCUBE_REQUIRE_REAL_FILE(path, "era5-2mt-2019-03-uk.grib");
  test::TempDir tmp;
  const auto grib2 = tmp.path() / "era5.grib2";
  grib::convert_to_grib2(path, grib2);
  expect_file_decodes(grib2, 2);
}

#else  // built without ecCodes

TEST(GribCodec, RefusedNamingTheMissingLibrary) {
  const ChunkSpec spec = spec_of(DataType::float_(8), {10});
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("gribberish", {}, spec), "ecCodes");
  EXPECT_CODEC_ERROR(make_v2_bytes_codec({{"id", "grib"}}, DataType::float_(8)), "libeccodes-dev");
}

#endif  // LAZYCUBE_HAVE_ECCODES

}  // namespace
}  // namespace lazycube::codec::testing
