// CF encoding (src/dataset/cf_encode.cpp): each rule, bad input, and the round trip through
// CfDecoding. tests/python/test_cf_encoding.py compares the same rules with xarray itself.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>
#include <nlohmann/json.hpp>

#include "lazycube/dataset/cf.hpp"
#include "lazycube/dataset/cf_encode.hpp"
#include "lazycube/dataset/cf_time.hpp"
#include "lazycube/error.hpp"

using namespace lazycube;

namespace {

constexpr std::int64_t kEncodeHour = 3'600'000'000'000;
const double kEncodeNaN = std::numeric_limits<double>::quiet_NaN();

template <class T>
NDArray make(const DataType& dtype, const std::vector<T>& values) {
  NDArray a;
  a.dtype = dtype;
  a.shape = {values.size()};
  a.data.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(a.data.data(), values.data(), values.size() * sizeof(T));
  return a;
}

std::int64_t ns_of(const char* text) { return *cf::parse_datetime_ns(text); }

template <class T>
std::vector<T> encoded_values(const NDArray& a) {
  auto s = a.values<T>();
  return {s.begin(), s.end()};
}

bool same_bytes(const NDArray& a, const NDArray& b) {
  return a.dtype == b.dtype && a.data.size() == b.data.size() &&
         std::memcmp(a.data.data(), b.data.data(), a.data.size()) == 0;
}

// Encodes, then decodes what was written (stored dtype + attributes) as a reader would.
NDArray round_trip(const NDArray& values, const nlohmann::json& encoding, const nlohmann::json& attrs = {}) {
  const auto [stored, written] = CfEncoding::encode(values, attrs, encoding, "v");
  return CfDecoding::plan(stored.dtype, written).apply(stored);
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

}  // namespace

TEST(CfEncodeFloat, NaNStaysAndIsTheFillValue) {
  const NDArray v = make<float>(DataType::float_(4), {1.5f, static_cast<float>(kEncodeNaN), -3.25f});
  const auto [stored, attrs] = CfEncoding::encode(v, nlohmann::json::object(), nlohmann::json::object(), "t2m");
  EXPECT_EQ(stored.dtype, DataType::float_(4));
  EXPECT_EQ(attrs, nlohmann::json({{"_FillValue", "NaN"}}));
  EXPECT_TRUE(same_bytes(stored, v));
  EXPECT_TRUE(same_bytes(round_trip(v, nlohmann::json::object()), v));
}

TEST(CfEncodeFloat, ExplicitNullFillValueWritesNone) {
  const NDArray v = make<double>(DataType::float_(8), {1.0, kEncodeNaN});
  const auto [stored, attrs] = CfEncoding::encode(v, {{"long_name", "x"}}, {{"_FillValue", nullptr}}, "v");
  EXPECT_EQ(attrs, nlohmann::json({{"long_name", "x"}}));
  EXPECT_TRUE(same_bytes(stored, v));
}

TEST(CfEncodeFloat, NumericFillReplacesNaNAndRoundTrips) {
  const NDArray v = make<double>(DataType::float_(8), {2.0, kEncodeNaN});
  const auto [stored, attrs] = CfEncoding::encode(v, nlohmann::json::object(), {{"_FillValue", -9999}}, "v");
  EXPECT_EQ(attrs["_FillValue"], -9999.0);
  EXPECT_EQ(encoded_values<double>(stored), (std::vector<double>{2.0, -9999.0}));
  const auto back = encoded_values<double>(round_trip(v, {{"_FillValue", -9999}}));
  EXPECT_EQ(back[0], 2.0);
  EXPECT_TRUE(std::isnan(back[1]));
}

TEST(CfEncodePacked, ScaleOffsetFillRoundTripWithinHalfAStep) {
  const std::vector<float> x = {-1.234f, 0.0f, 273.15f, static_cast<float>(kEncodeNaN), 1000.04f};
  const NDArray v = make<float>(DataType::float_(4), x);
  const nlohmann::json enc = {{"dtype", "<i2"}, {"scale_factor", 0.05}, {"add_offset", 300.0}, {"_FillValue", -32767}};
  const auto [stored, attrs] = CfEncoding::encode(v, nlohmann::json::object(), enc, "msl");
  EXPECT_EQ(stored.dtype, DataType::int_(2));
  EXPECT_EQ(attrs["_FillValue"], -32767);
  EXPECT_EQ(attrs["scale_factor"], 0.05);
  EXPECT_EQ(attrs["add_offset"], 300.0);
  EXPECT_FALSE(attrs.contains("dtype"));
  EXPECT_EQ(encoded_values<std::int16_t>(stored)[3], -32767);
  const NDArray back = round_trip(v, enc);
  ASSERT_EQ(back.dtype, DataType::float_(8));  // float64 attributes decode to float64
  const auto b = encoded_values<double>(back);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(b[i]));
    } else {
      EXPECT_LE(std::fabs(b[i] - x[i]), 0.05 / 2 + 1e-4) << i;
    }
  }
}

