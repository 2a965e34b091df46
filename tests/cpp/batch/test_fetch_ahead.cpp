// Fetch-ahead (BatchOptions::fetch_ahead_bytes) over a store that adds latency to every request
// and records them: many requests are in flight at once, chunk shuffle with an ample cache
// fetches every chunk exactly once, the byte budget holds, one slow request does not stall
// the ones behind it nor the assembly of the batches after its own, every sampler and resumed
// states give the same windows, the first batch over a million windows arrives in a few round
// trips, and under nginx's fault mix (503, 429, dropped connections) the same windows arrive.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "batch/batch_source.hpp"
#include "batch/fetch_ahead.hpp"
#include "batch/load_threads.hpp"
#include "lazycube/batch/batch_generator.hpp"
#include "lazycube/batch/forecast.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/store/store.hpp"
#include "nginx_server.hpp"
#include "test_support.hpp"

using namespace lazycube;
using namespace lazycube::batch;
namespace fs = std::filesystem;

namespace {

// How many times slower this build runs lazycube's own CPU work: the round-trip count below is
// measured against a simulated store latency, scaled by it so that the CPU time between the
// requests of one wave stays small beside it. ThreadSanitizer costs 5-15x, AddressSanitizer 2-4x
// (at 1x the first-batch wave split in two under ASan in CI: 4 round trips).
#if defined(LAZYCUBE_SANITIZER_THREAD)
constexpr int kBuildSlowdown = 8;
#elif defined(LAZYCUBE_SANITIZER_ADDRESS)
constexpr int kBuildSlowdown = 4;
#else
constexpr int kBuildSlowdown = 1;
#endif

constexpr std::uint64_t kT = 64, kY = 32, kX = 32;  // 64 chunks of 1 x 32 x 32 float32 (4 KiB)
constexpr std::uint64_t kChunkBytes = kY * kX * 4;

float cell(std::uint64_t t, std::uint64_t y, std::uint64_t x) { return static_cast<float>(t * 10000 + y * 100 + x); }

// A Zarr v2 array `v` (time, y, x), one uncompressed chunk per time step.
void write_store(const std::filesystem::path& dir) {
  const std::string zgroup = R"({"zarr_format": 2})";
  const std::string zarray = R"({"zarr_format": 2, "shape": [64, 32, 32], "chunks": [1, 32, 32], "dtype": "<f4",
                                 "compressor": null, "fill_value": null, "filters": null, "order": "C"})";
  const std::string zattrs = R"({"_ARRAY_DIMENSIONS": ["time", "y", "x"]})";
  test::write_file(dir / ".zgroup", zgroup);
  fs::create_directories(dir / "v");
  test::write_file(dir / "v" / ".zarray", zarray);
  test::write_file(dir / "v" / ".zattrs", zattrs);
  // Consolidated, as remote stores are (plain HTTP cannot list).
  test::write_file(dir / ".zmetadata", R"({"zarr_consolidated_format": 1, "metadata": {".zgroup": )" + zgroup +
                                           R"(, "v/.zarray": )" + zarray + R"(, "v/.zattrs": )" + zattrs + "}}");
  std::vector<float> chunk(kY * kX);
  for (std::uint64_t t = 0; t < kT; ++t) {
    for (std::uint64_t y = 0; y < kY; ++y)
      for (std::uint64_t x = 0; x < kX; ++x) chunk[y * kX + x] = cell(t, y, x);
    test::write_file(dir / "v" / (std::to_string(t) + ".0.0"), chunk.data(), chunk.size() * 4);
  }
}

// write_store's group with an hourly CF time coordinate (int64 hours since 2000-01-01), so
// that forecast samples can be anchored on it.
void write_forecast_store(const std::filesystem::path& dir) {
  write_store(dir);
  const std::string zgroup = R"({"zarr_format": 2})";
  const std::string zarray = R"({"zarr_format": 2, "shape": [64, 32, 32], "chunks": [1, 32, 32], "dtype": "<f4",
                                 "compressor": null, "fill_value": null, "filters": null, "order": "C"})";
  const std::string zattrs = R"({"_ARRAY_DIMENSIONS": ["time", "y", "x"]})";
  const std::string tarray = R"({"zarr_format": 2, "shape": [64], "chunks": [64], "dtype": "<i8",
                                 "compressor": null, "fill_value": null, "filters": null, "order": "C"})";
  const std::string tattrs = R"({"_ARRAY_DIMENSIONS": ["time"], "units": "hours since 2000-01-01 00:00:00", "calendar": "standard"})";
  fs::create_directories(dir / "time");
  test::write_file(dir / "time" / ".zarray", tarray);
  test::write_file(dir / "time" / ".zattrs", tattrs);
  std::vector<std::int64_t> hours(kT);
  for (std::uint64_t t = 0; t < kT; ++t) hours[t] = static_cast<std::int64_t>(t);
  test::write_file(dir / "time" / "0", hours.data(), hours.size() * 8);
  test::write_file(dir / ".zmetadata", R"({"zarr_consolidated_format": 1, "metadata": {".zgroup": )" + zgroup +
                                           R"(, "v/.zarray": )" + zarray + R"(, "v/.zattrs": )" + zattrs +
                                           R"(, "time/.zarray": )" + tarray + R"(, "time/.zattrs": )" + tattrs + "}}");
}

