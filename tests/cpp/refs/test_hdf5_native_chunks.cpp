// Native chunk reads of NetCDF4/HDF5 variables (src/refs/hdf5_native_chunks.cpp): which
// variables qualify, every read unit equal to what GDAL + HDF5 decode, and damaged or cut files
// as typed errors naming the file, the variable and the chunk. (Edges, unwritten chunks,
// fletcher32 and the variables left to GDAL: tests/python/test_hdf5_native_chunks.py.)
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "gdal_test_files.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/refs/hdf5_native_chunks.hpp"

using namespace lazycube;
using lazycube::refs::Hdf5NativeChunks;
using lazycube::test::TempDir;

namespace {

using Hdf5NativeChunksTest = lazycube::test::Netcdf4FixtureTest;

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_F(Hdf5NativeChunksTest, QualifyingVariables) {
  // t: int16, chunks (2, 10, 15), zlib + shuffle; w: float32, chunks (3, 20, 30)
  EXPECT_NE(Hdf5NativeChunks::open(path_, "t", {6, 20, 30}, {2, 10, 15}, DataType::int_(2)), nullptr);
  EXPECT_NE(Hdf5NativeChunks::open(path_, "w", {6, 20, 30}, {3, 20, 30}, DataType::float_(4)), nullptr);
  // not the read unit, not the type GDAL hands out, no such variable, not HDF5
  EXPECT_EQ(Hdf5NativeChunks::open(path_, "t", {6, 20, 30}, {1, 10, 15}, DataType::int_(2)), nullptr);
  EXPECT_EQ(Hdf5NativeChunks::open(path_, "t", {6, 20, 30}, {2, 10, 15}, DataType::float_(4)), nullptr);
  EXPECT_EQ(Hdf5NativeChunks::open(path_, "nothing", {6, 20, 30}, {2, 10, 15}, DataType::int_(2)), nullptr);
  const std::string text = (dir_.path() / "not_hdf5.nc").string();
  std::ofstream(text) << "CDF\x01 not really";
  EXPECT_EQ(Hdf5NativeChunks::open(text, "t", {6, 20, 30}, {2, 10, 15}, DataType::int_(2)), nullptr);
}

TEST_F(Hdf5NativeChunksTest, EveryUnitEqualsTheFixtureValues) {
  const auto native = Hdf5NativeChunks::open(path_, "w", {6, 20, 30}, {3, 20, 30}, DataType::float_(4));
  ASSERT_NE(native, nullptr);
  using lazycube::test::fixture_w;
  for (std::uint64_t u = 0; u < 2; ++u) {
    std::vector<float> unit(3 * 20 * 30);
    ASSERT_TRUE(native->read_unit(std::vector<std::uint64_t>{u, 0, 0},
                                  MutableByteView(reinterpret_cast<std::byte*>(unit.data()), unit.size() * 4)));
    for (int t = 0; t < 3; ++t)
      for (int y = 0; y < 20; ++y)
        for (int x = 0; x < 30; ++x)
          ASSERT_EQ(unit[(t * 20 + y) * 30 + x], fixture_w(static_cast<int>(u) * 3 + t, y, x)) << u << " " << t;
  }
  const auto t = Hdf5NativeChunks::open(path_, "t", {6, 20, 30}, {2, 10, 15}, DataType::int_(2));
  std::vector<std::int16_t> unit(2 * 10 * 15);
  ASSERT_TRUE(t->read_unit(std::vector<std::uint64_t>{2, 1, 1},
                           MutableByteView(reinterpret_cast<std::byte*>(unit.data()), unit.size() * 2)));
  for (int k = 0; k < 2; ++k)
    for (int y = 0; y < 10; ++y)
      for (int x = 0; x < 15; ++x)
        ASSERT_EQ(unit[(k * 10 + y) * 15 + x], lazycube::test::fixture_t_packed(4 + k, 10 + y, 15 + x));
  // a unit outside the grid, a buffer of the wrong size: usage errors, nothing written
  EXPECT_THROW(t->read_unit(std::vector<std::uint64_t>{3, 0, 0},
                            MutableByteView(reinterpret_cast<std::byte*>(unit.data()), unit.size() * 2)),
               UsageError);
  EXPECT_THROW(t->read_unit(std::vector<std::uint64_t>{0, 0, 0},
                            MutableByteView(reinterpret_cast<std::byte*>(unit.data()), 10)),
               UsageError);
}

TEST_F(Hdf5NativeChunksTest, TheDatasetReadsTheSameThroughNativeUnits) {
  // Through open(): the chunk cache's read units come from the native reader; whole-variable
  // reads equal the fixture's formulas (raw int16 and CF-decoded float32).
  const Dataset ds = open(path_);
  const NDArray w = ds["w"].read();
  using lazycube::test::fixture_w;
  for (int t = 0; t < 6; ++t)
    for (int y = 0; y < 20; ++y)
      for (int x = 0; x < 30; ++x) ASSERT_EQ(w.values<float>()[(t * 20 + y) * 30 + x], fixture_w(t, y, x));
  const NDArray packed = ds["t"].read_raw();
  for (int t = 0; t < 6; ++t)
    for (int y = 0; y < 20; ++y)
      for (int x = 0; x < 30; ++x)
        ASSERT_EQ(packed.values<std::int16_t>()[(t * 20 + y) * 30 + x], lazycube::test::fixture_t_packed(t, y, x));
}

TEST_F(Hdf5NativeChunksTest, CutFileIsAStoreErrorNamingFileAndVariable) {
  auto bytes = file_bytes(path_);
  const auto w = Hdf5NativeChunks::open(path_, "w", {6, 20, 30}, {3, 20, 30}, DataType::float_(4));
  ASSERT_NE(w, nullptr);
  // Cut the file in the middle: the index (read before) points past its end.
  const std::string cut = (dir_.path() / "cut.nc").string();
  std::filesystem::copy_file(path_, cut);
  const auto cut_reader = Hdf5NativeChunks::open(cut, "w", {6, 20, 30}, {3, 20, 30}, DataType::float_(4));
  ASSERT_NE(cut_reader, nullptr);
  std::filesystem::resize_file(cut, bytes.size() / 4);
  std::vector<float> unit(3 * 20 * 30);
  const MutableByteView out(reinterpret_cast<std::byte*>(unit.data()), unit.size() * 4);
  bool failed_any = false;
  for (std::uint64_t u = 0; u < 2; ++u) {
    try {
      cut_reader->read_unit(std::vector<std::uint64_t>{u, 0, 0}, out);
    } catch (const StoreError& e) {
      failed_any = true;
      EXPECT_NE(std::string(e.what()).find("cut.nc"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("'w'"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(failed_any) << "a chunk past the end of a cut file read without error";
}
