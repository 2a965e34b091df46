// End to end: hand-written Zarr v2 stores (JSON metadata + raw uncompressed chunks) opened
// with lazycube::open, decoded, selected and read.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lazycube/dataset/cf_time.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"

using namespace lazycube;
namespace fs = std::filesystem;

namespace {

class TempStore {
 public:
  TempStore() {
    root_ = fs::temp_directory_path() /
            ("lazycube-dataset-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
             "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    write(".zgroup", R"({"zarr_format": 2})");
  }
  ~TempStore() { fs::remove_all(root_); }
  std::string path() const { return root_.string(); }

  void write(const std::string& key, std::string_view bytes) const {
    const fs::path p = root_ / key;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  // One array stored as a single uncompressed chunk.
  template <class T>
  void array(const std::string& name, const std::string& dtype, const std::vector<std::uint64_t>& shape,
             const std::vector<T>& values, const nlohmann::json& attrs,
             nlohmann::json fill = nullptr) const {
    nlohmann::json meta = {{"zarr_format", 2}, {"shape", shape},     {"chunks", shape},
                           {"dtype", dtype},   {"compressor", nullptr}, {"fill_value", fill},
                           {"order", "C"},     {"filters", nullptr}};
    write(name + "/.zarray", meta.dump());
    write(name + "/.zattrs", attrs.dump());
    std::string key = name + "/";
    for (std::size_t i = 0; i < shape.size(); ++i) key += (i ? ".0" : "0");
    write(key, std::string_view(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
  }

 private:
  fs::path root_;
};

void write_cube(const TempStore& s) {
  s.array<double>("lat", "<f8", {3}, {60, 30, 0}, {{"_ARRAY_DIMENSIONS", {"lat"}}, {"units", "degrees_north"}});
  s.array<std::int64_t>("time", "<i8", {2}, {0, 6},
                        {{"_ARRAY_DIMENSIONS", {"time"}}, {"units", "hours since 2019-03-01"},
                         {"calendar", "proleptic_gregorian"}});
  s.array<std::int16_t>("t", "<i2", {2, 3}, {0, 10, -32767, 20, 30, 40},
                        {{"_ARRAY_DIMENSIONS", {"time", "lat"}}, {"scale_factor", 0.5},
                         {"add_offset", 270.0}, {"long_name", "temperature"}},
                        -32767);
  s.array<float>("plain", "<f4", {3}, {1, 2, 3}, {{"_ARRAY_DIMENSIONS", {"lat"}}}, "NaN");
}

}  // namespace

TEST(DatasetOpen, GroupVariablesDimsCoordsAndDecoding) {
  TempStore s;
  write_cube(s);
  s.write(".zattrs", R"({"title": "hand made"})");
  const Dataset ds = open(s.path());
  EXPECT_EQ(ds.attrs()["title"], "hand made");
  EXPECT_EQ(ds.dim_size("lat"), 3u);
  EXPECT_EQ(ds.dim_size("time"), 2u);
  EXPECT_EQ(ds.coord_names(), (std::vector<std::string>{"lat", "time"}));
  const Variable& t = ds["t"];
  EXPECT_EQ(t.dims(), (std::vector<std::string>{"time", "lat"}));
  EXPECT_EQ(t.dtype(), DataType::float_(8));  // float64 scale/offset -> float64, masked or not
  EXPECT_EQ(t.attrs(), (nlohmann::json{{"long_name", "temperature"}}));
  EXPECT_EQ(t.encoding()["_FillValue"], -32767);
  const NDArray v = t.read();
  auto f = v.values<double>();
  EXPECT_EQ(f[0], 270.0);
  EXPECT_EQ(f[1], 275.0);
  EXPECT_TRUE(std::isnan(f[2]));
  EXPECT_EQ(f[5], 290.0);
  EXPECT_EQ(t.read_raw().values<std::int16_t>()[2], -32767);
  EXPECT_EQ(ds["plain"].dtype(), DataType::float_(4));
  const NDArray time = ds["time"].read();
  EXPECT_EQ(cf::format_datetime_ns(time.values<std::int64_t>()[1]), "2019-03-01T06:00:00");
}

TEST(DatasetOpen, RawOpenLeavesEverythingAsStored) {
  TempStore s;
  write_cube(s);
  OpenOptions o;
  o.decode_cf = false;
  const Dataset ds = open(s.path(), o);
  EXPECT_EQ(ds["t"].dtype(), DataType::int_(2));
  EXPECT_EQ(ds["t"].attrs()["scale_factor"], 0.5);
  EXPECT_FALSE(ds["t"].attrs().contains("_ARRAY_DIMENSIONS"));
  EXPECT_EQ(ds["time"].dtype(), DataType::int_(8));
}

TEST(DatasetOpen, SelectionsReadTheRightValues) {
  TempStore s;
  write_cube(s);
  const Dataset ds = open(s.path());
  const Dataset sub = ds.sel({{"time", Label("2019-03-01T06:00")}, {"lat", LabelSlice(30.0, 0.0)}});
  const NDArray v = sub["t"].read();
  ASSERT_EQ(v.shape, (Shape{2}));
  EXPECT_EQ(v.values<double>()[0], 285.0);
  EXPECT_EQ(v.values<double>()[1], 290.0);
  const NDArray r = ds["t"].isel({{"lat", Slice{std::nullopt, std::nullopt, -1}}, {"time", std::int64_t{0}}}).read();
  // Row 0 is {0, 10, fill} stored -> reversed: NaN, 275, 270.
  EXPECT_TRUE(std::isnan(r.values<double>()[0]));
  EXPECT_EQ(r.values<double>()[1], 275.0);
  EXPECT_EQ(r.values<double>()[2], 270.0);
  try {
    (void)ds.isel({{"lat", std::int64_t{3}}});
    FAIL();
  } catch (const SelectionError& e) {
    EXPECT_NE(std::string(e.what()).find("'lat'"), std::string::npos) << e.what();
  }
  try {
    (void)ds.sel({{"lat", Label(45.0)}});
    FAIL();
  } catch (const SelectionError& e) {
    EXPECT_NE(std::string(e.what()).find("45"), std::string::npos) << e.what();
  }
}

TEST(DatasetOpen, SingleArrayUrlIsOneVariable) {
  TempStore s;
  s.array<std::int32_t>("grid", "<i4", {2, 2}, {1, 2, 3, 4}, nlohmann::json::object());
  const Dataset ds = open(s.path() + "/grid");
  ASSERT_EQ(ds.variable_names(), std::vector<std::string>{"grid"});
  EXPECT_EQ(ds["grid"].dims(), (std::vector<std::string>{"dim_0", "dim_1"}));
  EXPECT_EQ(ds["grid"].read().values<std::int32_t>()[3], 4);
}

TEST(DatasetOpen, ConflictingDimSizesAreMetadataErrors) {
  TempStore s;
  s.array<double>("a", "<f8", {3}, {1, 2, 3}, {{"_ARRAY_DIMENSIONS", {"x"}}});
  s.array<double>("b", "<f8", {2}, {1, 2}, {{"_ARRAY_DIMENSIONS", {"x"}}});
  try {
    (void)open(s.path());
    FAIL();
  } catch (const MetadataError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'a'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'b'"), std::string::npos) << msg;
  }
}

TEST(DatasetOpen, MissingPathIsNotFound) {
  EXPECT_THROW((void)open("/nonexistent/lazycube/store.zarr"), NotFound);
}

// A decoded read converts absent chunks' fill value too (and v2's fill_value masks like _FillValue).
TEST(DatasetOpen, DecodedReadOfAbsentChunks) {
  TempStore s;
  const nlohmann::json meta = {{"zarr_format", 2}, {"shape", {6}},        {"chunks", {2}},
                               {"dtype", "<i2"},   {"compressor", nullptr}, {"fill_value", -32767},
                               {"order", "C"},     {"filters", nullptr}};
  s.write("p/.zarray", meta.dump());
  s.write("p/.zattrs", R"({"_ARRAY_DIMENSIONS": ["x"], "scale_factor": 0.5, "add_offset": 10.0})");
  const std::int16_t chunk0[2] = {4, -32767};  // chunks 1 and 2 are absent
  s.write("p/0", std::string_view(reinterpret_cast<const char*>(chunk0), sizeof chunk0));
  const Dataset ds = open(s.path());
  const Variable& p = ds["p"];
  ASSERT_EQ(p.dtype(), DataType::float_(8));
  const NDArray all = p.read();
  const auto v = all.values<double>();
  EXPECT_EQ(v[0], 12.0);
  for (std::size_t i = 1; i < 6; ++i) EXPECT_TRUE(std::isnan(v[i])) << i;
  const NDArray strided = p.isel({{"x", Slice{4, std::nullopt, -4}}}).read();
  ASSERT_EQ(strided.shape, (Shape{2}));
  EXPECT_TRUE(std::isnan(strided.values<double>()[0]));
  EXPECT_EQ(strided.values<double>()[1], 12.0);
}