// A consolidated Zarr v2 group whose windows of 1 x 2 x 2 (overlap 1) number over a million:
// `v` (time 64, y 128, x 128) in chunks of 1 x 128 x 128, and the three index coordinates,
// each its own array (over a remote store, a request each).
void write_million_window_store(const std::filesystem::path& dir) {
  constexpr std::uint64_t n = 128;
  std::string meta = R"({"zarr_consolidated_format": 1, "metadata": {".zgroup": {"zarr_format": 2})";
  auto add_array = [&](const std::string& name, const std::string& zarray, const std::string& dims,
                       const std::vector<std::pair<std::string, std::string>>& chunks) {
    const std::string zattrs = R"({"_ARRAY_DIMENSIONS": )" + dims + "}";
    fs::create_directories(dir / name);
    test::write_file(dir / name / ".zarray", zarray);
    test::write_file(dir / name / ".zattrs", zattrs);
    for (const auto& [key, bytes] : chunks) test::write_file(dir / name / key, bytes);
    meta += R"(, ")" + name + R"(/.zarray": )" + zarray + R"(, ")" + name + R"(/.zattrs": )" + zattrs;
  };
  auto coord = [&](const std::string& name, std::uint64_t len) {
    std::vector<double> values(len);
    for (std::uint64_t i = 0; i < len; ++i) values[i] = static_cast<double>(i);
    const std::string l = std::to_string(len);
    add_array(name, R"({"zarr_format": 2, "shape": [)" + l + R"(], "chunks": [)" + l +
                        R"(], "dtype": "<f8", "compressor": null, "fill_value": null, "filters": null, "order": "C"})",
              R"([")" + name + R"("])",
              {{"0", std::string(reinterpret_cast<const char*>(values.data()), len * 8)}});
  };
  std::vector<std::pair<std::string, std::string>> chunks;
  std::vector<float> chunk(n * n);
  for (std::uint64_t t = 0; t < kT; ++t) {
    for (std::uint64_t i = 0; i < n * n; ++i) chunk[i] = static_cast<float>(t * 100000 + i);
    chunks.emplace_back(std::to_string(t) + ".0.0", std::string(reinterpret_cast<const char*>(chunk.data()), n * n * 4));
  }
  add_array("v", R"({"zarr_format": 2, "shape": [64, 128, 128], "chunks": [1, 128, 128], "dtype": "<f4",
                     "compressor": null, "fill_value": null, "filters": null, "order": "C"})",
            R"(["time", "y", "x"])", chunks);
  coord("time", kT);
  coord("y", n);
  coord("x", n);
  test::write_file(dir / ".zgroup", R"({"zarr_format": 2})");
  test::write_file(dir / ".zmetadata", meta + "}}");
}

// Wraps a store: every request waits `latency`, get_each runs up to `admission` requests at once
// (threads), and the store records how many were in flight at most and how often each key was read.
class LatencyStore final : public Store {
 public:
  LatencyStore(std::shared_ptr<Store> inner, std::chrono::milliseconds latency, std::size_t admission = 32)
      : inner_(std::move(inner)), latency_(latency), admission_(admission) {}
  // From now on, requests for `key` take `latency` instead (a slow retry).
  void slow_down(std::string key, std::chrono::milliseconds latency) {
    slow_key_ = std::move(key);
    slow_latency_ = latency;
    slow_since_ = std::chrono::steady_clock::now();
  }
  // Reads of other chunks of `v`, made since slow_down(), that had ended when the slow read ended.
  int chunk_reads_done_before_slow_one_ended() const {
    std::lock_guard lock(mutex_);
    const auto since = [&](const Request& r) { return r.start >= slow_since_; };
    const auto slow = std::find_if(timeline_.begin(), timeline_.end(),
                                   [&](const Request& r) { return since(r) && r.key == slow_key_; });
    if (slow == timeline_.end()) return 0;
    return static_cast<int>(std::count_if(timeline_.begin(), timeline_.end(), [&](const Request& r) {
      return since(r) && r.key != slow_key_ && r.key.rfind("v/", 0) == 0 && r.key.find("/.") == std::string::npos &&
             r.end <= slow->end;
    }));
  }
  std::string url() const override { return inner_->url(); }
  bool prefers_batches() const override { return true; }
  std::optional<Buffer> get(std::string_view key, ByteRange range) override {
    const auto started = std::chrono::steady_clock::now();
    const int now = ++in_flight_;
    for (int seen = max_in_flight_.load(); now > seen && !max_in_flight_.compare_exchange_weak(seen, now);) {
    }
    const bool slow = !slow_key_.empty() && key == slow_key_;
    std::this_thread::sleep_for(slow ? slow_latency_ : latency_);
    auto out = inner_->get(key, range);
    --in_flight_;
    std::lock_guard lock(mutex_);
    ++reads_[std::string(key)];
    timeline_.push_back({std::string(key), started, std::chrono::steady_clock::now()});
    return out;
  }
  void get_each(const std::vector<ByteRequest>& requests, const ByteSink& sink) override {
    // As the HTTP engine does: after an error (also one the sink throws) nothing more starts.
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::mutex sink_mutex;
    std::exception_ptr error;
    std::vector<std::thread> workers;
    for (std::size_t w = 0; w < std::min(admission_, requests.size()); ++w)
      workers.emplace_back([&] {
        for (std::size_t i; !failed && (i = next++) < requests.size();) {
          try {
            auto got = get(requests[i].key, requests[i].range);
            std::lock_guard lock(sink_mutex);
            if (!error) sink(i, std::move(got));
          } catch (...) {
            std::lock_guard lock(sink_mutex);
            if (!error) error = std::current_exception();
            failed = true;
          }
        }
      });
    for (auto& t : workers) t.join();
    if (error) std::rethrow_exception(error);
  }
  std::optional<std::uint64_t> size(std::string_view key) override { return inner_->size(key); }
  std::vector<std::string> list(std::string_view prefix) override { return inner_->list(prefix); }
  std::vector<std::string> list_dir(std::string_view prefix) override { return inner_->list_dir(prefix); }

