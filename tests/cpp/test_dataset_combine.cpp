// Multi-store datasets (lazycube/dataset/combine.hpp, ConcatArray): the ERA5 sample split in
// three Zarr stores along time, with chunk boundaries that do not fall on the file boundaries,
// read back as one equals the unsplit sample (values, selections across boundaries, windows);
// chunk shuffle with an ample cache fetches every chunk once; mismatches name the variable and
// the store.
#include <gtest/gtest.h>

#include <cstring>

#include "lazycube/batch/batch_generator.hpp"
#include "lazycube/concat_array.hpp"
#include "lazycube/dataset/combine.hpp"
#include "lazycube/dataset/zarr_output.hpp"
#include "test_support.hpp"

using namespace lazycube;

namespace {

std::string sample() { return std::string(LAZYCUBE_SOURCE_DIR) + "/data/era5_sample_v2.zarr"; }

// Writes `ds` as a Zarr v2 store at dir/name with time chunks of 16; returns its path.
std::string write_part(const Dataset& ds, const test::TempDir& dir, const std::string& name) {
  ZarrOutputOptions o;
  o.zarr_format = 2;
  o.chunks = {{"time", 16}};
  const std::string url = (dir.path() / name).string();
  ZarrOutput(ds, url, o).run();
  return url;
}

Slice slice(std::int64_t a, std::int64_t b, std::int64_t step = 1) { return Slice{a, b, step}; }

void expect_same(const NDArray& a, const NDArray& b, const std::string& what) {
  ASSERT_EQ(a.dtype.name(), b.dtype.name()) << what;
  ASSERT_EQ(a.shape, b.shape) << what;
  ASSERT_EQ(a.data.size(), b.data.size()) << what;
  EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size()), 0) << what;
}

class DatasetCombine : public ::testing::Test {
 protected:
  test::TempDir dir;
  Dataset whole = lazycube::open(sample());
  std::vector<std::string> urls;
  std::vector<Dataset> parts;

  void SetUp() override {
    const std::int64_t bounds[] = {0, 30, 70, 96};  // 30 and 70: inside time chunks of 16
    for (int i = 0; i < 3; ++i) {
      urls.push_back(write_part(whole.isel({{"time", slice(bounds[i], bounds[i + 1])}}), dir,
                                "part" + std::to_string(i) + ".zarr"));
      parts.push_back(lazycube::open(urls.back()));
    }
  }
};

}  // namespace

TEST_F(DatasetCombine, ConcatEqualsTheUnsplitDataset) {
  Dataset joined = concat(parts, "time", urls);
  EXPECT_EQ(joined.dims(), whole.dims());
  EXPECT_EQ(joined.variable_names(), whole.variable_names());
  EXPECT_EQ(joined.coord_names(), whole.coord_names());
  for (const auto& name : whole.variable_names()) {
    expect_same(joined[name].read(), whole[name].read(), name);
    EXPECT_EQ(joined[name].attrs(), whole[name].attrs()) << name;
  }
  // Selections across the boundaries: forwards, strided, backwards, integer.
  for (const Indexer& ix : {Indexer{slice(25, 75)}, Indexer{slice(3, 95, 7)}, Indexer{slice(80, 10, -3)},
                            Indexer{std::int64_t{69}}}) {
    Indexers sel{{"time", ix}, {"latitude", slice(5, 45, 2)}};
    for (const auto& name : {"t2m", "msl", "time"})
      expect_same(joined.isel(sel)[name].read(), whole.isel(sel)[name].read(), name);
  }
  // Label selection through the concatenated time coordinate.
  LabelIndexers labels{{"time", LabelSlice{Label{std::string("2019-03-01T20:00")}, Label{std::string("2019-03-02T10:00")}}}};
  EXPECT_EQ(joined.sel(labels).dim_size("time"), 15u);  // hours 20..34: across the boundary at 30
  expect_same(joined.sel(labels)["u10"].read(), whole.sel(labels)["u10"].read(), "u10 sel");
}

// Along the last axis a part's share of a selection is not contiguous in the output: the
// scatter paths of read, read_converted (msl is CF-packed) and read_cached.
TEST_F(DatasetCombine, ConcatAlongAnInnerAxisEqualsTheUnsplitDataset) {
  std::vector<Dataset> columns;
  std::vector<std::string> column_urls;
  const std::int64_t bounds[] = {0, 25, 26, 81};  // a one-column part in the middle
  for (int i = 0; i < 3; ++i) {
    column_urls.push_back(write_part(whole.isel({{"longitude", slice(bounds[i], bounds[i + 1])}}), dir,
                                     "column" + std::to_string(i) + ".zarr"));
    columns.push_back(lazycube::open(column_urls.back()));
  }
  Dataset joined = concat(columns, "longitude", column_urls);
  for (const auto& name : whole.variable_names()) expect_same(joined[name].read(), whole[name].read(), name);
  Indexers sel{{"time", slice(10, 20)}, {"longitude", slice(70, 3, -4)}};
  expect_same(joined.isel(sel)["msl"].read(), whole.isel(sel)["msl"].read(), "msl reversed");

  auto cache = std::make_shared<ChunkCache>(512 << 20);
  batch::BatchOptions o;
  o.input_dims = {{"time", 2}, {"latitude", 10}, {"longitude", 10}};
  o.batch_size = 16;
  o.variables = {"msl"};
  o.cache = cache;
  batch::BatchGenerator g(joined, o);
  while (auto b = g.next()) {
    for (std::size_t k = 0; k < b->windows.size(); ++k) {
      const auto& w = b->windows[k];
      Indexers ix;
      const char* dims[] = {"time", "latitude", "longitude"};
      for (int d = 0; d < 3; ++d)
        ix.emplace(dims[d], slice(static_cast<std::int64_t>(w[d].start), static_cast<std::int64_t>(w[d].start + w[d].count)));
      const NDArray want = whole.isel(ix)["msl"].read();
      ASSERT_EQ(std::memcmp(b->arrays[0].data.get() + k * want.data.size(), want.data.data(), want.data.size()), 0)
          << "window " << b->window_ids[k];
    }
  }
  EXPECT_DOUBLE_EQ(cache->stats().read_amplification(), 1.0);
}

