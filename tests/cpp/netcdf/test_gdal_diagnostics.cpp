// GDAL's diagnostics are captured, never printed: messages through GDAL's error handler and the
// text GRIB's degrib prints with printf become lazycube warnings (util/diagnostics.hpp), and
// stdout and stderr stay clean (issue 16: `lazycube info FILE.grib --json` must be JSON).
#include <gtest/gtest.h>

#include <cpl_error.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "netcdf/gdal_guard.hpp"
#include "netcdf/stdout_capture.hpp"
#include "gdal_test_files.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "util/diagnostics.hpp"
#include "nginx_server.hpp"

using namespace lazycube;

namespace {

bool contains(const std::vector<std::string>& texts, const std::string& part) {
  return std::any_of(texts.begin(), texts.end(), [&](const std::string& t) { return t.find(part) != std::string::npos; });
}

}  // namespace

TEST(Diagnostics, SameWarningKeptOnceUntilTaken) {
  diagnostics::take_warnings();
  diagnostics::warn("first\n");
  diagnostics::warn("second");
  diagnostics::warn("first");
  EXPECT_EQ(diagnostics::take_warnings(), (std::vector<std::string>{"first", "second"}));
  EXPECT_TRUE(diagnostics::take_warnings().empty());
  diagnostics::warn("first");
  EXPECT_EQ(diagnostics::take_warnings(), std::vector<std::string>{"first"});
}

TEST(Diagnostics, KeepsAHundredAndCountsTheRest) {
  diagnostics::take_warnings();
  for (int i = 0; i < 130; ++i) diagnostics::warn("warning " + std::to_string(i));
  const auto got = diagnostics::take_warnings();
  ASSERT_EQ(got.size(), 101u);
  EXPECT_EQ(got[0], "warning 0");
  EXPECT_EQ(got[99], "warning 99");
  EXPECT_EQ(got[100], "30 more warnings not kept");
  EXPECT_TRUE(diagnostics::take_warnings().empty());
}

TEST(GdalDiagnostics, ErrorHandlerMessagesBecomeWarningsNotStderr) {
  diagnostics::take_warnings();
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  {
    netcdf::GdalCallGuard guard;
    CPLError(CE_Warning, CPLE_AppDefined, "odd attribute %d", 7);
    CPLError(CE_Failure, CPLE_AppDefined, "a failure GDAL recovered from");
    EXPECT_EQ(guard.last_error(), "a failure GDAL recovered from");
  }
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(diagnostics::take_warnings(),
            (std::vector<std::string>{"GDAL: odd attribute 7", "GDAL: a failure GDAL recovered from"}));
}

TEST(GdalDiagnostics, MessagesOfAFailedCallGoWithItsException) {
  diagnostics::take_warnings();
  ::testing::internal::CaptureStderr();
  try {
    netcdf::GdalCallGuard guard;
    CPLError(CE_Failure, CPLE_AppDefined, "cannot read block");
    throw std::runtime_error("GDAL could not read: " + guard.last_error());
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "GDAL could not read: cannot read block");
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_TRUE(diagnostics::take_warnings().empty());
}

TEST(StdoutCapture, TakesWhatPrintfWritesAndRestoresStdout) {
  ::testing::internal::CaptureStdout();
  std::printf("before ");
  std::string captured;
  {
    netcdf::StdoutCapture capture;
    std::printf("Warning: from a library\n");
    std::fputs("ERROR: more\n", stdout);
    captured = capture.take();
  }
  std::printf("after\n");
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "before after\n");
  EXPECT_EQ(captured, "Warning: from a library\nERROR: more\n");
}

TEST(GdalDiagnostics, GribInventoryTextIsAWarningNotStdout) {
  LAZYCUBE_REQUIRE_REAL_FILE(path, "era5-2mt-2019-03-uk.grib");
  diagnostics::take_warnings();
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  std::uint64_t n = 0;
  {
    const Dataset ds = open(path.string());
    // A read opens a GDAL handle per thread: each one's inventory complains again.
    n = ds.variable("2T_0-SFC").read().size();
  }
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(n, 744u * 33u * 49u);
  const auto warnings = diagnostics::take_warnings();
  ASSERT_EQ(warnings.size(), 1u) << (warnings.empty() ? "" : warnings[0]);
  EXPECT_TRUE(contains(warnings, "Ran out of file reading SECT0")) << warnings[0];
  EXPECT_TRUE(contains(warnings, path.filename().string())) << warnings[0];
}

TEST(GdalDiagnostics, NetcdfClassicOpensWithoutWarnings) {
  LAZYCUBE_REQUIRE_REAL_FILE(path, "eraint_uvz.nc");
  diagnostics::take_warnings();
  ::testing::internal::CaptureStdout();
  const Dataset ds = open(path.string());
  EXPECT_EQ(ds.variable("z").read().size(), 2u * 3u * 241u * 480u);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
  EXPECT_EQ(diagnostics::take_warnings(), std::vector<std::string>{});
}

// Over HTTP the netCDF driver reads NetCDF-4 through HDF5 on the reading threads; HDF5's error
// printing is per thread there, and netCDF-C's attribute probing printed "HDF5-DIAG: Error
// detected in HDF5" pages on stderr until every GDAL call turned it off (util/hdf5_quiet.hpp).
TEST(GdalDiagnostics, RemoteNetcdf4ReadsPrintNoHdf5ErrorStacks) {
  LAZYCUBE_REQUIRE_NGINX();
  lazycube::test::TempDir www;
  std::string skip;
  const std::string fixture = lazycube::test::make_netcdf4_fixture(www.path(), skip);
  if (fixture.empty()) GTEST_SKIP() << skip;
  lazycube::test::NginxServer server(www.path());
  diagnostics::take_warnings();
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  std::uint64_t n = 0;
  {
    const Dataset ds = open(server.url() + "/fixture_nc4.nc");
    for (const auto& name : ds.variable_names()) n += ds.variable(name).read().size();
  }
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_GT(n, 0u);
  EXPECT_EQ(out, "");
  EXPECT_EQ(err.find("HDF5-DIAG"), std::string::npos) << err.substr(0, 2000);
}