  // Round trips of the requests that started before `until`: a request that started after
  // another one had ended may have waited for it, so it is one round trip further along; the
  // answer is the longest such chain.
  int round_trips_before(std::chrono::steady_clock::time_point until) const {
    std::lock_guard lock(mutex_);
    std::vector<Request> rs;
    for (const auto& r : timeline_)
      if (r.start < until) rs.push_back(r);
    std::sort(rs.begin(), rs.end(), [](const Request& a, const Request& b) { return a.start < b.start; });
    std::vector<int> depth(rs.size(), 1);
    int most = 0;
    for (std::size_t i = 0; i < rs.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j)
        if (rs[j].end <= rs[i].start) depth[i] = std::max(depth[i], depth[j] + 1);
      most = std::max(most, depth[i]);
    }
    return most;
  }
  int max_in_flight() const { return max_in_flight_.load(); }
  int in_flight() const { return in_flight_.load(); }
  void reset_max_in_flight() { max_in_flight_ = 0; }
  // Reads of each chunk key of `v` (metadata keys left out).
  std::map<std::string, int> chunk_reads() const {
    std::lock_guard lock(mutex_);
    std::map<std::string, int> out;
    for (const auto& [k, n] : reads_)
      if (k.rfind("v/", 0) == 0 && k.find("/.") == std::string::npos) out[k] = n;
    return out;
  }

 private:
  std::shared_ptr<Store> inner_;
  std::chrono::milliseconds latency_;
  std::size_t admission_;
  std::atomic<int> in_flight_{0}, max_in_flight_{0};
  std::string slow_key_;
  std::chrono::milliseconds slow_latency_{0};
  std::chrono::steady_clock::time_point slow_since_;
  struct Request {
    std::string key;
    std::chrono::steady_clock::time_point start, end;
  };
  mutable std::mutex mutex_;
  std::map<std::string, int> reads_;
  std::vector<Request> timeline_;
};

struct Fixture {
  test::TempDir dir;
  std::shared_ptr<LatencyStore> store;
  Dataset ds;
  int open_in_flight = 0;  // requests in flight at once while opening
  explicit Fixture(int latency_ms = 10, std::size_t admission = 32) {
    write_store(dir.path());
    store = std::make_shared<LatencyStore>(make_file_store(dir.str()), std::chrono::milliseconds(latency_ms), admission);
    ds = lazycube::open(Location{store, ""});
    open_in_flight = store->max_in_flight();
    store->reset_max_in_flight();
  }
};

BatchOptions options(Shuffle shuffle, std::uint64_t cache_bytes, std::optional<std::uint64_t> fetch_ahead) {
  BatchOptions o;
  o.input_dims = {{"time", 1}, {"y", 8}, {"x", 8}};  // 16 windows per chunk, 1024 in all
  o.batch_size = 8;
  o.variables = {"v"};
  o.shuffle = shuffle;
  o.seed = 7;
  o.cache = std::make_shared<ChunkCache>(cache_bytes);
  o.fetch_ahead_bytes = fetch_ahead;
  return o;
}

// Every value of every window is the one written there; returns the window ids seen.
std::vector<std::uint64_t> check_batch(const Batch& b) {
  const auto& x = b.arrays.at(0);
  const float* v = reinterpret_cast<const float*>(x.data.get());
  for (std::size_t k = 0; k < b.windows.size(); ++k) {
    const auto& w = b.windows[k];
    for (std::uint64_t y = 0; y < 8; ++y)
      for (std::uint64_t xx = 0; xx < 8; ++xx) {
        const float want = cell(w[0].start, w[1].start + y, w[2].start + xx);
        const float got = v[k * 64 + y * 8 + xx];
        if (got != want) {
          ADD_FAILURE() << "window " << b.window_ids[k] << " at (" << y << ", " << xx << "): " << got << " != " << want;
          return {};
        }
      }
  }
  return b.window_ids;
}

// Epoch 0's order of `source`, for driving a FetchAhead directly.
EpochOrder epoch_zero(const BatchSource& source) {
  const BatchOptions& o = source.options();
  return EpochOrder(source.order_grid(), o.shuffle, o.seed, 0, o.shard, source.chunk_starts());
}

std::vector<std::uint64_t> run_epoch(BatchGenerator& g) {
  std::vector<std::uint64_t> ids;
  while (auto b = g.next()) {
    auto seen = check_batch(*b);
    ids.insert(ids.end(), seen.begin(), seen.end());
  }
  return ids;
}

}  // namespace

