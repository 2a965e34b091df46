// CF valid_range / valid_min / valid_max masking (OpenOptions::mask_valid_range, netCDF4-python's
// rule): hand-written Zarr v2/v3 stores opened with and without the option, read whole, through
// a strided selection, through absent chunks and through the batch generator.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "lazycube/batch/batch_generator.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "test_support.hpp"

using namespace lazycube;
using lazycube::test::message_of;
using lazycube::test::TempDir;

namespace {

constexpr double kRangeNaN = std::numeric_limits<double>::quiet_NaN();

void put(const TempDir& dir, const std::string& key, std::string_view bytes) {
  const auto p = dir.path() / key;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

template <class T>
std::string_view bytes_of(const std::vector<T>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)};
}

// A Zarr v2 array over dim x, chunks of 4 (all written), no fill value.
template <class T>
void v2_array(const TempDir& dir, const std::string& name, const std::string& dtype, const std::vector<T>& values,
              nlohmann::json attrs) {
  const nlohmann::json meta = {{"zarr_format", 2}, {"shape", {values.size()}}, {"chunks", {4}},
                               {"dtype", dtype},   {"compressor", nullptr},    {"fill_value", nullptr},
                               {"order", "C"},     {"filters", nullptr}};
  attrs["_ARRAY_DIMENSIONS"] = {"x"};
  put(dir, name + "/.zarray", meta.dump());
  put(dir, name + "/.zattrs", attrs.dump());
  for (std::size_t c = 0; c * 4 < values.size(); ++c) {
    const std::vector<T> chunk(values.begin() + static_cast<std::ptrdiff_t>(c * 4),
                               values.begin() + static_cast<std::ptrdiff_t>(std::min(values.size(), c * 4 + 4)));
    put(dir, name + "/" + std::to_string(c), bytes_of(chunk));
  }
}

const std::vector<std::int16_t> kPacked{-5, 0, 10, 100, 101, 200, -32768, 50};

// packed: int16 * 0.5 + 10 with valid_min/valid_max (and a _FillValue); ranged: int16 with
// valid_range; temp: float32 with valid_max only.
void write_store(const TempDir& dir) {
  put(dir, ".zgroup", R"({"zarr_format": 2})");
  v2_array(dir, "packed", "<i2", kPacked,
           {{"scale_factor", 0.5}, {"add_offset", 10.0}, {"valid_min", 0}, {"valid_max", 100}, {"_FillValue", -32768}});
  v2_array(dir, "ranged", "<i2", kPacked, {{"valid_range", {0, 100}}});
  v2_array(dir, "temp", "<f4", std::vector<float>{-1.5f, 0, 20.25f, 40, 40.5f, 1e30f, -40, 39.9f},
           {{"valid_max", 40.0}, {"units", "degC"}});
}

Dataset open_store(const TempDir& dir, bool mask) {
  OpenOptions o;
  o.mask_valid_range = mask;
  return lazycube::open(dir.str(), o);
}

std::vector<double> doubles(const NDArray& a) {
  std::vector<double> out;
  for (std::uint64_t i = 0; i < a.size(); ++i) {
    const std::byte* p = a.data.data() + i * a.dtype.itemsize;
    if (a.dtype == DataType::float_(4)) {
      float f;
      std::memcpy(&f, p, 4);
      out.push_back(f);
    } else if (a.dtype == DataType::float_(8)) {
      double d;
      std::memcpy(&d, p, 8);
      out.push_back(d);
    } else if (a.dtype == DataType::int_(2)) {
      std::int16_t v;
      std::memcpy(&v, p, 2);
      out.push_back(v);
    } else {
      ADD_FAILURE() << "unexpected dtype " << a.dtype.name();
    }
  }
  return out;
}

void expect_same(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(got[i])) << what << " element " << i << " = " << got[i];
    else
      EXPECT_EQ(got[i], want[i]) << what << " element " << i;
  }
}

// The expected decoded packed values: stored outside [lo, hi] (when masking) or the fill -> NaN.
std::vector<double> packed_expected(bool mask) {
  std::vector<double> out;
  for (std::int16_t s : kPacked) {
    const bool masked = s == -32768 || (mask && (s < 0 || s > 100));
    out.push_back(masked ? kRangeNaN : s * 0.5 + 10.0);
  }
  return out;
}

}  // namespace

TEST(CfValidRange, MasksStoredValuesOutsideTheRangeOnlyWhenAsked) {
  TempDir dir;
  write_store(dir);
  const Dataset masked = open_store(dir, true);
  const Dataset plain = open_store(dir, false);

  // Packed: compared before scale/offset; float64 like the scale.
  ASSERT_EQ(masked["packed"].dtype(), DataType::float_(8));
  expect_same(doubles(masked["packed"].read()), packed_expected(true), "packed masked");
  expect_same(doubles(plain["packed"].read()), packed_expected(false), "packed plain");
  EXPECT_FALSE(masked["packed"].attrs().contains("valid_min"));
  EXPECT_EQ(masked["packed"].encoding()["valid_min"], 0);
  EXPECT_EQ(masked["packed"].encoding()["valid_max"], 100);
  EXPECT_EQ(plain["packed"].attrs()["valid_min"], 0);
  EXPECT_FALSE(plain["packed"].encoding().contains("valid_min"));

  // valid_range on an unscaled int16: promoted to float32 to hold NaN; untouched without.
  ASSERT_EQ(masked["ranged"].dtype(), DataType::float_(4));
  std::vector<double> ranged;
  for (std::int16_t s : kPacked) ranged.push_back(s < 0 || s > 100 ? kRangeNaN : s);
  expect_same(doubles(masked["ranged"].read()), ranged, "ranged masked");
  EXPECT_EQ(masked["ranged"].encoding()["valid_range"], nlohmann::json({0, 100}));
  ASSERT_EQ(plain["ranged"].dtype(), DataType::int_(2));
  expect_same(doubles(plain["ranged"].read()), {-5, 0, 10, 100, 101, 200, -32768, 50}, "ranged plain");
  EXPECT_EQ(plain["ranged"].attrs()["valid_range"], nlohmann::json({0, 100}));

  // float32 with valid_max only (a float64 attribute compared as float32, the stored type).
  ASSERT_EQ(masked["temp"].dtype(), DataType::float_(4));
  expect_same(doubles(masked["temp"].read()), {-1.5, 0, 20.25, 40, kRangeNaN, kRangeNaN, -40, static_cast<double>(39.9f)},
              "temp masked");
  expect_same(doubles(plain["temp"].read()), {-1.5, 0, 20.25, 40, 40.5, static_cast<double>(1e30f), -40,
                                              static_cast<double>(39.9f)},
              "temp plain");
  EXPECT_EQ(masked["temp"].attrs()["units"], "degC");

  // Raw reads keep the stored values.
  expect_same(doubles(masked["ranged"].read_raw()), {-5, 0, 10, 100, 101, 200, -32768, 50}, "ranged raw");
}

