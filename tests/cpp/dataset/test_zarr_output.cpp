// ZarrOutput (the C++ side of `lazycube convert` / lazycube.to_zarr): a Dataset written as a
// Zarr v3 sharded or v2 store reads back equal (decoded and as stored); the region plan written
// in two halves by two ZarrOutputs (as two Dask workers would) equals one run; bad options
// fail before anything is written; an existing destination is refused unless overwrite/resume.
#include <gtest/gtest.h>

#include <filesystem>

#include "lazycube/dataset/dataset.hpp"
#include "lazycube/dataset/zarr_output.hpp"
#include "lazycube/error.hpp"
#include "test_support.hpp"

using namespace lazycube;
using namespace lazycube::test;
namespace fs = std::filesystem;

namespace {

std::string output_sample(const char* name) { return std::string(LAZYCUBE_SOURCE_DIR) + "/data/" + name; }

void expect_same_output(const Dataset& a, const Dataset& b) {
  ASSERT_EQ(a.variable_names().size(), b.variable_names().size());
  for (const auto& name : a.variable_names()) {
    const Variable& va = a.variable(name);
    const Variable& vb = b.variable(name);
    EXPECT_EQ(va.dims(), vb.dims()) << name;
    EXPECT_EQ(va.dtype(), vb.dtype()) << name;
    const NDArray x = va.read(), y = vb.read();
    ASSERT_EQ(x.data.size(), y.data.size()) << name;
    EXPECT_EQ(0, std::memcmp(x.data.data(), y.data.data(), x.data.size())) << name;
  }
  EXPECT_EQ(a.attrs(), b.attrs());
}

std::map<std::string, std::string> files_of(const fs::path& root) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) out[fs::relative(e.path(), root).string()] = read_file(e.path());
  return out;
}

}  // namespace

TEST(ZarrOutput, ShardedV3AndV2ReadBackEqual) {
  TempDir dir;
  const Dataset src = open(output_sample("era5_sample_v2.zarr"));
  for (const int format : {2, 3}) {
    ZarrOutputOptions o;
    o.zarr_format = format;
    o.chunks = {{"time", 8}};
    if (format == 3) o.shards = {{"time", 32}};
    const std::string dst = (dir.path() / ("out" + std::to_string(format) + ".zarr")).string();
    ZarrOutput(src, dst, o).run();
    expect_same_output(open(dst), src);
    OpenOptions raw;
    raw.decode_cf = false;
    expect_same_output(open(dst, raw), open(output_sample("era5_sample_v2.zarr"), raw));
  }
}

TEST(ZarrOutput, RegionsWrittenByTwoOutputsEqualOneRun) {
  TempDir dir;
  const Dataset src = open(output_sample("era5_sample_v3.zarr"));
  ZarrOutputOptions o;
  o.chunks = {{"time", 4}};
  o.shards = {{"time", 16}};
  const std::string one = (dir.path() / "one.zarr").string(), two = (dir.path() / "two.zarr").string();
  ZarrOutput(src, one, o).run();
  ZarrOutput coordinator(src, two, o);
  coordinator.prepare();
  const std::uint64_t n = coordinator.region_count();
  std::vector<std::uint64_t> even, odd;
  for (std::uint64_t r = 0; r < n; ++r) (r % 2 ? odd : even).push_back(r);
  EXPECT_GT(ZarrOutput(src, two, o).write_regions(odd), 0u);  // a "worker" that did not prepare
  std::uint64_t last = 0;
  coordinator.write_regions(even, [&](std::uint64_t done, std::uint64_t total) {
    EXPECT_GE(done, last);
    EXPECT_LE(done, total);
    last = done;
  });
  EXPECT_FALSE(fs::exists(fs::path(two) / "zarr.json"));  // no metadata before commit
  coordinator.commit();
  EXPECT_EQ(files_of(two), files_of(one));
  EXPECT_THROW(coordinator.write_regions({n}), UsageError);
}

TEST(ZarrOutput, BadOptionsFailBeforeAnythingIsWritten) {
  TempDir dir;
  const Dataset src = open(output_sample("era5_sample_v2.zarr"));
  const std::string dst = (dir.path() / "never.zarr").string();
  auto attempt = [&](ZarrOutputOptions o) { ZarrOutput(src, dst, o).run(); };
  ZarrOutputOptions codec;
  codec.codec = "snappy:1";
  EXPECT_THROW(attempt(codec), CodecError);
  ZarrOutputOptions dim;
  dim.chunks = {{"level", 3}};
  EXPECT_THROW(attempt(dim), UsageError);
  ZarrOutputOptions multiple;
  multiple.chunks = {{"time", 8}};
  multiple.shards = {{"time", 20}};
  EXPECT_THROW(attempt(multiple), UsageError);
  ZarrOutputOptions v2_shards;
  v2_shards.zarr_format = 2;
  v2_shards.shards = {{"time", 48}};
  EXPECT_THROW(attempt(v2_shards), UsageError);
  EXPECT_FALSE(fs::exists(dst));
}

TEST(ZarrOutput, ExistingDestinationNeedsOverwriteOrResume) {
  TempDir dir;
  const Dataset src = open(output_sample("era5_sample_v2.zarr"));
  const std::string dst = (dir.path() / "out.zarr").string();
  ZarrOutputOptions o;
  ZarrOutput(src, dst, o).run();
  const auto before = files_of(dst);
  try {
    ZarrOutput(src, dst, o).run();
    FAIL() << "an existing store was overwritten";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out.zarr"), std::string::npos) << e.what();
  }
  EXPECT_EQ(files_of(dst), before);
  o.resume = true;
  ZarrOutput resumed(src, dst, o);
  resumed.prepare();
  std::vector<std::uint64_t> all(resumed.region_count());
  for (std::uint64_t r = 0; r < all.size(); ++r) all[r] = r;
  EXPECT_EQ(resumed.write_regions(all), 0u);  // every region verified, none written again
  resumed.commit();
  EXPECT_EQ(files_of(dst), before);
  o.resume = false;
  o.overwrite = true;
  o.zarr_format = 2;
  ZarrOutput(src, dst, o).run();
  EXPECT_FALSE(fs::exists(fs::path(dst) / "zarr.json"));
  expect_same_output(open(dst), src);
}