TEST(FetchAhead, ChunkShuffleFetchesEveryChunkOnceWithManyRequestsInFlight) {
  Fixture f;
  BatchGenerator g(f.ds, options(Shuffle::Chunk, 64 << 20, std::nullopt));
  const auto ids = run_epoch(g);
  EXPECT_EQ(ids.size(), 1024u);
  const auto reads = f.store->chunk_reads();
  EXPECT_EQ(reads.size(), kT);
  for (const auto& [key, n] : reads) EXPECT_EQ(n, 1) << key;
  EXPECT_GE(f.store->max_in_flight(), 8) << "fetch-ahead should keep many requests in flight";
  const CacheStats s = g.cache()->stats();
  EXPECT_GT(s.fetched_ahead, kT / 2);
  EXPECT_EQ(s.fetched_ahead_unused, 0u);
  EXPECT_DOUBLE_EQ(s.read_amplification(), 1.0);
}

TEST(FetchAhead, OpeningSendsTheMetadataProbesAtOnce) {
  Fixture f;
  // zarr.json, .zarray, .zattrs, .zgroup and .zmetadata of the root in one round trip.
  EXPECT_GE(f.open_in_flight, 4);
}

TEST(FetchAhead, FirstBatchOverAMillionWindowsInThreeRoundTrips) {
  // Open (the metadata probes together), then the coordinates together with the first batch's
  // chunks: two round trips; three allow for a probe that follows up on another.
  test::TempDir dir;
  write_million_window_store(dir.path());
  for (auto shuffle : {Shuffle::Random, Shuffle::Chunk, Shuffle::None}) {
    auto store = std::make_shared<LatencyStore>(make_file_store(dir.str()),
                                                std::chrono::milliseconds(40 * kBuildSlowdown), 64);
    Dataset ds = lazycube::open(Location{store, ""});
    BatchOptions o;
    o.input_dims = {{"time", 1}, {"y", 2}, {"x", 2}};
    o.input_overlap = {{"y", 1}, {"x", 1}};
    o.batch_size = 16;
    o.variables = {"v"};
    o.shuffle = shuffle;
    o.cache = std::make_shared<ChunkCache>(64 << 20);
    BatchGenerator g(ds, o);
    ASSERT_GE(g.total_windows(), 1000000u);
    auto b = g.next();
    const auto first = std::chrono::steady_clock::now();
    ASSERT_TRUE(b);
    ASSERT_EQ(b->coords.count("y"), 1u) << "the first batch carries its coordinate labels";
    const float* v = reinterpret_cast<const float*>(b->arrays.at(0).data.get());
    const auto& w = b->windows.front();
    EXPECT_EQ(v[0], static_cast<float>(w[0].start * 100000 + w[1].start * 128 + w[2].start));
    const int trips = store->round_trips_before(first);
    EXPECT_LE(trips, 3) << shuffle_name(shuffle) << ": " << trips << " round trips";
    EXPECT_GE(trips, 2) << shuffle_name(shuffle);  // open, then data: the count sees them
  }
}

TEST(FetchAhead, OffLeavesOneChunkRequestInFlightUnderChunkShuffle) {
  Fixture f;
  BatchGenerator g(f.ds, options(Shuffle::Chunk, 64 << 20, 0));
  EXPECT_EQ(run_epoch(g).size(), 1024u);
  // A batch of 8 windows lies in one chunk group, or straddles two.
  EXPECT_LE(f.store->max_in_flight(), 2);
  EXPECT_EQ(g.cache()->stats().fetched_ahead, 0u);
}

TEST(FetchAhead, ByteBudgetHoldsUnderRandomShuffle) {
  Fixture f(2);
  const std::uint64_t cache = 16 * kChunkBytes, budget = 8 * kChunkBytes;
  BatchGenerator g(f.ds, options(Shuffle::Random, cache, budget));
  auto ids = run_epoch(g);
  std::sort(ids.begin(), ids.end());
  ASSERT_EQ(ids.size(), 1024u);
  for (std::uint64_t i = 0; i < ids.size(); ++i) ASSERT_EQ(ids[i], i);
  const CacheStats s = g.cache()->stats();
  EXPECT_GT(s.fetched_ahead, 0u);
  // Held chunks stay within the fetch-ahead budget; the reader pins at most its own round
  // (a batch of 8 windows: at most 8 chunks) beyond that.
  EXPECT_LE(s.peak_bytes_cached, cache + budget + 8 * kChunkBytes);
  EXPECT_LE(f.store->max_in_flight(), static_cast<int>(budget / kChunkBytes + 8));
}