TEST(CfEncodePacked, FloatToIntegerRoundsHalfToEven) {
  const NDArray v = make<double>(DataType::float_(8), {0.5, 1.5, 2.5, -0.5, -1.5, 2.4999});
  const auto [stored, attrs] = CfEncoding::encode(v, nlohmann::json::object(), {{"dtype", "<i4"}}, "v");
  EXPECT_EQ(encoded_values<std::int32_t>(stored), (std::vector<std::int32_t>{0, 2, 2, 0, -2, 2}));
  EXPECT_TRUE(attrs.empty());  // integers get no default fill
}

TEST(CfEncodePacked, ScaleOnlyOnSmallIntegersComputesInFloat32) {
  // int16 data with a scale and no offset: xarray scales in float32. 0.1f * 3 != 0.3 in
  // float32, so float64 arithmetic could round differently; the value must equal the float32 one.
  const NDArray v = make<std::int16_t>(DataType::int_(2), {3, 7, -20});
  const auto [stored, attrs] = CfEncoding::encode(v, nlohmann::json::object(), {{"scale_factor", 0.1}}, "v");
  ASSERT_EQ(stored.dtype, DataType::float_(4));
  const auto s = encoded_values<float>(stored);
  EXPECT_EQ(s[0], 3.0f / 0.1f);
  EXPECT_EQ(s[2], -20.0f / 0.1f);
  EXPECT_EQ(attrs["_FillValue"], "NaN");
}

TEST(CfEncodePacked, ValueOutsideThePackedTypeIsAnError) {
  const NDArray v = make<double>(DataType::float_(8), {1.0, 40000.0});
  const std::string e = error_of([&] { CfEncoding::encode(v, {}, {{"dtype", "<i2"}}, "precip"); });
  EXPECT_NE(e.find("'precip'"), std::string::npos) << e;
  EXPECT_NE(e.find("element 1"), std::string::npos) << e;
  EXPECT_NE(e.find("int16"), std::string::npos) << e;
  const NDArray neg = make<std::int32_t>(DataType::int_(4), {-1});
  EXPECT_NE(error_of([&] { CfEncoding::encode(neg, {}, {{"dtype", "|u1"}}, "v"); }).find("uint8"), std::string::npos);
}

TEST(CfEncodePacked, NaNWithoutFillIntoIntegersIsAnError) {
  const NDArray v = make<double>(DataType::float_(8), {1.0, kEncodeNaN});
  const std::string e = error_of([&] { CfEncoding::encode(v, {}, {{"dtype", "<i2"}, {"scale_factor", 0.5}}, "sst"); });
  EXPECT_NE(e.find("'sst'"), std::string::npos) << e;
  EXPECT_NE(e.find("_FillValue"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { CfEncoding::encode(v, {}, {{"dtype", "<i2"}, {"_FillValue", 1e6}}, "v"); }).find("does not fit"),
            std::string::npos);
}

TEST(CfEncodeMask, MissingValueFillsAndConflictsAreErrors) {
  const NDArray v = make<double>(DataType::float_(8), {1.0, kEncodeNaN});
  const auto [stored, attrs] = CfEncoding::encode(v, {}, {{"missing_value", -9}}, "v");
  EXPECT_EQ(encoded_values<double>(stored)[1], -9.0);
  EXPECT_EQ(attrs["missing_value"], -9.0);
  EXPECT_EQ(attrs["_FillValue"], "NaN");  // xarray adds the NaN default beside missing_value
  const std::string e = error_of([&] { CfEncoding::encode(v, {}, {{"missing_value", -9}, {"_FillValue", -8}}, "v"); });
  EXPECT_NE(e.find("conflict"), std::string::npos) << e;
  EXPECT_NO_THROW(CfEncoding::encode(v, {}, {{"missing_value", -9}, {"_FillValue", -9}}, "v"));
}

