// CF decoding rules, checked against what xarray 2023.01's open_zarr returns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "dataset_fake_array.hpp"
#include "lazycube/dataset/cf_time.hpp"
#include "lazycube/dataset/dataset.hpp"

using namespace lazycube;
using lazycube::testing::FakeArray;

namespace {

std::vector<double> as_doubles(const NDArray& a) {
  std::vector<double> out;
  for (std::uint64_t i = 0; i < a.size(); ++i) {
    const std::byte* p = a.data.data() + i * a.dtype.itemsize;
    if (a.dtype.kind == DTypeKind::Float && a.dtype.itemsize == 4) {
      float f;
      std::memcpy(&f, p, 4);
      out.push_back(f);
    } else if (a.dtype.kind == DTypeKind::Float) {
      double d;
      std::memcpy(&d, p, 8);
      out.push_back(d);
    } else {
      std::int64_t v;
      std::memcpy(&v, p, 8);
      out.push_back(static_cast<double>(v));
    }
  }
  return out;
}

std::vector<std::int64_t> as_int64(const NDArray& a) {
  auto s = a.values<std::int64_t>();
  return {s.begin(), s.end()};
}

struct DtypeCase {
  const char* what;
  DataType stored;
  nlohmann::json attrs;
  bool zarr_fill;  // v2 fill value 0 present
  DataType expected;
};

}  // namespace

// Expected dtypes: xarray's rules given the attributes' types (xarray >= 2024.02
// _choose_float_dtype; maybe_promote when nothing scales). JSON numbers that are exactly a
// float32 and spell shorter as one (0.10000000149011612 = float32(0.1)) count as float32.
TEST(CfDecodeDtype, PromotionTable) {
  const double f32_tenth = static_cast<double>(0.1f), f32_offset = static_cast<double>(1.3f);
  const std::vector<DtypeCase> cases = {
      {"int16 plain", DataType::int_(2), nlohmann::json::object(), false, DataType::int_(2)},
      {"int8 masked", DataType::int_(1), {{"_FillValue", -1}}, false, DataType::float_(4)},
      {"int16 masked", DataType::int_(2), {{"_FillValue", -1}}, false, DataType::float_(4)},
      {"uint16 masked", DataType::uint(2), {{"missing_value", 9}}, false, DataType::float_(4)},
      {"int32 masked", DataType::int_(4), {{"_FillValue", -1}}, false, DataType::float_(8)},
      {"int64 zarr fill", DataType::int_(8), nlohmann::json::object(), true, DataType::float_(8)},
      {"int16 float64 scale", DataType::int_(2), {{"scale_factor", 0.1}}, false, DataType::float_(8)},
      {"int16 float32 scale", DataType::int_(2), {{"scale_factor", f32_tenth}}, false, DataType::float_(4)},
      {"int16 float64 scale+offset", DataType::int_(2), {{"scale_factor", 0.1}, {"add_offset", 1.0}}, false,
       DataType::float_(8)},
      {"int16 masked float64 scale+offset", DataType::int_(2),
       {{"scale_factor", 0.1}, {"add_offset", 1.0}}, true, DataType::float_(8)},
      {"int16 masked float32 scale+offset", DataType::int_(2),
       {{"scale_factor", f32_tenth}, {"add_offset", f32_offset}}, true, DataType::float_(4)},
      {"int16 float32 scale, float64 offset", DataType::int_(2),
       {{"scale_factor", f32_tenth}, {"add_offset", 1.0}}, false, DataType::float_(8)},
      {"int32 float32 scale+offset", DataType::int_(4),
       {{"scale_factor", f32_tenth}, {"add_offset", f32_offset}}, false, DataType::float_(8)},
      {"float32 float32 scale", DataType::float_(4), {{"scale_factor", f32_tenth}}, false, DataType::float_(4)},
      {"float32 float64 scale", DataType::float_(4), {{"scale_factor", 0.1}}, false, DataType::float_(8)},
      {"int32 integer scale", DataType::int_(4), {{"scale_factor", 2}}, false, DataType::float_(8)},
      {"float16 integer scale", DataType::float_(2), {{"scale_factor", 2}}, false, DataType::float_(8)},
      {"float64 offset", DataType::float_(8), {{"add_offset", 2}}, false, DataType::float_(8)},
      {"float32 NaN fill", DataType::float_(4), {{"_FillValue", "NaN"}}, false, DataType::float_(4)},
      {"int64 time", DataType::int_(8), {{"units", "hours since 1900-01-01"}}, false,
       DataType::datetime("ns")},
      {"float time", DataType::float_(4), {{"units", "days since 2000-01-01"}}, false,
       DataType::datetime("ns")},
      {"noleap stays", DataType::float_(4),
       {{"units", "days since 2000-01-01"}, {"calendar", "noleap"}}, false, DataType::float_(4)},
      {"timedelta", DataType::float_(8), {{"units", "days"}}, false, DataType::timedelta("ns")},
      {"plain units", DataType::float_(4), {{"units", "K"}}, false, DataType::float_(4)},
      {"bool fill", DataType::boolean(), nlohmann::json::object(), true, DataType::boolean()},
  };
  for (const auto& c : cases) {
    CfInputs inputs;
    if (c.zarr_fill && c.stored.itemsize > 0) {
      Buffer zero(c.stored.itemsize);
      std::memset(zero.data(), 0, zero.size());
      inputs.array_fill_bytes = zero;
    }
    const CfDecoding plan = CfDecoding::plan(c.stored, c.attrs, inputs);
    EXPECT_EQ(plan.decoded_dtype(), c.expected)
        << c.what << ": got " << plan.decoded_dtype().name() << ", want " << c.expected.name();
  }
}

