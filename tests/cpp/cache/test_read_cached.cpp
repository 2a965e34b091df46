// Array::read_cached on Zarr arrays (through the ChunkCache) must equal read() for any
// selections, fetch each read unit once, batch network fetches, and feed
// Variable::read_windows_into with CF decoding.
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <set>
#include <sstream>
#include <cstring>
#include <random>
#include <set>
#include <thread>
#include <nlohmann/json.hpp>

#include "lazycube/cache/chunk_cache.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "nginx_server.hpp"
#include "zarr_test_writer.hpp"

using namespace lazycube;
using namespace lazycube::test;

namespace {

const fs::path kData = fs::path(LAZYCUBE_SOURCE_DIR) / "data";

ArrayPtr sample_array(const std::string& store, const std::string& var) {
  return zarr::open_array(make_file_store((kData / store).string()), var);
}

// A random strided selection: per dim a step in {1, 2, 3, -1, -2} and a start/count inside.
ArraySelection random_selection(const Shape& shape, std::mt19937& rng, std::uint64_t max_count = 40) {
  ArraySelection sel;
  for (auto n : shape) {
    static const std::int64_t steps[] = {1, 1, 2, 3, -1, -2};
    const std::int64_t step = steps[rng() % 6];
    const std::uint64_t start = rng() % n;
    const std::uint64_t room = step > 0 ? (n - 1 - start) / static_cast<std::uint64_t>(step) + 1
                                        : start / static_cast<std::uint64_t>(-step) + 1;
    const std::uint64_t count = 1 + rng() % std::min(room, max_count);
    sel.push_back({start, count, step});
  }
  return sel;
}

std::uint64_t bytes_of(const Array& a, const ArraySelection& sel) {
  std::uint64_t n = a.dtype().itemsize;
  for (const auto& r : sel) n *= r.count;
  return n;
}

// Distinct read units (grid indices) touched by the selections, computed independently.
std::set<std::vector<std::uint64_t>> units_of(const Array& a, const std::vector<ArraySelection>& sels) {
  std::set<std::vector<std::uint64_t>> out;
  const Shape& unit = a.read_chunk_shape();
  for (const auto& sel : sels) {
    std::vector<std::set<std::uint64_t>> per_dim(sel.size());
    for (std::size_t d = 0; d < sel.size(); ++d)
      for (std::uint64_t k = 0; k < sel[d].count; ++k) per_dim[d].insert(sel[d].at(k) / unit[d]);
    std::vector<std::vector<std::uint64_t>> acc{{}};
    for (const auto& s : per_dim) {
      std::vector<std::vector<std::uint64_t>> next;
      for (const auto& prefix : acc)
        for (auto u : s) {
          next.push_back(prefix);
          next.back().push_back(u);
        }
      acc = std::move(next);
    }
    out.insert(acc.begin(), acc.end());
  }
  return out;
}

// read_cached of all selections at once, each compared with read().
void expect_cached_equals_read(const Array& a, const std::vector<ArraySelection>& sels, ChunkCache& cache) {
  std::vector<Buffer> got;
  std::vector<MutableByteView> dests;
  for (const auto& s : sels) got.emplace_back(bytes_of(a, s));
  for (auto& b : got) dests.push_back(b.span());
  a.read_cached(sels, dests, cache);
  for (std::size_t i = 0; i < sels.size(); ++i) {
    Buffer want(bytes_of(a, sels[i]));
    a.read(sels[i], want.span());
    ASSERT_EQ(std::memcmp(want.data(), got[i].data(), want.size()), 0) << a.describe() << " selection " << i;
  }
}

struct CachedCase {
  std::string name;
  std::function<ArrayPtr(const fs::path& tmp)> make;
};

// A v3 array with fill 7.5 whose chunks (1, *) are missing; edge chunks on both dims.
ArrayPtr v3_with_missing_chunks(const fs::path& dir) {
  const Shape shape{23, 31};
  json meta = v3_array_json(shape, {5, 7}, "float32", json::array({bytes_codec(), zstd_codec()}), 7.5);
  auto values = ramp(shape_size(shape));
  write_v3_array(dir, meta, values.data(), 4, [](const std::vector<std::uint64_t>& c) { return c[0] == 1; });
  return zarr::open_array(make_file_store(dir.string()), "");
}

// Nested sharding (shards 8x8 of sub-shards 4x4 of inner chunks 2x2), one shard missing.
ArrayPtr v3_nested_shards(const fs::path& dir) {
  const Shape shape{19, 13};
  json inner = json::array({sharding_codec({2, 2}, json::array({bytes_codec(), zstd_codec()}), "start")});
  json meta = v3_array_json(shape, {8, 8}, "int32", json::array({sharding_codec({4, 4}, inner, "end")}), -9);
  std::vector<std::int32_t> values(shape_size(shape));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::int32_t>(i * 7 - 100);
  write_v3_array(dir, meta, values.data(), 4,
                 [](const std::vector<std::uint64_t>& c) { return c[0] == 1 && c[1] == 0; });
  return zarr::open_array(make_file_store(dir.string()), "");
}

class ReadCached : public ::testing::TestWithParam<CachedCase> {};

}  // namespace

