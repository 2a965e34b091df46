// Multi-store datasets (lazycube/dataset/combine.hpp, ConcatArray): the ERA5 sample split in
// three Zarr stores along time, with chunk boundaries that do not fall on the file boundaries,
// read back as one equals the unsplit sample (values, selections across boundaries, windows);
// chunk shuffle with an ample cache fetches every chunk once; mismatches name the variable and
// the store.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "lazycube/batch/batch_generator.hpp"
#include "lazycube/concat_array.hpp"
#include "lazycube/dataset/combine.hpp"
#include "lazycube/dataset/zarr_output.hpp"
#include "lazycube/error.hpp"
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

// The joined time axis has the union of the files' chunk grids (16-step chunks restarting at
// each file), and a selection maps it to its own indices (ascending or descending).
TEST_F(DatasetCombine, ChunkStartsFollowEachFilesGrid) {
  Dataset joined = concat(parts, "time", urls);
  const Variable t2m = joined["t2m"];
  EXPECT_EQ(t2m.chunk_starts(0), (std::vector<std::uint64_t>{0, 16, 30, 46, 62, 70, 86}));
  EXPECT_EQ(whole["t2m"].chunk_starts(0), (std::vector<std::uint64_t>{0, 24, 48, 72}));  // the sample: 24 steps
  // time 20..89 step 3: indices 0..23 at times 20, 23, ..., 89; chunks start at 30 (index 4:
  // time 32 is the first at or after 30), 46 (9: 47), 62 (14: 62), 70 (17: 71), 86 (22: 86).
  EXPECT_EQ(t2m.isel({{"time", slice(20, 90, 3)}}).chunk_starts(0), (std::vector<std::uint64_t>{0, 4, 9, 14, 17, 22}));
  // Descending from 40 to 25: times 40..30 are in the chunk starting at 30, 29..25 in the one before.
  EXPECT_EQ(t2m.isel({{"time", slice(40, 24, -1)}}).chunk_starts(0), (std::vector<std::uint64_t>{0, 11}));
  // Dims other than the axis: the first part's grid; a dropped dim shifts the dim numbers.
  EXPECT_EQ(t2m.chunk_starts(1), whole["t2m"].chunk_starts(1));
  const Variable map = t2m.isel({{"time", std::int64_t{5}}});
  EXPECT_EQ(map.dims().front(), "latitude");
  EXPECT_EQ(map.chunk_starts(0), whole["t2m"].chunk_starts(1));
  EXPECT_THROW(map.chunk_starts(2), UsageError);
}

// Chunk shuffle groups windows by the exact chunk their start falls in, also where a file ends
// inside a chunk length: each chunk's windows come in one stretch of the epoch.
TEST_F(DatasetCombine, ChunkShuffleGroupsWindowsByTheExactChunk) {
  Dataset joined = concat(parts, "time", urls);
  const std::vector<std::uint64_t> starts = {0, 16, 30, 46, 62, 70, 86};
  batch::BatchOptions o;
  o.input_dims = {{"time", 2}};
  o.batch_size = 1;
  o.variables = {"t2m"};
  o.shuffle = batch::Shuffle::Chunk;
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    o.seed = seed;
    batch::BatchGenerator g(joined, o);
    std::vector<std::size_t> chunk_of_window;
    std::set<std::uint64_t> seen;
    while (auto b = g.next()) {
      const std::uint64_t t0 = b->windows[0][0].start;
      EXPECT_TRUE(seen.insert(t0).second) << "window at time " << t0 << " visited twice";
      chunk_of_window.push_back(static_cast<std::size_t>(std::upper_bound(starts.begin(), starts.end(), t0) - starts.begin()));
    }
    EXPECT_EQ(seen.size(), 48u);
    std::size_t stretches = 1;
    for (std::size_t i = 1; i < chunk_of_window.size(); ++i) stretches += chunk_of_window[i] != chunk_of_window[i - 1];
    EXPECT_EQ(stretches, starts.size()) << "seed " << seed << ": a chunk's windows are split across the epoch";
  }
  // What grouping by the first file's regular chunk length (16) did: groups [16, 32) and
  // [32, 48) mix two files' chunks, so some chunk's windows come in two stretches.
  const batch::WindowGrid grid({{"time", 96}}, {{"time", 2}}, {});
  std::size_t most = 0;
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    const batch::EpochOrder regular(grid, batch::Shuffle::Chunk, seed, 0, batch::ShardSpec{}, std::vector<std::uint64_t>{16});
    std::size_t stretches = 1;
    auto chunk = [&](std::uint64_t p) {
      return std::upper_bound(starts.begin(), starts.end(), grid.dims()[0].start(regular.window(p))) - starts.begin();
    };
    for (std::uint64_t p = 1; p < regular.size(); ++p) stretches += chunk(p) != chunk(p - 1);
    most = std::max(most, stretches);
  }
  EXPECT_GT(most, starts.size());
}
