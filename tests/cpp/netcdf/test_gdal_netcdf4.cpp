// The gdal engine on a NetCDF-4/HDF5 file written by netCDF4-python (chunked, zlib, shuffle,
// packed int16 with a _FillValue, "hours since" times): values, read units equal to the HDF5
// chunks, selections, the BatchGenerator (direct reads, prefetching threads) and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>

#include "gdal_test_files.hpp"
#include "lazycube/batch/batch_generator.hpp"
#include "lazycube/cache/chunk_cache.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"

using namespace lazycube;
using lazycube::test::TempDir;

namespace {

using GdalNetcdf4 = lazycube::test::Netcdf4FixtureTest;

using lazycube::test::fixture_t_packed;
using lazycube::test::fixture_w;
using lazycube::test::kFxT;
using lazycube::test::kFxX;
using lazycube::test::kFxY;

}  // namespace

TEST_F(GdalNetcdf4, ValuesAttributesAndReadUnits) {
  const Dataset ds = open(path_);
  EXPECT_EQ(ds.attrs().at("title"), "lazycube NetCDF-4 fixture");
  EXPECT_EQ(ds.coord_names(), (std::vector<std::string>{"time", "y", "x"}));
  const Variable& t = ds["t"];
  EXPECT_EQ(t.dims(), (std::vector<std::string>{"time", "y", "x"}));
  EXPECT_EQ(t.stored_dtype(), DataType::int_(2));
  EXPECT_EQ(t.dtype(), DataType::float_(4));  // masked int16 → float32, as xarray
  EXPECT_EQ(t.attrs().at("units"), "K");
  EXPECT_EQ(t.encoding().at("_FillValue"), -32767);
  // The read unit is the HDF5 chunk.
  EXPECT_EQ(t.array()->chunk_shape(), (Shape{2, 10, 15}));
  EXPECT_EQ(ds["w"].array()->chunk_shape(), (Shape{3, 20, 30}));
  EXPECT_EQ(t.chunks(), (Shape{2, 10, 15}));

  const NDArray raw = t.read_raw();
  const NDArray dec = t.read();
  const NDArray w = ds["w"].read();
  ASSERT_EQ(raw.shape, (Shape{6, 20, 30}));
  std::size_t bad_raw = 0, bad_dec = 0, bad_w = 0, nan = 0;
  for (int i = 0; i < kFxT; ++i)
    for (int j = 0; j < kFxY; ++j)
      for (int k = 0; k < kFxX; ++k) {
        const std::size_t at = (static_cast<std::size_t>(i) * kFxY + j) * kFxX + k;
        const int p = fixture_t_packed(i, j, k);
        bad_raw += raw.values<std::int16_t>()[at] != p;
        const float d = dec.values<float>()[at];
        if (p == -32767) {
          nan += std::isnan(d);
        } else {
          bad_dec += std::abs(d - static_cast<float>(p * 0.01 + 273.15)) > 1e-4f;
        }
        bad_w += w.values<float>()[at] != fixture_w(i, j, k);
      }
  EXPECT_EQ(bad_raw, 0u);
  EXPECT_EQ(bad_dec, 0u);
  EXPECT_EQ(bad_w, 0u);
  EXPECT_EQ(nan, 2u);

  const NDArray time = ds["time"].read();
  ASSERT_EQ(time.dtype, DataType::datetime("ns"));
  const std::int64_t y2000 = std::int64_t{946684800} * 1000000000;
  for (int i = 0; i < kFxT; ++i) EXPECT_EQ(time.values<std::int64_t>()[i], y2000 + std::int64_t{i} * 6 * 3600 * 1000000000);
  EXPECT_EQ(ds["time"].encoding().at("units"), "hours since 2000-01-01 00:00:00");
}

TEST_F(GdalNetcdf4, IselAndSel) {
  const Dataset ds = open(path_);
  const Variable v = ds["w"].isel({{"time", Slice{5, std::nullopt, -2}}, {"x", 7}});
  ASSERT_EQ(v.shape(), (Shape{3, 20}));
  const NDArray a = v.read();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < kFxY; ++j) EXPECT_EQ(a.values<float>()[i * kFxY + j], fixture_w(5 - 2 * i, j, 7));
  const Variable s = ds.sel({{"time", Label("2000-01-01T12:00")}, {"y", LabelSlice(Label(49.0), Label(48.0))}})["t"];
  ASSERT_EQ(s.shape(), (Shape{3, 30}));
  const NDArray r = s.read_raw();
  EXPECT_EQ(r.values<std::int16_t>()[0], fixture_t_packed(2, 2, 0));
  EXPECT_EQ(r.values<std::int16_t>()[2 * 30 + 29], fixture_t_packed(2, 4, 29));
}