TEST_P(ReadCached, RandomSelectionsEqualRead) {
  TempDir tmp;
  ArrayPtr a = GetParam().make(tmp.path());
  std::mt19937 rng(1234);
  ChunkCache cache(ChunkCache::kDefaultBudget);
  for (int round = 0; round < 8; ++round) {
    std::vector<ArraySelection> sels;
    for (int i = 0; i < 6; ++i) sels.push_back(random_selection(a->shape(), rng));
    expect_cached_equals_read(*a, sels, cache);
  }
  // The whole array and single elements at the far corner (edge chunks).
  ArraySelection all, corner;
  for (auto n : a->shape()) {
    all.push_back(IndexRange::all(n));
    corner.push_back({n - 1, 1, 1});
  }
  expect_cached_equals_read(*a, {all, corner}, cache);
  EXPECT_GT(cache.stats().hits, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Arrays, ReadCached,
    ::testing::Values(
        CachedCase{"era5_v2_t2m", [](const fs::path&) { return sample_array("era5_sample_v2.zarr", "t2m"); }},
        CachedCase{"era5_v2_msl_int16", [](const fs::path&) { return sample_array("era5_sample_v2.zarr", "msl"); }},
        CachedCase{"era5_v3_sharded", [](const fs::path&) { return sample_array("era5_sample_v3.zarr", "t2m"); }},
        CachedCase{"v3_missing_chunks_fill", v3_with_missing_chunks},
        CachedCase{"v3_nested_shards", v3_nested_shards}),
    [](const auto& info) { return info.param.name; });

TEST(ReadCachedStats, SharedChunksAreFetchedOnceThenHit) {
  for (const char* store : {"era5_sample_v2.zarr", "era5_sample_v3.zarr"}) {
    ArrayPtr a = sample_array(store, "t2m");
    ChunkCache cache(ChunkCache::kDefaultBudget);
    const std::vector<ArraySelection> sels{{{0, 10, 1}, {0, 50, 1}, {0, 50, 1}},
                                           {{5, 25, 1}, {30, 15, 1}, {10, 10, 1}},
                                           {{40, 20, -2}, {60, 30, -2}, {80, 5, -3}}};
    const auto distinct = units_of(*a, sels);
    expect_cached_equals_read(*a, sels, cache);
    CacheStats s = cache.stats();
    EXPECT_EQ(s.misses, distinct.size()) << store;
    EXPECT_EQ(s.hits, 0u) << store;
    const std::uint64_t unit_bytes = shape_size(a->read_chunk_shape()) * 4;
    EXPECT_EQ(s.bytes_fetched, distinct.size() * unit_bytes) << store;
    EXPECT_EQ(s.bytes_unique, distinct.size() * unit_bytes) << store;
    std::uint64_t delivered = 0;
    for (const auto& sel : sels) delivered += bytes_of(*a, sel);
    EXPECT_EQ(s.bytes_delivered, delivered) << store;
    EXPECT_DOUBLE_EQ(s.read_amplification(), 1.0) << store;

    expect_cached_equals_read(*a, sels, cache);  // everything is in memory now
    s = cache.stats();
    EXPECT_EQ(s.misses, distinct.size()) << store;
    EXPECT_EQ(s.hits, distinct.size()) << store;
    EXPECT_DOUBLE_EQ(s.hit_rate(), 0.5) << store;
  }
}

TEST(ReadCachedStats, ArraysOfOneStoreDoNotShareKeys) {
  ArrayPtr t2m = sample_array("era5_sample_v2.zarr", "t2m");
  ArrayPtr u10 = sample_array("era5_sample_v2.zarr", "u10");
  EXPECT_NE(t2m->cache_id(), u10->cache_id());
  // Opened twice, the same array shares its cached chunks.
  EXPECT_EQ(t2m->cache_id(), sample_array("era5_sample_v2.zarr", "t2m")->cache_id());
  ChunkCache cache(ChunkCache::kDefaultBudget);
  const std::vector<ArraySelection> sels{{{0, 2, 1}, {0, 2, 1}, {0, 2, 1}}};
  expect_cached_equals_read(*t2m, sels, cache);
  expect_cached_equals_read(*u10, sels, cache);
  EXPECT_EQ(cache.stats().misses, 2u);
}

TEST(ReadCachedStats, MemoryStoresWithOnePathDoNotCollide) {
  auto write = [](float value) {
    auto store = make_memory_store();
    json meta = v3_array_json({4}, {4}, "float32", json::array({bytes_codec()}));
    store->set("zarr.json", meta.dump());
    const float v[4] = {value, value, value, value};
    store->set("c/0", ByteView(reinterpret_cast<const std::byte*>(v), sizeof v));
    return zarr::open_array(store, "");
  };
  ArrayPtr one = write(1.0f), two = write(2.0f);
  EXPECT_NE(one->cache_id(), two->cache_id());
  ChunkCache cache(1 << 20);
  const std::vector<ArraySelection> sels{{{0, 4, 1}}};
  float a[4], b[4];
  std::vector<MutableByteView> da{MutableByteView(reinterpret_cast<std::byte*>(a), sizeof a)};
  std::vector<MutableByteView> db{MutableByteView(reinterpret_cast<std::byte*>(b), sizeof b)};
  one->read_cached(sels, da, cache);
  two->read_cached(sels, db, cache);
  EXPECT_EQ(a[3], 1.0f);
  EXPECT_EQ(b[3], 2.0f);
}

TEST(ReadCachedStats, DisabledCacheReadsDirectly) {
  ArrayPtr a = sample_array("era5_sample_v3.zarr", "t2m");
  ChunkCache cache(0);
  std::mt19937 rng(7);
  std::vector<ArraySelection> sels;
  for (int i = 0; i < 5; ++i) sels.push_back(random_selection(a->shape(), rng));
  expect_cached_equals_read(*a, sels, cache);
  const CacheStats s = cache.stats();
  EXPECT_EQ(s.hits + s.misses, 0u);
  EXPECT_EQ(s.entries, 0u);
}

TEST(ReadCachedConcurrency, ManyThreadsFetchEachChunkOnce) {
  for (const char* store : {"era5_sample_v2.zarr", "era5_sample_v3.zarr"}) {
    ArrayPtr a = sample_array(store, "t2m");
    const NDArray full = a->read_all();
    const Shape& shape = a->shape();
    ChunkCache cache(ChunkCache::kDefaultBudget);
    constexpr int kThreads = 8, kWindows = 12;
    std::vector<std::vector<ArraySelection>> work(kThreads);
    std::vector<ArraySelection> all_windows;
    std::mt19937 rng(99);
    for (auto& w : work)
      for (int i = 0; i < kWindows; ++i) {
        // Overlapping 6 x 16 x 16 windows.
        w.push_back({{rng() % (shape[0] - 6), 6, 1}, {rng() % (shape[1] - 16), 16, 1}, {rng() % (shape[2] - 16), 16, 1}});
        all_windows.push_back(w.back());
      }
    std::atomic<int> wrong = 0;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        for (const auto& win : work[t]) {
          std::vector<float> got(6 * 16 * 16);
          std::vector<MutableByteView> dest{MutableByteView(reinterpret_cast<std::byte*>(got.data()), got.size() * 4)};
          a->read_cached(std::vector<ArraySelection>{win}, dest, cache);
          const auto* ref = reinterpret_cast<const float*>(full.data.data());
          std::size_t k = 0;
          for (std::uint64_t i = 0; i < 6; ++i)
            for (std::uint64_t j = 0; j < 16; ++j)
              for (std::uint64_t l = 0; l < 16; ++l, ++k) {
                const float want = ref[((win[0].start + i) * shape[1] + win[1].start + j) * shape[2] + win[2].start + l];
                if (std::memcmp(&want, &got[k], 4) != 0) ++wrong;
              }
        }
      });
    for (auto& t : threads) t.join();
    EXPECT_EQ(wrong, 0) << store;
    const CacheStats s = cache.stats();
    EXPECT_EQ(s.misses, units_of(*a, all_windows).size()) << store;  // each unit fetched once
    EXPECT_DOUBLE_EQ(s.read_amplification(), 1.0) << store;
  }
}