TEST(CfEncodeMask, AttributeSetTwiceIsAnError) {
  const NDArray v = make<double>(DataType::float_(8), {1.0});
  const std::string e = error_of([&] { CfEncoding::encode(v, {{"_FillValue", 0}}, {{"_FillValue", 1}}, "v"); });
  EXPECT_NE(e.find("_FillValue"), std::string::npos) << e;
  // A fill value only in the attributes is kept as it is, and no NaN default is added.
  const auto [stored, attrs] = CfEncoding::encode(v, {{"_FillValue", 0}}, {}, "v");
  EXPECT_EQ(attrs, nlohmann::json({{"_FillValue", 0}}));
}

TEST(CfEncodeBool, Int8WithDtypeAttribute) {
  const NDArray v = make<std::uint8_t>(DataType::boolean(), {1, 0, 1});
  const auto [stored, attrs] = CfEncoding::encode(v, {}, {}, "mask");
  EXPECT_EQ(stored.dtype, DataType::int_(1));
  EXPECT_EQ(encoded_values<std::int8_t>(stored), (std::vector<std::int8_t>{1, 0, 1}));
  EXPECT_EQ(attrs, nlohmann::json({{"dtype", "bool"}}));
  // CfDecoding leaves int8 + dtype="bool" to the Python backend (xarray_backend.py): the
  // stored values come back unchanged.
  const CfDecoding d = CfDecoding::plan(stored.dtype, attrs);
  EXPECT_TRUE(same_bytes(d.apply(stored), stored));
}

TEST(CfEncodeIntegers, Int64IsBitExact) {
  const NDArray v = make<std::int64_t>(DataType::int_(8), {std::numeric_limits<std::int64_t>::max(), -1, 0});
  const auto [stored, attrs] = CfEncoding::encode(v, {{"units", "m"}}, {}, "v");
  EXPECT_TRUE(same_bytes(stored, v));
  EXPECT_EQ(attrs, nlohmann::json({{"units", "m"}}));
}

TEST(CfEncodeDatetime, InfersCoarsestUnitSinceFirstValue) {
  const NDArray v = make<std::int64_t>(DataType::datetime("ns"),
                                       {ns_of("2000-01-01T06:00"), ns_of("2000-01-01T12:00"), ns_of("2000-01-02")});
  const auto [stored, attrs] = CfEncoding::encode(v, {}, {}, "time");
  EXPECT_EQ(attrs["units"], "hours since 2000-01-01 06:00:00");
  EXPECT_EQ(attrs["calendar"], "proleptic_gregorian");
  EXPECT_FALSE(attrs.contains("_FillValue"));
  ASSERT_EQ(stored.dtype, DataType::int_(8));
  EXPECT_EQ(encoded_values<std::int64_t>(stored), (std::vector<std::int64_t>{0, 6, 18}));
  EXPECT_TRUE(same_bytes(round_trip(v, {}), v));
}

TEST(CfEncodeDatetime, NaTMakesFloatWithNaNAndRoundTrips) {
  const NDArray v = make<std::int64_t>(DataType::datetime("ns"), {cf::kNaT, ns_of("2000-01-01"), ns_of("2000-01-03")});
  const auto [stored, attrs] = CfEncoding::encode(v, {}, {}, "time");
  EXPECT_EQ(attrs["units"], "days since 2000-01-01 00:00:00");  // the first valid value
  EXPECT_EQ(attrs["_FillValue"], "NaN");
  ASSERT_EQ(stored.dtype, DataType::float_(8));
  EXPECT_TRUE(std::isnan(encoded_values<double>(stored)[0]));
  EXPECT_EQ(encoded_values<double>(stored)[2], 2.0);
  EXPECT_TRUE(same_bytes(round_trip(v, {}), v));
}

