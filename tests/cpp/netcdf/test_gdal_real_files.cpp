// The gdal engine on the real reanalysis files (../shared/data/real, README there): structure,
// attributes, CF decoding and the README's reference figures, and every value equal to what
// GDAL's classic raster API reads from the same file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include <gdal.h>

#include "gdal_test_files.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"

using namespace lazycube;

namespace {

template <class T>
double sum_of(const NDArray& a) {
  double s = 0;
  for (T v : a.values<T>()) s += static_cast<double>(v);
  return s;
}

std::int64_t int_sum(const NDArray& a) {
  std::int64_t s = 0;
  for (std::int16_t v : a.values<std::int16_t>()) s += v;
  return s;
}

// Band `band` (1-based) of a classic-raster GDAL dataset as float64 rows, top row first.
std::vector<double> classic_band(GDALDatasetH ds, int band) {
  GDALRasterBandH b = GDALGetRasterBand(ds, band);
  const int nx = GDALGetRasterBandXSize(b), ny = GDALGetRasterBandYSize(b);
  std::vector<double> out(static_cast<std::size_t>(nx) * ny);
  EXPECT_EQ(GDALRasterIO(b, GF_Read, 0, 0, nx, ny, out.data(), nx, ny, GDT_Float64, 0, 0), CE_None);
  return out;
}

struct Closer {
  void operator()(void* ds) const { GDALClose(ds); }
};
using ClassicDataset = std::unique_ptr<void, Closer>;

ClassicDataset open_classic(const std::string& name) {
  GDALAllRegister();
  CPLPushErrorHandler(CPLQuietErrorHandler);
  ClassicDataset ds(GDALOpen(name.c_str(), GA_ReadOnly));
  CPLPopErrorHandler();
  return ds;
}

}  // namespace

TEST(GdalNetcdfClassic, StructureAttributesAndCoordinates) {
  LAZYCUBE_REQUIRE_REAL_FILE(path, "eraint_uvz.nc");
  const Dataset ds = open(path.string());
  EXPECT_EQ(ds.dim_size("longitude"), 480u);
  EXPECT_EQ(ds.dim_size("latitude"), 241u);
  EXPECT_EQ(ds.dim_size("level"), 3u);
  EXPECT_EQ(ds.dim_size("month"), 2u);
  EXPECT_EQ(ds.attrs().at("Conventions"), "CF-1.0");
  EXPECT_NE(ds.attrs().at("Info").get<std::string>().find("Monthly ERA-Interim"), std::string::npos);
  EXPECT_EQ(ds.coord_names(), (std::vector<std::string>{"longitude", "latitude", "level", "month"}));
  EXPECT_EQ(ds.data_var_names(), (std::vector<std::string>{"z", "u", "v"}));

  const Variable& z = ds["z"];
  EXPECT_EQ(z.dims(), (std::vector<std::string>{"month", "level", "latitude", "longitude"}));
  EXPECT_EQ(z.stored_dtype(), DataType::int_(2));
  EXPECT_EQ(z.dtype(), DataType::float_(8));  // int16 + add_offset → float64, as xarray
  EXPECT_EQ(z.attrs().at("units"), "m**2 s**-2");
  EXPECT_EQ(z.attrs().at("standard_name"), "geopotential");
  EXPECT_EQ(z.attrs().at("number_of_significant_digits"), 5);
  EXPECT_DOUBLE_EQ(z.encoding().at("scale_factor").get<double>(), -1.7250274674967954);
  EXPECT_DOUBLE_EQ(z.encoding().at("add_offset").get<double>(), 66825.5);
  // The double NaN _FillValue of an int16 variable masks nothing (README "Quirks").
  EXPECT_EQ(z.encoding().at("_FillValue"), "NaN");
  // No file block: one month per read unit.
  EXPECT_EQ(z.array()->chunk_shape(), (Shape{1, 3, 241, 480}));

  const NDArray lon = ds["longitude"].read();
  ASSERT_EQ(lon.dtype, DataType::float_(4));
  EXPECT_EQ(lon.values<float>()[0], -180.0f);
  EXPECT_EQ(lon.values<float>()[1], -179.25f);
  EXPECT_EQ(lon.values<float>()[479], 179.25f);
  const NDArray lat = ds["latitude"].read();
  EXPECT_EQ(lat.values<float>()[0], 90.0f);
  EXPECT_EQ(lat.values<float>()[240], -90.0f);
  const NDArray level = ds["level"].read();
  ASSERT_EQ(level.dtype, DataType::int_(4));
  EXPECT_EQ((std::vector<std::int32_t>(level.values<std::int32_t>().begin(), level.values<std::int32_t>().end())),
            (std::vector<std::int32_t>{200, 500, 850}));
  const NDArray month = ds["month"].read();
  ASSERT_EQ(month.dtype, DataType::int_(4));  // no units: stays an integer
  EXPECT_EQ(month.values<std::int32_t>()[0], 1);
  EXPECT_EQ(month.values<std::int32_t>()[1], 7);
}