TEST(ReadCachedConcurrency, TinyBudgetStillGivesCorrectData) {
  ArrayPtr a = sample_array("era5_sample_v3.zarr", "t2m");
  const std::uint64_t unit_bytes = shape_size(a->read_chunk_shape()) * 4;
  for (std::uint64_t budget : {std::uint64_t{1}, 2 * unit_bytes}) {
    ChunkCache cache(budget);
    std::vector<std::thread> threads;
    std::atomic<int> failures = 0;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        std::mt19937 rng(static_cast<unsigned>(t));
        for (int i = 0; i < 4; ++i) {
          std::vector<ArraySelection> sels{random_selection(a->shape(), rng), random_selection(a->shape(), rng)};
          std::vector<Buffer> got;
          std::vector<MutableByteView> dests;
          for (const auto& s : sels) got.emplace_back(bytes_of(*a, s));
          for (auto& b : got) dests.push_back(b.span());
          a->read_cached(sels, dests, cache);
          for (std::size_t k = 0; k < sels.size(); ++k) {
            Buffer want(bytes_of(*a, sels[k]));
            a->read(sels[k], want.span());
            if (std::memcmp(want.data(), got[k].data(), want.size()) != 0) ++failures;
          }
        }
      });
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures, 0) << "budget " << budget;
    if (budget == 1) {
      EXPECT_EQ(cache.stats().peak_bytes_cached, 0u);  // no unit fits: none kept
    }
  }
}