TEST(CfEncodeDatetime, ExplicitUnitsAreCleanedAndFractionsStayFloat) {
  const NDArray v = make<std::int64_t>(DataType::datetime("ns"), {ns_of("2000-01-01"), ns_of("2000-01-02T06:00")});
  const nlohmann::json enc = {{"units", "days since 1999-12-31 12:00"}};
  const auto [stored, attrs] = CfEncoding::encode(v, {}, enc, "time");
  EXPECT_EQ(attrs["units"], "days since 1999-12-31T12:00:00");
  EXPECT_EQ(encoded_values<double>(stored), (std::vector<double>{0.5, 1.75}));
  EXPECT_TRUE(same_bytes(round_trip(v, enc), v));
  // A reference with a zone keeps it (pandas prints the local time and the offset).
  const auto [s2, a2] = CfEncoding::encode(v, {}, {{"units", "Hours since 2000-01-01T00:00:00+05:00"}}, "time");
  EXPECT_EQ(a2["units"], "Hours since 2000-01-01T00:00:00+05:00");
  EXPECT_EQ(encoded_values<std::int64_t>(s2), (std::vector<std::int64_t>{5, 35}));
  EXPECT_EQ(a2["calendar"], "proleptic_gregorian");
}

TEST(CfEncodeDatetime, IntegerDtypeWithFillForNaT) {
  const NDArray v = make<std::int64_t>(DataType::datetime("ns"), {ns_of("2000-01-03"), cf::kNaT});
  const nlohmann::json enc = {{"units", "days since 2000-01-01"}, {"dtype", "<i4"}, {"_FillValue", -1}, {"calendar", "standard"}};
  const auto [stored, attrs] = CfEncoding::encode(v, {}, enc, "time");
  EXPECT_EQ(encoded_values<std::int32_t>(stored), (std::vector<std::int32_t>{2, -1}));
  EXPECT_EQ(attrs["_FillValue"], -1);
  EXPECT_EQ(attrs["calendar"], "standard");
  EXPECT_TRUE(same_bytes(round_trip(v, enc), v));
}

TEST(CfEncodeDatetime, ExactBeyondFloat64WhenStoredAsIntegers) {
  // ns since 1970 in 2020 is ~1.6e18 > 2^53: integers keep every nanosecond (xarray, with a
  // NaT present, divides in float64 and rounds).
  const std::int64_t t = ns_of("2020-05-17T01:02:03.123456789");
  const NDArray v = make<std::int64_t>(DataType::datetime("ns"), {t, cf::kNaT});
  const nlohmann::json enc = {{"units", "nanoseconds since 1970-01-01"}, {"dtype", "<i8"}, {"_FillValue", -1}};
  const auto [stored, attrs] = CfEncoding::encode(v, {}, enc, "time");
  EXPECT_EQ(encoded_values<std::int64_t>(stored), (std::vector<std::int64_t>{t, -1}));
}

// cftime's count for datetime64 values in other calendars: the Gregorian fields read as a date
// of the calendar. 2000-03-01T06:00 is day 31 + 28 = 59 of a noleap year, 31 + 29 = 60 of an
// all_leap or Julian one (2000 is leap in both), 30 + 30 = 60 of a 360_day one.
TEST(CfEncodeDatetime, OtherCalendarsCountTheirOwnDays) {
  const NDArray v = make<std::int64_t>(DataType::datetime("ns"), {ns_of("2000-01-01"), ns_of("2000-03-01T06:00")});
  const std::vector<std::pair<const char*, std::int64_t>> cases = {
      {"noleap", 59 * 24 + 6}, {"365_day", 59 * 24 + 6}, {"all_leap", 60 * 24 + 6},
      {"366_day", 60 * 24 + 6}, {"julian", 60 * 24 + 6},  {"360_day", 60 * 24 + 6}};
  for (const auto& [calendar, hours] : cases) {
    const auto [stored, attrs] = CfEncoding::encode(v, {}, {{"calendar", calendar}}, "time");
    EXPECT_EQ(attrs["units"], "hours since 2000-01-01 00:00:00") << calendar;
    EXPECT_EQ(attrs["calendar"], calendar);
    EXPECT_EQ(encoded_values<std::int64_t>(stored), (std::vector<std::int64_t>{0, hours})) << calendar;
  }
  // Julian and Gregorian dates differ by 13 days since 1900: the same fields, counted from a
  // Julian reference 100 years back (36525 days: every 4th year leap), not 36524.
  const auto [s2, a2] = CfEncoding::encode(v, {}, {{"calendar", "julian"}, {"units", "days since 1900-01-01"}}, "time");
  EXPECT_EQ(encoded_values<double>(s2)[0], 36525.0);
  // cftime counts microseconds: finer parts are dropped (floor), as xarray's values show.
  const NDArray fine = make<std::int64_t>(DataType::datetime("ns"), {ns_of("2000-01-01") + 1500});
  const auto [s3, a3] = CfEncoding::encode(fine, {}, {{"calendar", "noleap"}, {"units", "seconds since 2000-01-01"}}, "time");
  EXPECT_EQ(encoded_values<double>(s3)[0], 1e-6);
}