TEST(GdalNetcdfClassic, PackedValuesMatchReadmeSums) {
  LAZYCUBE_REQUIRE_REAL_FILE(path, "eraint_uvz.nc");
  const Dataset ds = open(path.string());
  const std::map<std::string, std::int64_t> sums = {{"z", 2271761917}, {"u", 8838801966}, {"v", -2176930381}};
  for (const auto& [name, sum] : sums) {
    const NDArray raw = ds[name].read_raw();
    ASSERT_EQ(raw.size(), 694080u) << name;
    EXPECT_EQ(int_sum(raw), sum) << name;
    const auto [mn, mx] = std::minmax_element(raw.values<std::int16_t>().begin(), raw.values<std::int16_t>().end());
    EXPECT_EQ(*mn, -32766) << name;
    EXPECT_EQ(*mx, 32766) << name;
  }
  // v holds 781 packed zeros, none of which is masked.
  const NDArray v = ds["v"].read();
  std::size_t nan = 0;
  for (double x : v.values<double>()) nan += std::isnan(x);
  EXPECT_EQ(nan, 0u);
}

TEST(GdalNetcdfClassic, DecodedValuesMatchReadme) {
  LAZYCUBE_REQUIRE_REAL_FILE(path, "eraint_uvz.nc");
  const Dataset ds = open(path.string());
  const std::map<std::string, double> means = {
      {"z", 61179.39046444474}, {"u", 6.941047864317103}, {"v", 0.029896937927582162}};
  for (const auto& [name, mean] : means) {
    const NDArray a = ds[name].read();
    ASSERT_EQ(a.dtype, DataType::float_(8));
    EXPECT_NEAR(sum_of<double>(a) / static_cast<double>(a.size()), mean, std::abs(mean) * 1e-9 + 1e-12) << name;
  }
  // README point values [month, level, lat, lon]: packed → decoded.
  struct Point {
    std::int64_t m, l, la, lo;
    double z, u, v;
  };
  const Point points[] = {
      {0, 0, 0, 0, 106837.51210858817, 1.2817602469022766, -0.046757690899102755},
      {0, 0, 120, 240, 121748.64953763047, 0.9373378654703046, 0.5548176844900201},
      {0, 1, 60, 100, 53946.44492766893, 15.311860999206495, -9.031207082036257},
      {1, 0, 200, 333, 106858.21243819813, 23.187967328938534, 1.406292917963743},
      {1, 2, 240, 479, 11776.423457242265, 3.5385918329976214, 3.3830342428126716},
  };
  for (const auto& p : points) {
    const Indexers at = {{"month", p.m}, {"level", p.l}, {"latitude", p.la}, {"longitude", p.lo}};
    for (const auto& [name, want] : {std::pair{"z", p.z}, std::pair{"u", p.u}, std::pair{"v", p.v}}) {
      const NDArray got = ds[name].isel(at).read();
      ASSERT_EQ(got.size(), 1u);
      EXPECT_NEAR(got.values<double>()[0], want, std::abs(want) * 1e-12) << name << " at " << p.m << "," << p.l;
    }
  }
  const NDArray packed = ds["z"].isel({{"month", 1}, {"level", 2}, {"latitude", 240}, {"longitude", 479}}).read_raw();
  EXPECT_EQ(packed.values<std::int16_t>()[0], 31912);
}