TEST(ReadCachedErrors, MisuseAndCorruptChunks) {
  TempDir tmp;
  ArrayPtr a = v3_with_missing_chunks(tmp.path());
  ChunkCache cache(1 << 20);
  Buffer small(3);
  const std::vector<ArraySelection> sels{{{0, 2, 1}, {0, 2, 1}}};
  std::vector<MutableByteView> wrong_size{small.span()};
  EXPECT_THROW(a->read_cached(sels, wrong_size, cache), UsageError);
  EXPECT_THROW(a->read_cached(sels, std::vector<MutableByteView>{}, cache), UsageError);
  const std::vector<ArraySelection> outside{{{0, 30, 1}, {0, 2, 1}}};
  Buffer big(30 * 2 * 4);
  EXPECT_THROW(a->read_cached(outside, std::vector<MutableByteView>{big.span()}, cache), SelectionError);

  write_file(tmp.path() / "c" / "0" / "0", "this is not zstd");
  Buffer out(16);
  for (int attempt = 0; attempt < 2; ++attempt) {  // the failure is not cached
    try {
      a->read_cached(sels, std::vector<MutableByteView>{out.span()}, cache);
      FAIL() << "expected a CodecError";
    } catch (const CodecError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("c/0/0"), std::string::npos) << what;
      EXPECT_NE(what.find(tmp.str()), std::string::npos) << what;
    }
  }
  EXPECT_EQ(cache.stats().misses, 2u);
  EXPECT_EQ(cache.stats().entries, 0u);
}