TEST_F(GdalNetcdf4, BatchesEqualDirectReadsWithAndWithoutPrefetch) {
  const Dataset ds = open(path_);
  auto make = [&](std::size_t prefetch, std::uint64_t cache_bytes) {
    batch::BatchOptions o;
    o.input_dims = {{"time", 2}, {"y", 10}, {"x", 15}};
    o.input_overlap = {{"y", 5}};
    o.batch_size = 3;
    o.variables = {"t", "w"};
    o.shuffle = batch::Shuffle::Random;
    o.seed = 7;
    o.prefetch = prefetch;
    o.cache = std::make_shared<ChunkCache>(cache_bytes);
    return std::make_unique<batch::BatchGenerator>(ds, o);
  };
  // Every window of every batch equals the same window read directly.
  auto plain = make(0, 0);
  std::vector<batch::Batch> first;
  while (auto b = plain->next()) first.push_back(std::move(*b));
  ASSERT_EQ(first.size(), plain->size());
  std::size_t windows = 0;
  for (const auto& b : first) {
    const auto& x = b.arrays.at(0);
    ASSERT_EQ(x.dtype, DataType::float_(4));
    const std::size_t per_channel = 2 * 10 * 15;
    for (std::size_t s = 0; s < b.windows.size(); ++s, ++windows) {
      Indexers idx;
      for (std::size_t d = 0; d < b.window_dims.size(); ++d) {
        const IndexRange& r = b.windows[s][d];
        idx[b.window_dims[d]] = Slice{static_cast<std::int64_t>(r.start), static_cast<std::int64_t>(r.start + r.count), 1};
      }
      for (std::size_t c = 0; c < 2; ++c) {
        const NDArray direct = ds[c == 0 ? "t" : "w"].isel(idx).read();
        const std::byte* got = x.data.get() + ((s * 2 + c) * per_channel) * sizeof(float);
        // NaN (masked fill) compares equal bytewise: both sides hold the same NaN pattern.
        EXPECT_EQ(std::memcmp(got, direct.data.data(), direct.data.size()), 0) << "batch " << b.index << " window " << s;
      }
    }
  }
  EXPECT_EQ(windows, plain->total_windows());
  // Prefetching on the thread pool through a chunk cache gives the same batches.
  for (int round = 0; round < 2; ++round) {
    auto threaded = make(4, std::uint64_t{64} << 20);
    std::size_t i = 0;
    while (auto b = threaded->next()) {
      ASSERT_LT(i, first.size());
      EXPECT_EQ(b->window_ids, first[i].window_ids);
      EXPECT_EQ(std::memcmp(b->arrays[0].data.get(), first[i].arrays[0].data.get(), first[i].arrays[0].nbytes), 0)
          << "batch " << i;
      ++i;
    }
    EXPECT_EQ(i, first.size());
  }
}

TEST_F(GdalNetcdf4, ReadsFromManyThreadsAgree) {
  const Dataset ds = open(path_);
  const NDArray want = ds["t"].read();
  std::vector<std::thread> threads;
  std::vector<int> same(8, 0);
  for (int k = 0; k < 8; ++k)
    threads.emplace_back([&, k] {
      int ok = 1;
      for (int rep = 0; rep < 5; ++rep) {
        const NDArray got = ds["t"].read();
        ok &= std::memcmp(got.data.data(), want.data.data(), want.data.size()) == 0;
      }
      same[k] = ok;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(same, std::vector<int>(8, 1));
}

TEST_F(GdalNetcdf4, EngineOptionAndDetection) {
  // Explicit engine, and detection by signature without a known suffix.
  const std::string renamed = (dir_.path() / "fixture.data").string();
  std::filesystem::copy_file(path_, renamed);
  OpenOptions gdal;
  gdal.engine = "gdal";
  EXPECT_EQ(open(renamed, gdal)["w"].shape(), (Shape{6, 20, 30}));
  EXPECT_EQ(open(renamed)["w"].shape(), (Shape{6, 20, 30}));
  OpenOptions bogus;
  bogus.engine = "bogus";
  const std::string msg = lazycube::test::message_of<UsageError>([&] { open(path_, bogus); });
  EXPECT_NE(msg.find("bogus"), std::string::npos) << msg;
  EXPECT_NE(msg.find("gdal"), std::string::npos) << msg;
  // engine=zarr on a NetCDF file: the Zarr reader's own error.
  OpenOptions zarr;
  zarr.engine = "zarr";
  EXPECT_THROW(open(path_, zarr), Error);
}

// GDAL arrays read through ChunkedArray's planner: cached reads equal direct ones, each HDF5
// chunk is read once, and fetch-ahead (load_units) loads what later readers hit.
TEST_F(GdalNetcdf4, CachedReadsAndFetchAheadGoThroughThePlanner) {
  const Dataset ds = open(path_);
  const ArrayPtr a = ds["t"].array();  // int16 (6, 20, 30) in units of (2, 10, 15)
  const std::vector<ArraySelection> sels = {
      {{0, 6, 1}, {0, 20, 1}, {0, 30, 1}},
      {{5, 3, -2}, {3, 10, 1}, {29, 10, -3}},
      {{1, 1, 1}, {19, 1, 1}, {0, 30, 1}},
  };
  const auto units = a->read_units(sels);
  EXPECT_EQ(units.size(), 12u);
  auto read_all = [&](ChunkCache& cache) {
    std::vector<Buffer> got;
    std::vector<MutableByteView> dests;
    for (const auto& s : sels) got.emplace_back(s[0].count * s[1].count * s[2].count * 2);
    for (auto& b : got) dests.push_back(b.span());
    a->read_cached(sels, dests, cache);
    for (std::size_t i = 0; i < sels.size(); ++i) {
      Buffer want(got[i].size());
      a->read(sels[i], want.span());
      // An empty selection's buffers have no data pointer (memcmp takes none: UBSan).
      EXPECT_TRUE(want.size() == 0 || std::memcmp(want.data(), got[i].data(), want.size()) == 0) << "selection " << i;
    }
  };
  ChunkCache cache(std::uint64_t{64} << 20);
  read_all(cache);
  EXPECT_EQ(cache.stats().misses, units.size());
  read_all(cache);
  EXPECT_EQ(cache.stats().misses, units.size());
  EXPECT_EQ(cache.stats().hits, units.size());

  ChunkCache ahead(std::uint64_t{64} << 20);
  const auto held = a->load_units(units, ahead);
  EXPECT_EQ(held.size(), units.size());
  EXPECT_EQ(ahead.stats().fetched_ahead, units.size());
  read_all(ahead);
  EXPECT_EQ(ahead.stats().hits, units.size());
  EXPECT_EQ(ahead.stats().misses, units.size());  // the fetch-ahead's own
}