TEST(GdalNetcdfClassic, EqualsGdalClassicRasterApi) {
  LAZYCUBE_REQUIRE_REAL_FILE(path, "eraint_uvz.nc");
  const Dataset ds = open(path.string());
  for (const char* name : {"z", "u", "v"}) {
    auto classic = open_classic("NETCDF:\"" + path.string() + "\":" + name);
    ASSERT_TRUE(classic) << name;
    const NDArray raw = ds[name].read_raw();
    const auto values = raw.values<std::int16_t>();
    for (int band = 1; band <= 6; ++band) {  // band = month*3 + level + 1
      const auto ref = classic_band(classic.get(), band);
      const std::size_t offset = static_cast<std::size_t>(band - 1) * ref.size();
      std::size_t diff = 0;
      for (std::size_t i = 0; i < ref.size(); ++i) diff += static_cast<double>(values[offset + i]) != ref[i];
      EXPECT_EQ(diff, 0u) << name << " band " << band;
    }
  }
}

TEST(GdalNetcdfClassic, SelectionsByPositionAndLabel) {
  LAZYCUBE_REQUIRE_REAL_FILE(path, "eraint_uvz.nc");
  const Dataset ds = open(path.string());
  const NDArray all = ds["u"].read();
  // Strided, reversed selection equals picking from the full read.
  const Variable sub = ds["u"].isel({{"latitude", Slice{200, 10, -7}}, {"longitude", Slice{5, 400, 11}}});
  const NDArray part = sub.read();
  ASSERT_EQ(part.shape, (Shape{2, 3, 28, 36}));
  const auto full = all.values<double>();
  const auto got = part.values<double>();
  std::size_t k = 0, diff = 0;
  for (std::size_t m = 0; m < 2; ++m)
    for (std::size_t l = 0; l < 3; ++l)
      for (std::size_t la = 200; la > 10; la -= 7)
        for (std::size_t lo = 5; lo < 400; lo += 11) diff += got[k++] != full[((m * 3 + l) * 241 + la) * 480 + lo];
  EXPECT_EQ(k, got.size());
  EXPECT_EQ(diff, 0u);
  // Label selection on the descending latitude and on level.
  const Variable s = ds["z"].sel({{"level", Label(500)}, {"latitude", LabelSlice(Label(45.0), Label(44.25))},
                                  {"longitude", Label(-100.5)}});
  EXPECT_EQ(s.shape(), (Shape{2, 2}));
  const NDArray sv = s.read();
  const NDArray ref = ds["z"].isel({{"level", 1}, {"latitude", Slice{60, 62, 1}}, {"longitude", 106}}).read();
  EXPECT_EQ(std::memcmp(sv.data.data(), ref.data.data(), sv.data.size()), 0);
}