TEST(FetchAhead, OneSlowRequestDoesNotStallTheRequestsBehindIt) {
  Fixture f(5);
  // The 5th chunk of the epoch's order takes 400 ms (as a retry after a backoff would).
  BatchOptions o = options(Shuffle::Chunk, 64 << 20, 16 * kChunkBytes);  // rounds of 2 chunks
  std::string slow;
  {
    BatchGenerator probe(f.ds, o);
    auto b = probe.batch(4 * 16 / 8);  // batch 8: the 5th chunk group (16 windows per chunk)
    slow = "v/" + std::to_string(b.windows.front()[0].start) + ".0.0";
  }
  f.store->slow_down(slow, std::chrono::milliseconds(400));
  o.cache = std::make_shared<ChunkCache>(64 << 20);  // not the probe's, which holds that chunk
  BatchGenerator g(f.ds, o);
  EXPECT_EQ(run_epoch(g).size(), 1024u);
  // Before it ended, the rounds after its own went on, up to the byte budget (16 chunks): 11
  // chunk reads were done by then, where a slow read that held back the rounds behind it would
  // leave 5 (the 4 chunks before it in the order and the other chunk of its round). Counted by
  // the end of the slow read, not while it was in flight: a round behind it may start (and
  // end) before the slow read starts, all the more under ThreadSanitizer.
  EXPECT_GE(f.store->chunk_reads_done_before_slow_one_ended(), 8);
  EXPECT_DOUBLE_EQ(g.cache()->stats().read_amplification(), 1.0);
}

TEST(FetchAhead, ABatchWaitingOnASlowChunkDoesNotHoldBackTheBatchesAfterIt) {
  Fixture f(5);
  // Without fetch-ahead every chunk is read by the batch that needs it. Batches 0 and 1 read
  // chunk 0 (16 windows per chunk, 8 per batch), whose read takes 1 s (as a request waiting out
  // Retry-After would); batches 2..7 read chunks 1..3.
  BatchOptions o = options(Shuffle::None, 64 << 20, 0);
  o.prefetch = 8;
  f.store->slow_down("v/0.0.0", std::chrono::milliseconds(1000));
  BatchGenerator g(f.ds, o);
  EXPECT_EQ(run_epoch(g).size(), 1024u);
  // The prefetched batches after the waiting ones were assembled meanwhile: their three chunks
  // had been read before the slow read ended (a producer assembling one batch after another
  // reads none of them until batch 0 is done).
  EXPECT_EQ(f.store->chunk_reads_done_before_slow_one_ended(), 3);
  EXPECT_DOUBLE_EQ(g.cache()->stats().read_amplification(), 1.0);
}

TEST(FetchAhead, AnUnsetBudgetGrowsToALeadInTimeWithinItsRoom) {
  Fixture f(1);
  const BatchOptions o = options(Shuffle::None, 64 << 20, std::nullopt);
  const BatchSource source(f.ds, o);
  const EpochOrder order = epoch_zero(source);
  const WindowReads reads(source, order);
  // Starts with 16 chunks' bytes, may grow to the whole store's 64, keeping 4 s of the
  // consumption ahead. The consumer below assembles a chunk's 16 windows every 50 ms (20
  // chunks/s: 4 s is 80 chunks), so after the first second of consumption the budget is 64.
  FetchAhead fetch(source.cache(), 16 * kChunkBytes, 64 * kChunkBytes, 4.0);
  fetch.start(reads, 0);
  EXPECT_EQ(fetch.budget(), 16 * kChunkBytes);
  const auto began = std::chrono::steady_clock::now();
  std::uint64_t chunks = 0;
  std::size_t read_before_growth = 0;
  while (std::chrono::steady_clock::now() - began < std::chrono::milliseconds(1300)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    fetch.consumed(16 * ++chunks);
    if (chunks == 10) read_before_growth = f.store->chunk_reads().size();
  }
  EXPECT_EQ(fetch.budget(), 64 * kChunkBytes);
  // Until then the walk stayed within 16 chunks of the consumer; now it goes further (a
  // round counts a chunk its windows share with the next round again: about 30 chunks).
  EXPECT_LE(read_before_growth, 10u + 16u + 1u);
  const std::size_t want = std::min<std::size_t>(kT, chunks + 24);
  for (int k = 0; k < 300 && f.store->chunk_reads().size() < want; ++k)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GE(f.store->chunk_reads().size(), want) << chunks << " chunks consumed";
  fetch.stop();

  // A budget the caller set (most == start) stays what it is.
  FetchAhead fixed(source.cache(), 4 * kChunkBytes, 4 * kChunkBytes, 4.0);
  fixed.start(reads, 0);
  for (std::uint64_t c = 1; c <= 24; ++c) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    fixed.consumed(16 * c);
  }
  EXPECT_EQ(fixed.budget(), 4 * kChunkBytes);
  fixed.stop();
}