TEST(CfDecodeAttrs, CfAttributesMoveToEncoding) {
  const nlohmann::json attrs = {{"scale_factor", 0.5},   {"add_offset", 10},
                                {"_FillValue", -999},    {"missing_value", -998},
                                {"units", "K"},          {"long_name", "temperature"},
                                {"coordinates", "a b"}};
  const CfDecoding plan = CfDecoding::plan(DataType::int_(2), attrs);
  EXPECT_EQ(plan.attrs(), (nlohmann::json{{"units", "K"}, {"long_name", "temperature"}}));
  EXPECT_EQ(plan.encoding()["scale_factor"], 0.5);
  EXPECT_EQ(plan.encoding()["add_offset"], 10);
  EXPECT_EQ(plan.encoding()["_FillValue"], -999);
  EXPECT_EQ(plan.encoding()["missing_value"], -998);
  const CfDecoding time = CfDecoding::plan(
      DataType::int_(8), {{"units", "hours since 1900-01-01"}, {"calendar", "gregorian"}});
  EXPECT_TRUE(time.attrs().empty());
  EXPECT_EQ(time.encoding()["calendar"], "gregorian");
  const CfDecoding raw = CfDecoding::identity(DataType::int_(2), attrs);
  EXPECT_EQ(raw.attrs(), attrs);
  EXPECT_TRUE(raw.is_identity());
}

TEST(CfDecodeValues, MaskScaleOffsetInFloat32) {
  // float32 attributes as JSON carries them (their exact float64 values).
  const double scale = static_cast<double>(0.1f), offset = static_cast<double>(1.3f);
  auto a = FakeArray::of(DataType::int_(2), {4}, std::vector<std::int16_t>{0, 1, -32768, 300});
  a->with_dims({"x"}).with_attrs({{"scale_factor", scale}, {"add_offset", offset}}).with_fill(std::int16_t{-32768});
  const Variable v = variable_from_array("v", a, true, 2);
  ASSERT_EQ(v.dtype(), DataType::float_(4));
  const NDArray out = v.read();
  auto f = out.values<float>();
  // float32 arithmetic as numpy: float32(x) * float32(0.1) + float32(1.3)
  EXPECT_EQ(f[0], 1.3f);
  EXPECT_EQ(f[1], 1.0f * 0.1f + 1.3f);
  EXPECT_TRUE(std::isnan(f[2]));
  EXPECT_EQ(f[3], 300.0f * 0.1f + 1.3f);
  // Zarr v3: the fill value alone does not mask; the type still follows the attributes.
  const Variable v3 = variable_from_array("v", a, true, 3);
  EXPECT_EQ(v3.dtype(), DataType::float_(4));
  EXPECT_EQ(v3.read().values<float>()[2], -32768.0f * 0.1f + 1.3f);
  // float64 attributes: float64, masked or not.
  auto b = FakeArray::of(DataType::int_(2), {2}, std::vector<std::int16_t>{5, -32768});
  b->with_dims({"x"}).with_attrs({{"scale_factor", 0.1}, {"add_offset", 1.5}}).with_fill(std::int16_t{-32768});
  const Variable v64 = variable_from_array("v", b, true, 2);
  ASSERT_EQ(v64.dtype(), DataType::float_(8));
  EXPECT_EQ(as_doubles(v64.read())[0], 5 * 0.1 + 1.5);
  EXPECT_TRUE(std::isnan(as_doubles(v64.read())[1]));
  // Raw access keeps the stored values.
  EXPECT_EQ(v.read_raw().values<std::int16_t>()[2], -32768);
  const Variable raw = variable_from_array("v", a, false, 2);
  EXPECT_EQ(raw.dtype(), DataType::int_(2));
  EXPECT_EQ(raw.attrs()["scale_factor"], scale);
}

TEST(CfDecodeValues, ScaleInFloat64WithOffset) {
  auto a = FakeArray::of(DataType::int_(2), {2}, std::vector<std::int16_t>{7, -3});
  a->with_dims({"x"}).with_attrs({{"scale_factor", 0.01}, {"add_offset", 273.15}});
  const Variable v = variable_from_array("v", a, true, 2);
  ASSERT_EQ(v.dtype(), DataType::float_(8));
  const auto d = as_doubles(v.read());
  EXPECT_EQ(d[0], 7.0 * 0.01 + 273.15);
  EXPECT_EQ(d[1], -3.0 * 0.01 + 273.15);
}

