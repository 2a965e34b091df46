// Files for the GDAL-engine tests: the real reanalysis files in ../shared/data/real and the
// NetCDF-4 fixture written by tests/python/netcdf4_fixture.py (netCDF4-python).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "test_support.hpp"

namespace lazycube::test {

#define LAZYCUBE_REQUIRE_REAL_FILE(var, name)                                                         \
  const auto var = ::lazycube::test::shared_data_dir().empty()                                         \
                       ? std::filesystem::path()                                                       \
                       : ::lazycube::test::shared_data_dir() / "real" / (name);                        \
  if (var.empty() || !std::filesystem::exists(var))                                                    \
  GTEST_SKIP() << "real file " << (name) << " not found (../shared/data/real or $LAZYCUBE_SHARED_DATA)"

// Writes the NetCDF-4 fixture into `dir`; returns its path, or "" with `skip` set when
// /usr/bin/python3 or its netCDF4 module is missing.
inline std::string make_netcdf4_fixture(const fs::path& dir, std::string& skip) {
  if (std::system("/usr/bin/python3 -c 'import netCDF4' >/dev/null 2>&1") != 0) {
    skip = "/usr/bin/python3 with netCDF4-python is needed to write the NetCDF-4 fixture";
    return "";
  }
  const fs::path out = dir / "fixture_nc4.nc";
  const std::string cmd = "/usr/bin/python3 " + std::string(LAZYCUBE_SOURCE_DIR) +
                          "/tests/python/netcdf4_fixture.py '" + out.string() + "'";
  if (std::system(cmd.c_str()) != 0 || !fs::exists(out)) throw std::runtime_error("failed: " + cmd);
  return out.string();
}

// A test with the NetCDF-4 fixture written into its own folder (skipped without netCDF4-python).
class Netcdf4FixtureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string skip;
    path_ = make_netcdf4_fixture(dir_.path(), skip);
    if (path_.empty()) GTEST_SKIP() << skip;
  }
  TempDir dir_;
  std::string path_;
};

// The fixture's formulas (see netcdf4_fixture.py).
constexpr int kFxT = 6, kFxY = 20, kFxX = 30;
inline int fixture_t_packed(int t, int y, int x) {
  if ((t == 1 && y == 2 && x == 3) || (t == 5 && y == 19 && x == 29)) return -32767;
  return (t * 7 + y * 3 + x) % 2000 - 1000;
}
inline float fixture_w(int t, int y, int x) {
  return static_cast<float>(t + 0.1 * y + 0.01 * x);
}

}  // namespace lazycube::test