TEST(FetchAhead, StopGivesUpTheLoadsNotYetDelivered) {
  Fixture f(300, 2);  // 300 ms a request, 2 at once per read
  const BatchOptions o = options(Shuffle::None, 64 << 20, std::nullopt);
  const BatchSource source(f.ds, o);
  const EpochOrder order = epoch_zero(source);
  const WindowReads reads(source, order);
  FetchAhead fetch(source.cache(), 64 * kChunkBytes, 64 * kChunkBytes);  // rounds of 8 chunks, all 64 at once
  fetch.start(reads, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto t0 = std::chrono::steady_clock::now();
  fetch.stop();
  const double stopped = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The requests under way end (300 ms); the rest of the rounds (300 ms per 2 chunks of each)
  // are not started: stop() does not wait for the whole budget to arrive (1.2 s for a round
  // of 8 chunks).
  EXPECT_LT(stopped, 0.55 * kBuildSlowdown);
  EXPECT_LT(f.store->chunk_reads().size(), kT);
}

// Waits (polling) until `done()` holds; false after 20 s. A wait for an event, never a timing.
template <class Done>
bool eventually(Done&& done) {
  for (int k = 0; k < 2000 && !done(); ++k) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return done();
}

std::size_t total_chunk_reads(const LatencyStore& store) {
  std::size_t n = 0;
  for (const auto& [key, reads] : store.chunk_reads()) n += static_cast<std::size_t>(reads);
  return n;
}

TEST(FetchAhead, AWalkOverCachedChunksStartsNoLoad) {
  // Issue 47: a warm epoch's rounds started a thread per array per round (and the round's own)
  // to look up chunks the cache held. They are pinned by the walker now: no load, no thread.
  Fixture f(1);
  const BatchOptions o = options(Shuffle::Random, 64 << 20, std::nullopt);
  const BatchSource source(f.ds, o);
  const EpochOrder order = epoch_zero(source);
  const WindowReads reads(source, order);
  FetchAhead fetch(source.cache(), std::uint64_t{1} << 30, std::uint64_t{1} << 30);  // the whole epoch at once
  fetch.start(reads, 0);
  ASSERT_TRUE(eventually([&] { return !fetch.walking(); }));
  // Every chunk decoded into the cache (stop() gives up what is not delivered yet).
  ASSERT_TRUE(eventually([&] { return source.cache()->stats().entries == kT; }));
  fetch.consumed(order.size());
  fetch.stop();
  const std::uint64_t cold_loads = fetch.loads_started();
  const std::size_t threads = fetch.load_threads(), chunk_reads = total_chunk_reads(*f.store);
  EXPECT_GT(cold_loads, 0u);
  EXPECT_EQ(chunk_reads, kT);
  const CacheStats cold = source.cache()->stats();

  // The same walk again, every chunk cached: the rounds pin them and start nothing.
  fetch.start(reads, 0);
  ASSERT_TRUE(eventually([&] { return !fetch.walking(); }));
  // Every chunk is pinned by a round now: a budget of 0 evicts nothing held.
  source.cache()->set_budget(0);
  EXPECT_EQ(source.cache()->stats().entries, kT);
  fetch.consumed(order.size());
  fetch.stop();
  source.cache()->set_budget(0);
  EXPECT_EQ(source.cache()->stats().entries, 0u) << "released with the rounds";
  EXPECT_EQ(fetch.loads_started(), cold_loads);
  EXPECT_EQ(fetch.load_threads(), threads);
  EXPECT_EQ(total_chunk_reads(*f.store), chunk_reads);
  const CacheStats warm = source.cache()->stats();
  EXPECT_EQ(warm.hits, cold.hits) << "a fetch-ahead pin is no reader's hit";
  EXPECT_EQ(warm.misses, cold.misses);
}

TEST(FetchAhead, RoundsReuseTheirLoadThreads) {
  Fixture f(1);
  const BatchOptions o = options(Shuffle::None, 64 << 20, std::nullopt);
  const BatchSource source(f.ds, o);
  const EpochOrder order = epoch_zero(source);
  const WindowReads reads(source, order);
  // Rounds of 2 chunks within a budget of 16: at most 16 rounds (each at least a chunk) hold
  // loads at once, and the walk makes 32 or more (a thread per load before issue 47). The
  // consumer follows the loads (chunk c is consumed once c chunks are cached), so that the walk
  // does not skip rounds.
  FetchAhead fetch(source.cache(), 16 * kChunkBytes, 16 * kChunkBytes);
  fetch.start(reads, 0);
  for (std::uint64_t c = 1; c <= kT; ++c) {
    ASSERT_TRUE(eventually([&] { return source.cache()->stats().entries >= c; })) << "chunk " << c;
    fetch.consumed(16 * c);
  }
  fetch.stop();
  const std::uint64_t loads = fetch.loads_started();
  const std::size_t threads = fetch.load_threads();
  EXPECT_GE(loads, kT / 2);
  EXPECT_LE(threads, 24u);  // 16, and a few where a thread ending its load was not back yet
  EXPECT_LT(threads, loads) << "a thread per load";

  // The next epoch over the same (now cached) chunks, consumed as fast as it goes: its rounds
  // start no load and no thread.
  const std::size_t chunk_reads = total_chunk_reads(*f.store);
  fetch.start(reads, 0);
  for (std::uint64_t c = 1; c <= kT; ++c) fetch.consumed(16 * c);
  fetch.stop();
  EXPECT_EQ(fetch.loads_started(), loads);
  EXPECT_EQ(fetch.load_threads(), threads);
  EXPECT_EQ(total_chunk_reads(*f.store), chunk_reads);
}

// Issue 46: a forecast epoch (ForecastEpoch) walks the planner's order with fetch-ahead: the
// samples' chunks travel many at once ahead of the batches, so the epoch costs a few round
// trips, not one (or more) per batch; the batches are the schedule's, in its order, and each
// chunk is fetched once.
TEST(ForecastEpoch, FetchesTheComingSamplesChunksAheadInThePlannersOrder) {
  test::TempDir dir;
  write_forecast_store(dir.path());
  ForecastSpec spec = ForecastSpec::from_json(
      nlohmann::ordered_json{{"inputs", {"v"}}, {"targets", {"v"}}, {"input_offsets", {"-1h", "0h"}},
                             {"target_offsets", {"1h", "2h"}},
                             {"missing", "keep"}},  // no validity pass: the epoch reads every chunk
      {""});
  struct Run {
    int round_trips = 0;
    std::uint64_t batches = 0, fetched_ahead = 0;
    std::map<std::string, int> chunk_reads;
  };
  auto run = [&](std::optional<std::uint64_t> fetch_ahead, std::uint64_t prefetch) {
    auto store = std::make_shared<LatencyStore>(make_file_store(dir.str()),
                                                std::chrono::milliseconds(20 * kBuildSlowdown), 32);
    ForecastRuntime rt;
    rt.cache = std::make_shared<ChunkCache>(std::uint64_t{4} << 20);
    rt.index_dir = "off";
    std::vector<std::pair<std::string, Dataset>> streams;
    streams.emplace_back("", lazycube::open(Location{store, ""}));
    ForecastSampler sampler(std::move(streams), spec, rt);
    EXPECT_EQ(sampler.size(), kT - 3);
    const auto opened = std::chrono::steady_clock::now();
    EpochBatches schedule(sampler.size(), Shuffle::Chunk, 3, 0, {}, 4, false, sampler.planning());
    ForecastEpochOptions o;
    o.prefetch = prefetch;
    o.fetch_ahead_bytes = fetch_ahead;
    ForecastEpoch epoch(sampler, schedule, o);
    Run r;
    std::set<std::uint64_t> seen;
    while (auto b = epoch.next()) {
      const std::vector<std::uint64_t> want = schedule.batch(r.batches);
      EXPECT_EQ(b->samples, want) << "batch " << r.batches;
      EXPECT_EQ(b->index, schedule.rank_batch_index(r.batches));
      // every value is the one written at its anchor + offset
      const auto& s = b->streams.at(0);
      const float* in = reinterpret_cast<const float*>(s.inputs.data.get());
      const float* tg = reinterpret_cast<const float*>(s.targets.data.get());
      for (std::size_t k = 0; k < b->samples.size(); ++k) {
        const auto t = static_cast<std::uint64_t>((b->anchors[k] - 946684800LL * 1'000'000'000) / 3'600'000'000'000);
        EXPECT_EQ(in[(k * 2 + 0) * kY * kX + 33], cell(t - 1, 1, 1));
        EXPECT_EQ(in[(k * 2 + 1) * kY * kX + 33], cell(t, 1, 1));
        EXPECT_EQ(tg[(k * 2 + 1) * kY * kX + 33], cell(t + 2, 1, 1));
        EXPECT_TRUE(seen.insert(b->samples[k]).second) << "sample " << b->samples[k] << " twice";
      }
      ++r.batches;
    }
    EXPECT_EQ(seen.size(), sampler.size());
    r.round_trips = store->round_trips_before(std::chrono::steady_clock::now()) -
                    store->round_trips_before(opened);
    r.fetched_ahead = sampler.cache()->stats().fetched_ahead;
    r.chunk_reads = store->chunk_reads();
    return r;
  };
  const Run off = run(0, 0);
  const Run ahead = run(std::nullopt, 2);
  EXPECT_EQ(off.batches, (kT - 3 + 3) / 4);
  EXPECT_EQ(ahead.batches, off.batches);
  EXPECT_EQ(off.fetched_ahead, 0u);
  EXPECT_GT(ahead.fetched_ahead, kT / 2);
  for (const auto* r : {&off, &ahead}) {
    EXPECT_EQ(r->chunk_reads.size(), kT);
    for (const auto& [key, n] : r->chunk_reads) EXPECT_EQ(n, 1) << key;
  }
  // One batch after another without fetch-ahead: a round trip (or more) each.
  EXPECT_GE(off.round_trips, static_cast<int>(off.batches) / 2);
  EXPECT_LE(ahead.round_trips, static_cast<int>(off.batches) / 3)
      << ahead.round_trips << " round trips with fetch-ahead, " << off.round_trips << " without";
}

TEST(LoadThreads, ATaskStartsWhileAnotherBlocksAndIdleThreadsAreReused) {
  LoadThreads threads;
  std::promise<void> release_first;
  std::shared_future<void> released = release_first.get_future().share();
  std::promise<void> first_running, second_done;
  threads.run([&, released] {
    first_running.set_value();
    released.wait();
  });
  first_running.get_future().wait();
  threads.run([&] { second_done.set_value(); });
  // The second task ran although the first still blocks its thread (a queue behind it would
  // wait here for ever).
  EXPECT_EQ(second_done.get_future().wait_for(std::chrono::seconds(20)), std::future_status::ready);
  release_first.set_value();
  EXPECT_EQ(threads.threads(), 2u);
  // A task's thread goes back to waiting just after the task ends: wait until both do, so the
  // next task finds an idle thread whatever the scheduler's delays (no timing assumed).
  auto all_idle = [&] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (threads.idle() < threads.threads() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return threads.idle() == threads.threads();
  };
  ASSERT_TRUE(all_idle());
  // One task at a time from now on: the idle threads take them, none is started.
  for (int k = 0; k < 20; ++k) {
    std::promise<void> done;
    threads.run([&] { done.set_value(); });
    done.get_future().wait();
    ASSERT_TRUE(all_idle());
  }
  EXPECT_EQ(threads.threads(), 2u);
}

TEST(FetchAhead, AReaderThatJoinedACancelledLoadLoadsTheChunkItself) {
  Fixture f(1);
  const ArrayPtr v = f.ds.variable("v").array();
  auto cache = std::make_shared<ChunkCache>(64 << 20);
  f.store->slow_down("v/3.0.0", std::chrono::milliseconds(500));
  std::atomic<bool> cancel{false};
  std::thread loader([&] {
    EXPECT_THROW(v->load_units({{3, 0, 0}}, *cache, &cancel), Cancelled);
  });
  while (f.store->in_flight() == 0) std::this_thread::yield();  // its request is under way
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel = true;  // seen when the slow answer arrives
  });
  // This read joins the load in flight, which is then given up: it reads the chunk itself.
  std::vector<float> got(kY * kX);
  const ArraySelection sel{{3, 1, 1}, {0, kY, 1}, {0, kX, 1}};
  const MutableByteView dest(reinterpret_cast<std::byte*>(got.data()), got.size() * 4);
  v->read_cached({&sel, 1}, {&dest, 1}, *cache);
  canceller.join();
  loader.join();
  for (std::uint64_t y = 0; y < kY; ++y)
    for (std::uint64_t x = 0; x < kX; ++x) ASSERT_EQ(got[y * kX + x], cell(3, y, x));
  EXPECT_EQ(f.store->chunk_reads().at("v/3.0.0"), 2);  // the given-up answer, then its own
}

TEST(FetchAhead, EverySamplerAndAResumedStateGiveTheSameWindows) {
  Fixture f(1);
  for (auto shuffle : {Shuffle::None, Shuffle::Random, Shuffle::Chunk}) {
    BatchGenerator plain(f.ds, options(shuffle, 64 << 20, 0));
    std::vector<std::uint64_t> want;
    while (auto b = plain.next()) want.insert(want.end(), b->window_ids.begin(), b->window_ids.end());
    BatchGenerator ahead(f.ds, options(shuffle, 64 << 20, 16 * kChunkBytes));
    std::vector<std::uint64_t> got;
    for (int i = 0; i < 20; ++i) {
      auto b = ahead.next();
      ASSERT_TRUE(b);
      auto seen = check_batch(*b);
      got.insert(got.end(), seen.begin(), seen.end());
    }
    // Resume in a fresh generator from the state after 20 batches.
    BatchGenerator resumed(f.ds, options(shuffle, 16 * kChunkBytes, 4 * kChunkBytes));
    resumed.restore(ahead.state());
    const auto rest = run_epoch(resumed);
    got.insert(got.end(), rest.begin(), rest.end());
    EXPECT_EQ(got, want) << shuffle_name(shuffle);
    // A second epoch (set_epoch) through fetch-ahead is the plain generator's second epoch.
    plain.set_epoch(1);
    ahead.set_epoch(1);
    std::vector<std::uint64_t> want1, got1 = run_epoch(ahead);
    while (auto b = plain.next()) want1.insert(want1.end(), b->window_ids.begin(), b->window_ids.end());
    EXPECT_EQ(got1, want1) << shuffle_name(shuffle);
  }
}

TEST(FetchAhead, PrefetchZeroAndXbatcherModeFetchAhead) {
  Fixture f(2);
  BatchOptions o = options(Shuffle::Random, 64 << 20, std::nullopt);
  o.prefetch = 0;
  BatchGenerator g(f.ds, o);
  EXPECT_EQ(run_epoch(g).size(), 1024u);
  EXPECT_GT(g.cache()->stats().fetched_ahead, 0u);

  BatchOptions x;
  x.input_dims = {{"time", 1}, {"y", 32}, {"x", 32}};
  x.cache = std::make_shared<ChunkCache>(64 << 20);
  BatchGenerator xg(f.ds, x);
  std::uint64_t n = 0;
  while (auto b = xg.next()) ++n;
  EXPECT_EQ(n, kT);
  EXPECT_GT(xg.cache()->stats().fetched_ahead, kT / 2);
}

TEST(FetchAheadNginx, FaultMixDeliversTheSameWindows) {
  if (auto why = test::nginx_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  test::TempDir www;
  write_store(www.path() / "s.zarr");
  test::NginxServer server(www.path());
  server.set_faults("latency_ms = 5, p503 = 0.10, p429 = 0.05, pdrop = 0.02, retry_after = 0");
  OpenOptions oo;
  oo.storage_options = {{"backoff", "0.01"}};
  Dataset ds = lazycube::open(server.url() + "/s.zarr", oo);
  for (auto shuffle : {Shuffle::Chunk, Shuffle::Random}) {
    BatchGenerator g(ds, options(shuffle, 64 << 20, std::nullopt));
    auto ids = run_epoch(g);
    std::sort(ids.begin(), ids.end());
    ASSERT_EQ(ids.size(), 1024u);
    for (std::uint64_t i = 0; i < ids.size(); ++i) ASSERT_EQ(ids[i], i);
    EXPECT_GT(g.cache()->stats().fetched_ahead, 0u);
  }
}