TEST(CfDecodeValues, MissingValueListAndInt32Promotion) {
  auto a = FakeArray::of(DataType::int_(4), {4}, std::vector<std::int32_t>{1, 2, 3, 4});
  a->with_dims({"x"}).with_attrs({{"missing_value", {2, 4}}});
  const Variable v = variable_from_array("v", a, true, 3);
  ASSERT_EQ(v.dtype(), DataType::float_(8));
  const auto d = as_doubles(v.read());
  EXPECT_EQ(d[0], 1.0);
  EXPECT_TRUE(std::isnan(d[1]));
  EXPECT_EQ(d[2], 3.0);
  EXPECT_TRUE(std::isnan(d[3]));
}

TEST(CfDecodeTime, HoursSinceWithFillBecomesNaT) {
  auto a = FakeArray::of(DataType::int_(8), {3}, std::vector<std::int64_t>{0, 1, -1});
  a->with_dims({"time"}).with_attrs({{"units", "hours since 1900-01-01T00:00:00+02:00"}}).with_fill(std::int64_t{-1});
  const Variable v = variable_from_array("time", a, true, 2);
  ASSERT_EQ(v.dtype(), DataType::datetime("ns"));
  const auto t = as_int64(v.read());
  // xarray: ['1899-12-31T22:00', '1899-12-31T23:00', 'NaT']
  EXPECT_EQ(cf::format_datetime_ns(t[0]), "1899-12-31T22:00:00");
  EXPECT_EQ(cf::format_datetime_ns(t[1]), "1899-12-31T23:00:00");
  EXPECT_EQ(t[2], cf::kNaT);
}

TEST(CfDecodeTime, IntegerAndFloatOffsets) {
  auto a = FakeArray::of(DataType::int_(4), {2}, std::vector<std::int32_t>{0, 36});
  a->with_dims({"time"}).with_attrs({{"units", "hours since 2019-03-01"}});
  const auto t = as_int64(variable_from_array("time", a, true, 3).read());
  EXPECT_EQ(cf::format_datetime_ns(t[1]), "2019-03-02T12:00:00");
  auto f = FakeArray::of(DataType::float_(8), {2}, std::vector<double>{1.5, NAN});
  f->with_dims({"time"}).with_attrs({{"units", "days since 2000-01-01 00:00:00"}});
  const auto u = as_int64(variable_from_array("time", f, true, 3).read());
  EXPECT_EQ(cf::format_datetime_ns(u[0]), "2000-01-02T12:00:00");
  EXPECT_EQ(u[1], cf::kNaT);
}

TEST(CfDecodeTime, TimedeltaUnits) {
  auto a = FakeArray::of(DataType::float_(8), {2}, std::vector<double>{1.5, 2});
  a->with_dims({"x"}).with_attrs({{"units", "days"}});
  const Variable v = variable_from_array("td", a, true, 3);
  ASSERT_EQ(v.dtype(), DataType::timedelta("ns"));
  EXPECT_EQ(as_int64(v.read()), (std::vector<std::int64_t>{129600000000000, 172800000000000}));
}

TEST(CfTime, ParsesReferenceDates) {
  struct Case {
    const char* text;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"1900-01-01", "1900-01-01T00:00:00"},
      {"1900-1-1", "1900-01-01T00:00:00"},
      {"1900-01-01 00:00:00", "1900-01-01T00:00:00"},
      {"1900-01-01T00:00:00Z", "1900-01-01T00:00:00"},
      {"2000-01-01T00:00:00+05:00", "1999-12-31T19:00:00"},
      {"2000-01-01 00:00:00 -0330", "2000-01-01T03:30:00"},
      {"2019-03-01T06:00", "2019-03-01T06:00:00"},
      {"1970-01-01T00:00:00.25", "1970-01-01T00:00:00.250000000"},
      {"1969-12-31T23:59:59", "1969-12-31T23:59:59"},
  };
  for (const auto& c : cases) {
    const auto ns = cf::parse_datetime_ns(c.text);
    ASSERT_TRUE(ns) << c.text;
    EXPECT_EQ(cf::format_datetime_ns(*ns), c.expected) << c.text;
  }
  EXPECT_FALSE(cf::parse_datetime_ns("yesterday"));
  EXPECT_FALSE(cf::parse_datetime_ns("2019-13-01"));
  const auto units = cf::parse_time_units("Hours since 1900-01-01");
  ASSERT_TRUE(units);
  EXPECT_EQ(units->unit_ns, 3600LL * 1000000000LL);
  EXPECT_FALSE(cf::parse_time_units("months since 1900-01-01"));
  EXPECT_FALSE(cf::parse_time_units("hours"));
}
