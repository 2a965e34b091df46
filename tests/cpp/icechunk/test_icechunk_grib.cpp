// Virtual GRIB (issue 34): an Icechunk repository whose virtual chunks are the byte ranges of the
// messages of a real GRIB file (the ERA5 GRIB1 file of ../shared/data/real, and the same file
// converted to GRIB2), codec gribberish, read through the Zarr hierarchy and lazycube::open:
// every field equals ecCodes' own decoding of its message and GDAL's (its GRIB driver on the
// file). A virtual range cut short of its message is a CodecError naming the codec.
#include <gtest/gtest.h>

#include <cmath>

#include "gdal_test_files.hpp"
#include "grib_icechunk_repo.hpp"
#include "lazycube/error.hpp"
#include "lazycube/icechunk/repository.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "test_support.hpp"

namespace lazycube {
namespace {

#ifdef LAZYCUBE_HAVE_ECCODES

namespace fs = std::filesystem;
namespace grib = test::grib;

std::shared_ptr<Store> grib_store(const fs::path& repo, const fs::path& grib_file) {
  icechunk::IcechunkOptions options;
  options.virtual_chunk_containers = {{"file://" + grib_file.parent_path().string() + "/", {}}};
  return icechunk::make_icechunk_store(icechunk::Repository::open(open_location(repo.string())), options);
}

void expect_repository_reads_the_file(const fs::path& grib_file) {
  test::TempDir tmp;
  const auto messages = grib::write_icechunk_repository(tmp.path() / "repo", grib_file);
  const auto store = grib_store(tmp.path() / "repo", grib_file);
  const auto array = zarr::Hierarchy::open(Location{store, ""}).array("t2m");
  const auto all = array->read_all();
  const auto values = all.values<double>();
  const std::size_t points = messages[0].points;
  ASSERT_EQ(values.size(), messages.size() * points);
  const auto gdal = grib::gdal_fields(grib_file);
  ASSERT_EQ(gdal.size(), messages.size());
  std::size_t bad = 0;
  for (std::size_t k = 0; k < messages.size() && bad == 0; ++k) {
    const auto want = grib::decode(grib::read_range(grib_file, messages[k]));
    for (std::size_t i = 0; i < points; ++i) {
      const double got = values[k * points + i];
      if (!(got == want[i]) && bad++ < 5) ADD_FAILURE() << "message " << k << " point " << i << ": " << got << ", ecCodes " << want[i];
      if (!(std::fabs(got - gdal[k][i]) <= 1e-3) && bad++ < 5)
        ADD_FAILURE() << "message " << k << " point " << i << ": " << got << ", GDAL " << gdal[k][i];
    }
  }
  EXPECT_EQ(bad, 0u);
}

TEST(IcechunkGrib, VirtualChunksIntoAGrib1FileReadAsEccodesAndGdal) {
  LAZYCUBE_REQUIRE_REAL_FILE(path, "era5-2mt-2019-03-uk.grib");
  expect_repository_reads_the_file(path);
}

TEST(IcechunkGrib, VirtualChunksIntoAGrib2FileReadAsEccodesAndGdal) {
  LAZYCUBE_REQUIRE_REAL_FILE(path, "era5-2mt-2019-03-uk.grib");
  test::TempDir tmp;
  const auto grib2 = tmp.path() / "data" / "era5.grib2";
  fs::create_directories(grib2.parent_path());
  grib::convert_to_grib2(path, grib2);
  expect_repository_reads_the_file(grib2);
}

TEST(IcechunkGrib, ARangeCutShortOfItsMessageIsACodecError) {
  test::TempDir tmp;
  const auto file = tmp.path() / "data" / "two.grib2";
  fs::create_directories(file.parent_path());
  const auto a = grib::sample_message("GRIB2", [](std::size_t i) { return 280.0 + static_cast<double>(i % 9); });
  std::string bytes(reinterpret_cast<const char*>(a.data()), a.size());
  test::write_file(file, bytes + bytes);
  // The repository points at both messages; then the file's second message loses its last 10
  // bytes (zeros in their place: the range itself still reads).
  ASSERT_EQ(grib::write_icechunk_repository(tmp.path() / "repo", file).size(), 2u);
  test::write_file(file, bytes + bytes.substr(0, bytes.size() - 10) + std::string(10, '\0'));
  const auto store = grib_store(tmp.path() / "repo", file);
  const auto array = zarr::Hierarchy::open(Location{store, ""}).array("t2m");
  const std::string m = test::message_of<Error>([&] { array->read_all(); });
  EXPECT_NE(m.find("gribberish"), std::string::npos) << m;
  EXPECT_NE(m.find("GRIB message"), std::string::npos) << m;
}

#endif  // LAZYCUBE_HAVE_ECCODES

}  // namespace
}  // namespace lazycube