TEST(GdalGrib, StructureTimesAndCoordinates) {
  LAZYCUBE_REQUIRE_REAL_FILE(path, "era5-2mt-2019-03-uk.grib");
  const Dataset ds = open(path.string());
  ASSERT_EQ(ds.data_var_names(), (std::vector<std::string>{"2T_0-SFC"}));
  const Variable& t2m = ds["2T_0-SFC"];
  EXPECT_EQ(t2m.dims(), (std::vector<std::string>{"TIME", "Y", "X"}));
  EXPECT_EQ(t2m.shape(), (Shape{744, 33, 49}));
  EXPECT_EQ(t2m.dtype(), DataType::float_(8));
  EXPECT_EQ(t2m.attrs().at("units"), "K");  // GRIB_NORMALIZE_UNITS=NO: the unit of the values
  // One GRIB message per read unit.
  EXPECT_EQ(t2m.array()->chunk_shape(), (Shape{1, 33, 49}));

  const NDArray time = ds["TIME"].read();
  ASSERT_EQ(time.dtype, DataType::datetime("ns"));
  const auto ns = time.values<std::int64_t>();
  ASSERT_EQ(ns.size(), 744u);
  EXPECT_EQ(ns[0], std::int64_t{1551398400} * 1000000000);   // 2019-03-01T00Z
  EXPECT_EQ(ns[743], std::int64_t{1554073200} * 1000000000);  // 2019-03-31T23Z
  for (std::size_t i = 1; i < ns.size(); ++i) ASSERT_EQ(ns[i] - ns[i - 1], std::int64_t{3600} * 1000000000);
  // GDAL's multidimensional GRIB view runs Y south to north (the file stores rows north first).
  const NDArray y = ds["Y"].read(), x = ds["X"].read();
  EXPECT_DOUBLE_EQ(y.values<double>()[0], 50.0);
  EXPECT_DOUBLE_EQ(y.values<double>()[32], 58.0);
  EXPECT_DOUBLE_EQ(x.values<double>()[0], -10.0);
  EXPECT_DOUBLE_EQ(x.values<double>()[48], 2.0);
}

TEST(GdalGrib, ValuesMatchReadmeAndGdalClassicApi) {
  LAZYCUBE_REQUIRE_REAL_FILE(path, "era5-2mt-2019-03-uk.grib");
  const Dataset ds = open(path.string());
  const NDArray t = ds["2T_0-SFC"].read();
  const auto v = t.values<double>();
  EXPECT_NEAR(sum_of<double>(t) / static_cast<double>(v.size()), 280.774058585, 280.774058585 * 1e-9);
  EXPECT_NEAR(*std::min_element(v.begin(), v.end()), 265.6801758, 1e-6);
  EXPECT_NEAR(*std::max_element(v.begin(), v.end()), 291.5588379, 1e-6);
  // README indices count rows north to south as stored; Y index = 32 - row.
  auto at = [&](std::size_t i, std::size_t r, std::size_t c) { return v[(i * 33 + (32 - r)) * 49 + c]; };
  EXPECT_EQ(at(0, 0, 0), 282.4248046875);
  EXPECT_EQ(at(0, 0, 48), 279.4091796875);
  EXPECT_EQ(at(0, 32, 0), 283.8759765625);
  EXPECT_EQ(at(0, 16, 24), 281.2958984375);
  EXPECT_EQ(at(371, 10, 20), 278.53271484375);
  EXPECT_EQ(at(743, 32, 48), 281.454833984375);
  EXPECT_EQ(at(743, 16, 24), 280.331787109375);

  auto classic = open_classic(path.string());
  ASSERT_TRUE(classic);
  ASSERT_EQ(GDALGetRasterCount(classic.get()), 744);
  std::size_t diff = 0;
  for (int band = 1; band <= 744; band += 1) {
    const auto ref = classic_band(classic.get(), band);  // rows north first
    for (std::size_t r = 0; r < 33; ++r)
      for (std::size_t c = 0; c < 49; ++c) diff += ref[r * 49 + c] != at(band - 1, r, c);
  }
  EXPECT_EQ(diff, 0u);
}

TEST(GdalGrib, TimeLabelSelection) {
  LAZYCUBE_REQUIRE_REAL_FILE(path, "era5-2mt-2019-03-uk.grib");
  const Dataset ds = open(path.string());
  const Variable day = ds["2T_0-SFC"].sel({{"TIME", LabelSlice(Label("2019-03-16T00:00"), Label("2019-03-16T23:00"))}});
  EXPECT_EQ(day.shape(), (Shape{24, 33, 49}));
  const NDArray a = day.read();
  const NDArray b = ds["2T_0-SFC"].isel({{"TIME", Slice{360, 384, 1}}}).read();
  EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size()), 0);
  EXPECT_EQ(a.values<double>()[(11 * 33 + (32 - 10)) * 49 + 20], 278.53271484375);  // README [371,10,20]
}