TEST(ReadCachedErrors, StringArraysAreRefused) {
  TempDir tmp;
  json meta = v3_array_json({3}, {3}, "string", json::array({{{"name", "vlen-utf8"}}}), "");
  write_file(tmp.path() / "zarr.json", meta.dump());
  ArrayPtr a = zarr::open_array(make_file_store(tmp.str()), "");
  ChunkCache cache(1 << 20);
  Buffer out(3);
  EXPECT_THROW(a->read_cached(std::vector<ArraySelection>{{{0, 3, 1}}}, std::vector<MutableByteView>{out.span()}, cache),
               UsageError);
}

TEST(ReadCachedHttp, BatchesTheFetchesOfMissingChunks) {
  LAZYCUBE_REQUIRE_NGINX();
  TempDir www;
  fs::copy(kData / "era5_sample_v2.zarr", www.path() / "era5_sample_v2.zarr", fs::copy_options::recursive);
  NginxServer server(www.path());
  ArrayPtr local = sample_array("era5_sample_v2.zarr", "t2m");
  ArrayPtr remote = zarr::open_array(make_http_store(server.url() + "/era5_sample_v2.zarr"), "t2m");
  // 4 x 2 x 3 = 24 chunks, read as 8 windows; every request then takes 300 ms longer.
  std::vector<ArraySelection> sels;
  for (std::uint64_t t = 0; t < 4; ++t)
    for (std::uint64_t h = 0; h < 2; ++h) sels.push_back({{t * 24, 24, 1}, {h * 30, h ? 31u : 30u, 1}, {0, 81, 1}});
  const auto distinct = units_of(*local, sels);
  ASSERT_EQ(distinct.size(), 24u);
  server.set_faults("latency_ms = 300");
  ChunkCache cache(ChunkCache::kDefaultBudget);
  std::vector<Buffer> got;
  std::vector<MutableByteView> dests;
  for (const auto& s : sels) got.emplace_back(bytes_of(*remote, s));
  for (auto& b : got) dests.push_back(b.span());
  remote->read_cached(sels, dests, cache);
  for (std::size_t i = 0; i < sels.size(); ++i) {
    Buffer want(bytes_of(*local, sels[i]));
    local->read(sels[i], want.span());
    EXPECT_EQ(std::memcmp(want.data(), got[i].data(), want.size()), 0) << "window " << i;
  }
  EXPECT_EQ(cache.stats().misses, 24u);
  // Chunk requests in the access log ("GET /era5_sample_v2.zarr/t2m/0.1.2 ...").
  auto chunk_requests = [&] {
    const std::string log = server.access_log();
    std::size_t n = 0;
    for (std::size_t p = log.find("/t2m/"); p != std::string::npos; p = log.find("/t2m/", p + 1))
      n += std::isdigit(static_cast<unsigned char>(log[p + 5])) ? 1 : 0;
    return n;
  };
  for (int i = 0; i < 100 && chunk_requests() < 24; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(chunk_requests(), 24u);  // each chunk requested once
  // Fetched as one batch of overlapping requests: several connections at once (requests one
  // after the other would all reuse one keep-alive connection).
  {
    std::istringstream lines(server.access_log());
    std::set<std::string> connections;
    for (std::string line; std::getline(lines, line);)
      if (line.find("/t2m/") != std::string::npos) connections.insert(line.substr(0, line.find(' ')));
    EXPECT_GT(connections.size(), 2u) << "24 chunk fetches were not overlapped";
  }
  // The second pass is served from memory: no request at all.
  remote->read_cached(sels, dests, cache);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(chunk_requests(), 24u);
  EXPECT_EQ(cache.stats().hits, 24u);
}

namespace {

// Window i as the equivalent isel() slices of `var` (positive steps).
Indexers window_indexers(const Variable& var, const ArraySelection& w) {
  Indexers ix;
  for (std::size_t d = 0; d < w.size(); ++d)
    ix.emplace(var.dims()[d], Indexer(Slice{static_cast<std::int64_t>(w[d].start),
                                            static_cast<std::int64_t>(w[d].start + w[d].count * w[d].step),
                                            w[d].step}));
  return ix;
}

void expect_windows_equal_isel(const Variable& var, const std::vector<ArraySelection>& windows, ChunkCache* cache) {
  std::vector<Buffer> got;
  std::vector<MutableByteView> dests;
  for (const auto& w : windows) {
    std::uint64_t n = var.dtype().itemsize;
    for (const auto& r : w) n *= r.count;
    got.emplace_back(n);
  }
  for (auto& b : got) dests.push_back(b.span());
  var.read_windows_into(windows, dests, cache);
  for (std::size_t i = 0; i < windows.size(); ++i) {
    const NDArray want = var.isel(window_indexers(var, windows[i])).read();
    ASSERT_EQ(want.data.size(), got[i].size());
    EXPECT_EQ(std::memcmp(want.data.data(), got[i].data(), got[i].size()), 0) << var.name() << " window " << i;
  }
}

}  // namespace

TEST(ReadWindowsInto, CfDecodedWindowsEqualIselRead) {
  for (const char* store : {"era5_sample_v2.zarr", "era5_sample_v3.zarr"}) {
    const Dataset ds = open((kData / store).string());
    // msl is packed int16 with (float64) scale_factor / add_offset / _FillValue: decoded to float64.
    const Variable msl = ds["msl"].isel({{"time", Indexer(Slice{10, 90, 2})}, {"longitude", Indexer(Slice{5, {}, 1})}});
    ASSERT_FALSE(msl.cf().is_identity());
    ASSERT_EQ(msl.dtype().itemsize, 8u);
    const std::vector<ArraySelection> windows{{{0, 4, 1}, {0, 20, 1}, {0, 20, 1}},
                                              {{3, 6, 2}, {30, 31, 1}, {50, 26, 1}},
                                              {{39, 1, 1}, {60, 1, 1}, {75, 1, 1}}};
    ChunkCache cache(ChunkCache::kDefaultBudget);
    expect_windows_equal_isel(msl, windows, &cache);
    EXPECT_GT(cache.stats().misses, 0u) << store;
    expect_windows_equal_isel(msl, windows, nullptr);
    // Integer-selected dims are gone from the windows.
    const Variable t2m_at = ds["t2m"].isel({{"time", Indexer(std::int64_t{-3})}});
    expect_windows_equal_isel(t2m_at, {{{2, 10, 3}, {0, 81, 1}}, {{0, 61, 1}, {40, 1, 1}}}, &cache);
  }
}

TEST(ReadWindowsInto, ChecksWindowsAndDestinations) {
  const Dataset ds = open((kData / "era5_sample_v2.zarr").string());
  const Variable v = ds["t2m"].isel({{"time", Indexer(Slice{0, 10, 1})}});
  ChunkCache cache(1 << 20);
  Buffer out(4 * 2 * 2 * 2);
  const std::vector<MutableByteView> dests{out.span()};
  EXPECT_THROW(v.read_windows_into(std::vector<ArraySelection>{{{0, 2, 1}, {0, 2, 1}}}, dests, &cache), UsageError);
  EXPECT_THROW(v.read_windows_into(std::vector<ArraySelection>{{{0, 2, 1}, {0, 2, 1}, {0, 3, 1}}}, dests, &cache),
               UsageError);
  // Time 9 exists in the array but lies outside the variable's selection (10 steps).
  EXPECT_THROW(v.read_windows_into(std::vector<ArraySelection>{{{9, 2, 1}, {0, 2, 1}, {0, 2, 1}}}, dests, &cache),
               SelectionError);
  EXPECT_THROW(v.read_windows_into(std::vector<ArraySelection>{{{0, 2, 1}, {0, 2, 1}, {0, 2, 1}}}, {}, &cache),
               UsageError);
}