TEST(CfEncodeDatetime, CoarserInputUnitsConvertToNanoseconds) {
  const NDArray v = make<std::int64_t>(DataType::datetime("s"), {0, 7200});
  const auto [stored, attrs] = CfEncoding::encode(v, {}, {}, "time");
  EXPECT_EQ(attrs["units"], "hours since 1970-01-01 00:00:00");
  EXPECT_EQ(encoded_values<std::int64_t>(stored), (std::vector<std::int64_t>{0, 2}));
}

TEST(CfEncodeDatetime, BadUnitsCalendarsAndMissingValuesAreErrors) {
  const NDArray v = make<std::int64_t>(DataType::datetime("ns"), {0});
  EXPECT_NE(error_of([&] { CfEncoding::encode(v, {}, {{"calendar", "martian"}}, "time"); }).find("unknown calendar 'martian'"),
            std::string::npos);
  const NDArray leap_day = make<std::int64_t>(DataType::datetime("ns"), {ns_of("2000-01-01"), ns_of("2000-02-29")});
  EXPECT_NE(error_of([&] { CfEncoding::encode(leap_day, {}, {{"calendar", "noleap"}}, "time"); })
                .find("2000-02-29T00:00:00 does not exist in calendar 'noleap'"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              CfEncoding::encode(v, {}, {{"calendar", "360_day"}, {"units", "days since 1999-12-31"}}, "time");
            }).find("does not exist in calendar '360_day'"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              CfEncoding::encode(v, {}, {{"calendar", "julian"}, {"units", "days since 2000-01-01T00:00+01:00"}}, "time");
            }).find("time zone"),
            std::string::npos);
  EXPECT_NE(error_of([&] { CfEncoding::encode(v, {}, {{"units", "fortnights since 2000-01-01"}}, "time"); }).find("fortnights"),
            std::string::npos);
  EXPECT_NE(error_of([&] { CfEncoding::encode(v, {}, {{"units", "days since yesterday"}}, "time"); }).find("'time'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { CfEncoding::encode(v, {{"units", "s"}}, {}, "time"); }).find("units"), std::string::npos);
  EXPECT_NE(error_of([&] { CfEncoding::plan(v.dtype, {}, {}, "time"); }).find("needs its values"), std::string::npos);
  // With units and dtype the plan needs no values; a fraction of the unit then rounds.
  const CfEncoding p = CfEncoding::plan(v.dtype, {}, {{"units", "hours since 1970-01-01"}, {"dtype", "<i8"}}, "time");
  EXPECT_EQ(encoded_values<std::int64_t>(p.apply(make<std::int64_t>(v.dtype, {kEncodeHour * 3 + kEncodeHour / 2 + 1}))),
            (std::vector<std::int64_t>{4}));
}

// A writer encodes chunk by chunk: with units and dtype (encoding_of gives both) the plan needs
// no values, and chunks encode as the whole does.
TEST(CfEncodeDatetime, ChunksEncodeAsTheWhole) {
  const std::vector<std::int64_t> t = {ns_of("2000-01-01"), cf::kNaT, ns_of("2000-01-01T18:00"), ns_of("2000-01-03")};
  const nlohmann::json enc = {{"units", "days since 2000-01-01"}, {"dtype", "<f4"}, {"_FillValue", -1}};
  const CfEncoding plan = CfEncoding::plan(DataType::datetime("ns"), {}, enc, "time");
  const NDArray whole = plan.apply(make<std::int64_t>(DataType::datetime("ns"), t));
  const NDArray first = plan.apply(make<std::int64_t>(DataType::datetime("ns"), {t[0], t[1]}));
  const NDArray second = plan.apply(make<std::int64_t>(DataType::datetime("ns"), {t[2], t[3]}));
  EXPECT_EQ(encoded_values<float>(whole), (std::vector<float>{0.0f, -1.0f, 0.75f, 2.0f}));
  EXPECT_EQ(encoded_values<float>(first), (std::vector<float>{0.0f, -1.0f}));
  EXPECT_EQ(encoded_values<float>(second), (std::vector<float>{0.75f, 2.0f}));
  EXPECT_EQ(plan.stored_dtype(), DataType::float_(4));
  EXPECT_EQ(plan.attrs()["_FillValue"], -1.0);
}

TEST(CfEncodeTimedelta, InfersUnitsAndRoundTrips) {
  const NDArray v = make<std::int64_t>(DataType::timedelta("ns"), {kEncodeHour, 2 * kEncodeHour, -3 * kEncodeHour});
  const auto [stored, attrs] = CfEncoding::encode(v, {}, {}, "lead");
  EXPECT_EQ(attrs, nlohmann::json({{"units", "hours"}}));
  EXPECT_EQ(encoded_values<std::int64_t>(stored), (std::vector<std::int64_t>{1, 2, -3}));
  EXPECT_TRUE(same_bytes(round_trip(v, {}), v));
  // NaT -> float64 NaN; days of 6 hours -> fractions.
  const NDArray w = make<std::int64_t>(DataType::timedelta("ns"), {6 * kEncodeHour, cf::kNaT});
  const auto [s2, a2] = CfEncoding::encode(w, {}, {{"units", "days"}}, "lead");
  EXPECT_EQ(a2["units"], "days");
  EXPECT_EQ(a2["_FillValue"], "NaN");
  EXPECT_EQ(encoded_values<double>(s2)[0], 0.25);
  EXPECT_TRUE(same_bytes(round_trip(w, {{"units", "days"}}), w));
  EXPECT_NE(error_of([&] { CfEncoding::encode(v, {}, {{"units", "weeks"}}, "lead"); }).find("weeks"), std::string::npos);
}

TEST(CfEncodeOther, StringsPassThroughAndBadEncodingsAreErrors) {
  NDArray s;
  s.dtype = DataType::string();
  s.shape = {2};
  s.strings = {"a", "bc"};
  const auto [stored, attrs] = CfEncoding::encode(s, {{"long_name", "station"}}, {}, "name");
  EXPECT_EQ(stored.strings, s.strings);
  EXPECT_EQ(attrs, nlohmann::json({{"long_name", "station"}}));
  EXPECT_NE(error_of([&] { CfEncoding::encode(s, {}, {{"scale_factor", 2}}, "name"); }).find("scale_factor"),
            std::string::npos);
  const NDArray v = make<double>(DataType::float_(8), {1.0});
  EXPECT_NE(error_of([&] { CfEncoding::encode(v, {}, {{"dtype", "float-ish"}}, "v"); }).find("float-ish"),
            std::string::npos);
  EXPECT_NE(error_of([&] { CfEncoding::encode(v, {}, {{"dtype", "<U4"}}, "v"); }).find("cannot store"), std::string::npos);
  EXPECT_NE(error_of([&] { CfEncoding::encode(v, {}, {{"scale_factor", "big"}}, "v"); }).find("scale_factor"),
            std::string::npos);
  EXPECT_NE(error_of([&] { CfEncoding::encode(v, {}, {{"scale_factor", 0}}, "v"); }).find("0"), std::string::npos);
  EXPECT_NE(error_of([&] { CfEncoding::encode(v, {}, nlohmann::json::array(), "v"); }).find("object"), std::string::npos);
  EXPECT_NE(error_of([&] { CfEncoding::encode(v, {}, {{"_Unsigned", "true"}}, "v"); }).find("_Unsigned"),
            std::string::npos);
  EXPECT_NE(error_of([&] { CfEncoding::encode(v, {}, {{"units", "K"}}, "v"); }).find("attributes"), std::string::npos);
  // Keys of the array writer are not the encoding's business.
  EXPECT_NO_THROW(CfEncoding::encode(v, {}, {{"chunks", {10}}, {"compressor", nullptr}}, "v"));
  const CfEncoding p = CfEncoding::plan(v.dtype, {}, {}, "v");
  EXPECT_NE(error_of([&] { p.apply(make<float>(DataType::float_(4), {1.0f})); }).find("float32"), std::string::npos);
}

// What CfDecoding reads, CfEncoding writes back byte for byte with the decoding's own encoding.
TEST(CfEncodeInverse, DecodedVariablesEncodeToTheStoredBytes) {
  struct Case {
    const char* what;
    NDArray raw;
    nlohmann::json attrs;
  };
  const std::vector<Case> cases = {
      {"packed int16", make<std::int16_t>(DataType::int_(2), {-32767, 0, 12345, -2}),
       {{"scale_factor", 0.01}, {"add_offset", 280.0}, {"_FillValue", -32767}, {"long_name", "t"}}},
      {"packed float32 attrs", make<std::int16_t>(DataType::int_(2), {-1, 3, 500}),
       {{"scale_factor", static_cast<double>(0.1f)}, {"_FillValue", -1}}},
      {"masked float32", make<float>(DataType::float_(4), {1.5f, -999.0f}), {{"_FillValue", -999.0}}},
      {"hours since", make<std::int64_t>(DataType::int_(8), {0, 6, 12}),
       {{"units", "hours since 1900-01-01"}, {"calendar", "standard"}}},
      {"float days with fill", make<double>(DataType::float_(8), {0.5, -1.0, 2.25}),
       {{"units", "days since 2000-01-01T06:00:00"}, {"calendar", "proleptic_gregorian"}, {"_FillValue", -1.0}}},
      {"timedelta hours", make<std::int32_t>(DataType::int_(4), {1, -2}), {{"units", "hours"}}},
      {"noleap numbers", make<std::int32_t>(DataType::int_(4), {0, 365}),
       {{"units", "days since 2000-01-01"}, {"calendar", "noleap"}}},
      {"coordinates", make<float>(DataType::float_(4), {1.0f}), {{"coordinates", "lat lon"}, {"_FillValue", "NaN"}}},
  };
  for (const auto& c : cases) {
    const CfDecoding d = CfDecoding::plan(c.raw.dtype, c.attrs);
    const NDArray decoded = d.apply(c.raw);
    const auto [stored, attrs] = CfEncoding::encode(decoded, d.attrs(), CfEncoding::encoding_of(d), "v");
    EXPECT_TRUE(same_bytes(stored, c.raw)) << c.what;
    for (const auto& [key, value] : c.attrs.items()) EXPECT_EQ(attrs[key], value) << c.what << " " << key;
  }
}

TEST(CfTimeText, PandasAndXarrayReferenceFormats) {
  const std::int64_t t = ns_of("2000-01-01T06:00:00.5");
  EXPECT_EQ(cf::format_pandas_timestamp(ns_of("2000-01-01")), "2000-01-01 00:00:00");
  EXPECT_EQ(cf::format_pandas_timestamp(t), "2000-01-01 06:00:00.500000");
  EXPECT_EQ(cf::format_pandas_timestamp(ns_of("2000-01-01") + 1), "2000-01-01 00:00:00.000000001");
  EXPECT_EQ(cf::format_reference_date(ns_of("1900-01-01")), "1900-01-01");
  EXPECT_EQ(cf::format_reference_date(t), "2000-01-01T06:00:00.500000");
  const auto zoned = cf::parse_datetime("2000-01-01 00:00 -03:30");
  ASSERT_TRUE(zoned && zoned->offset_s);
  EXPECT_EQ(*zoned->offset_s, -(3 * 3600 + 30 * 60));
  EXPECT_EQ(cf::format_reference_date(zoned->ns, zoned->offset_s), "2000-01-01T00:00:00-03:30");
  EXPECT_EQ(cf::format_pandas_timestamp(*cf::parse_datetime_ns("2000-01-01Z"), 0), "2000-01-01 00:00:00+00:00");
  EXPECT_FALSE(cf::parse_datetime("2000-01-01")->offset_s);
  EXPECT_TRUE(cf::is_cf_calendar("NoLeap"));
  EXPECT_FALSE(cf::is_cf_calendar("martian"));
  EXPECT_TRUE(cf::is_time_unit("hours"));
  EXPECT_FALSE(cf::is_time_unit("hour"));  // xarray decodes only the plural spellings
}