TEST_F(DatasetCombine, ConcatArrayReportsTheUnionOfTheChunkGrids) {
  Dataset joined = concat(parts, "time", urls);
  const auto* array = dynamic_cast<const ConcatArray*>(joined["t2m"].array().get());
  ASSERT_NE(array, nullptr);
  EXPECT_EQ(array->offsets(), (std::vector<std::uint64_t>{0, 30, 70, 96}));
  // Time 28..33 touches chunk 1 of part 0 (16..30) and chunk 0 of part 1 (30..46): the part-1
  // unit comes after part 0's two time chunks.
  ArraySelection sel{{28, 6, 1}, {0, 1, 1}, {0, 1, 1}};
  auto units = array->read_units({&sel, 1});
  ASSERT_EQ(units.size(), 2u);
  EXPECT_EQ(units[0][0], 1u);
  EXPECT_EQ(units[1][0], 2u);
  ChunkCache cache(64 << 20);
  EXPECT_EQ(array->load_units(units, cache).size(), 2u);
  EXPECT_EQ(cache.stats().misses, 2u);
}

TEST_F(DatasetCombine, ChunkShuffleWithAnAmpleCacheFetchesEveryChunkOnce) {
  Dataset joined = concat(parts, "time", urls);
  auto cache = std::make_shared<ChunkCache>(512 << 20);
  batch::BatchOptions o;
  o.input_dims = {{"time", 4}, {"latitude", 20}, {"longitude", 20}};
  o.input_overlap = {{"time", 2}};
  o.batch_size = 8;
  o.variables = {"t2m", "msl"};
  o.shuffle = batch::Shuffle::Chunk;
  o.seed = 3;
  o.cache = cache;
  batch::BatchGenerator g(joined, o);
  std::uint64_t windows = 0, spanning = 0;
  while (auto b = g.next()) {
    for (std::size_t k = 0; k < b->windows.size(); ++k) {
      const auto& w = b->windows[k];
      const std::uint64_t t0 = w[0].start;
      if ((t0 < 30 && t0 + 4 > 30) || (t0 < 70 && t0 + 4 > 70)) ++spanning;
      Indexers ix{{"time", slice(static_cast<std::int64_t>(t0), static_cast<std::int64_t>(t0 + 4))},
                  {"latitude", slice(static_cast<std::int64_t>(w[1].start), static_cast<std::int64_t>(w[1].start + 20))},
                  {"longitude", slice(static_cast<std::int64_t>(w[2].start), static_cast<std::int64_t>(w[2].start + 20))}};
      const NDArray want = whole["t2m"].isel(ix).read();
      const auto* got = reinterpret_cast<const double*>(b->arrays[0].data.get()) + k * 2 * want.size();
      for (std::size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(got[i], static_cast<double>(want.values<float>()[i])) << "window " << b->window_ids[k];
    }
    windows += b->window_ids.size();
  }
  EXPECT_EQ(windows, g.total_windows());
  EXPECT_GT(spanning, 0u);
  EXPECT_DOUBLE_EQ(cache->stats().read_amplification(), 1.0);
}

TEST_F(DatasetCombine, MismatchedCoordinatesNameTheCoordinateAndTheStore) {
  const std::string shifted =
      write_part(whole.isel({{"time", slice(30, 70)}, {"latitude", slice(1, 61)}}), dir, "shifted.zarr");
  try {
    concat({parts[0], lazycube::open(shifted)}, "time", {urls[0], shifted});
    FAIL() << "no error";
  } catch (const MetadataError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'latitude'"), std::string::npos) << m;
    EXPECT_NE(m.find(shifted), std::string::npos) << m;
  }
  EXPECT_THROW(concat(parts, "level", urls), MetadataError);
  EXPECT_THROW(concat({parts[0], lazycube::open(shifted).subset({"t2m"})}, "time"), MetadataError);
}

TEST_F(DatasetCombine, MergeJoinsVariablesAndRefusesConflicts) {
  Dataset merged = merge({whole.subset({"t2m"}), whole.subset({"u10", "v10"})}, {"a", "b"});
  EXPECT_EQ(merged.data_var_names(), (std::vector<std::string>{"t2m", "u10", "v10"}));
  expect_same(merged["v10"].isel({{"time", slice(40, 50)}}).read(), whole["v10"].isel({{"time", slice(40, 50)}}).read(),
              "v10");
  try {
    merge({parts[0], lazycube::open(write_part(whole.isel({{"time", slice(30, 60)}}), dir, "other.zarr"))},
          {"first.zarr", "other.zarr"});
    FAIL() << "no error";
  } catch (const MetadataError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'time'"), std::string::npos) << m;
    EXPECT_NE(m.find("other.zarr"), std::string::npos) << m;
  }
  EXPECT_THROW(merge({parts[0], parts[1]}), MetadataError);  // time sizes 30 and 40
}