TEST(CfValidRange, StridedSelectionMasksToo) {
  TempDir dir;
  write_store(dir);
  const Dataset masked = open_store(dir, true);
  const Indexers every_third{{"x", Slice{1, 8, 3}}};  // stored 0, 101, 50
  expect_same(doubles(masked["packed"].isel(every_third).read()), {10, kRangeNaN, 35}, "packed strided");
  expect_same(doubles(masked["ranged"].isel(Indexers{{"x", Slice{7, std::nullopt, -2}}}).read()),
              {50, kRangeNaN, 100, 0}, "ranged reversed");
}

TEST(CfValidRange, AbsentChunksFillValueIsMaskedWhenOutside) {
  // Zarr v3: the fill value alone does not mask; the range does. Chunk c/1 is absent.
  TempDir dir;
  const nlohmann::json meta = {
      {"zarr_format", 3},
      {"node_type", "array"},
      {"shape", {8}},
      {"data_type", "int16"},
      {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {4}}}}}},
      {"chunk_key_encoding", {{"name", "default"}, {"configuration", {{"separator", "/"}}}}},
      {"fill_value", -1},
      {"codecs", {{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}}},
      {"attributes", {{"valid_min", 0}}},
      {"dimension_names", {"x"}}};
  put(dir, "zarr.json", meta.dump());
  put(dir, "c/0", bytes_of(std::vector<std::int16_t>{3, -2, 0, 7}));
  OpenOptions o;
  o.mask_valid_range = true;
  const Dataset masked = lazycube::open(dir.str(), o);
  const std::string name = masked.data_var_names().front();
  expect_same(doubles(masked[name].read()), {3, kRangeNaN, 0, 7, kRangeNaN, kRangeNaN, kRangeNaN, kRangeNaN}, "v3 masked");
  expect_same(doubles(masked[name].isel(Indexers{{"x", Slice{3, 6, 1}}}).read()), {7, kRangeNaN, kRangeNaN}, "v3 slice");
  const Dataset plain = lazycube::open(dir.str());
  expect_same(doubles(plain[name].read()), {3, -2, 0, 7, -1, -1, -1, -1}, "v3 plain");
}

TEST(CfValidRange, BatchesMaskLikeDirectReads) {
  TempDir dir;
  write_store(dir);
  batch::BatchOptions o;
  o.input_dims = {{"x", 4}};
  o.batch_size = 2;
  o.variables = {"packed"};
  batch::BatchGenerator g(open_store(dir, true), o);
  auto b = g.next();
  ASSERT_TRUE(b.has_value());
  const batch::BatchArray& x = b->arrays[0];
  ASSERT_EQ(x.dtype, DataType::float_(8));
  ASSERT_EQ(x.shape, (Shape{2, 1, 4}));
  std::vector<double> got(8);
  std::memcpy(got.data(), x.data.get(), 8 * sizeof(double));
  // Windows in grid order (no shuffle): 0..3 then 4..7.
  expect_same(got, packed_expected(true), "batch");
}

TEST(CfValidRange, BadAttributesAreMetadataErrorsOnlyWhenAsked) {
  const auto open_with = [](const nlohmann::json& attrs, bool mask) {
    TempDir dir;
    put(dir, ".zgroup", R"({"zarr_format": 2})");
    v2_array(dir, "sst", "<i2", std::vector<std::int16_t>{1, 2, 3, 4}, attrs);
    OpenOptions o;
    o.mask_valid_range = mask;
    return lazycube::open(dir.str(), o)["sst"].read().size();
  };
  for (const nlohmann::json& attrs :
       {nlohmann::json{{"valid_range", {1}}}, nlohmann::json{{"valid_range", {1, 2, 3}}},
        nlohmann::json{{"valid_range", "1,2"}}, nlohmann::json{{"valid_range", {"a", 2}}}}) {
    const std::string msg = message_of<MetadataError>([&] { open_with(attrs, true); });
    EXPECT_NE(msg.find("'sst'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("valid_range"), std::string::npos) << msg;
    EXPECT_EQ(open_with(attrs, false), 4u);
  }
  const std::string msg = message_of<MetadataError>([&] { open_with({{"valid_max", "high"}}, true); });
  EXPECT_NE(msg.find("'sst'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("valid_max"), std::string::npos) << msg;
  EXPECT_EQ(open_with({{"valid_max", "high"}}, false), 4u);
}
