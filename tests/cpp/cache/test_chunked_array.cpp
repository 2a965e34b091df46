// ChunkedArray, the one read planner of the chunked formats, over a tiny in-memory subclass that
// counts what it is asked to fetch: each unit fetched once across selections and threads, rounds
// bounded by the budget, failed loads failing their claims for every waiter, the disabled cache
// reading directly, and load_units counting as fetch-ahead.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <nlohmann/json.hpp>

#include "lazycube/cache/chunk_cache.hpp"
#include "lazycube/cache/chunked_array.hpp"
#include "lazycube/error.hpp"

using namespace lazycube;

namespace {

// An int32 array whose element at flat index i is i, in read units of `unit` elements; edge units
// are padded with -1. Counts the units fetched (and in which batches) and direct reads.
class CountingArray final : public ChunkedArray {
 public:
  CountingArray(Shape shape, Shape unit) : shape_(std::move(shape)), unit_(std::move(unit)), dims_(shape_.size()) {
    static std::atomic<int> next{0};
    id_ = "counting#" + std::to_string(next++);
    for (std::size_t d = 0; d < dims_.size(); ++d) dims_[d] = "d" + std::to_string(d);
  }

  std::string path() const override { return "counting"; }
  std::string describe() const override { return "memory://counting"; }
  const Shape& shape() const override { return shape_; }
  const DataType& dtype() const override { return dtype_; }
  const Shape& chunk_shape() const override { return unit_; }
  const std::vector<std::string>& dimension_names() const override { return dims_; }
  const nlohmann::json& attrs() const override { return attrs_; }
  const Buffer& fill_value_bytes() const override { return fill_; }
  const std::string& fill_value_string() const override { return fill_string_; }
  bool has_fill_value() const override { return false; }
  nlohmann::json codecs_json() const override { return nlohmann::json::array(); }
  std::string cache_id() const override { return id_; }

  void read(const ArraySelection& sel, MutableByteView dest) const override {
    ++direct_reads;
    check_selection(sel);
    auto* out = reinterpret_cast<std::int32_t*>(dest.data());
    std::vector<std::uint64_t> k(sel.size(), 0);
    std::uint64_t n = 1;
    for (const auto& r : sel) n *= r.count;
    for (std::uint64_t i = 0; i < n; ++i) {
      std::uint64_t flat = 0;
      for (std::size_t d = 0; d < sel.size(); ++d) flat = flat * shape_[d] + sel[d].at(k[d]);
      out[i] = static_cast<std::int32_t>(flat);
      for (std::size_t d = sel.size(); d-- > 0;) {
        if (++k[d] < sel[d].count) break;
        k[d] = 0;
      }
    }
  }
  void read_strings(const ArraySelection&, std::vector<std::string>&) const override {
    throw UsageError("not strings");
  }

  // What the test observes and steers.
  mutable std::mutex mutex;
  mutable std::map<Unit, int> fetched;          // per unit, how often it was decoded
  mutable std::vector<std::size_t> batches;     // the size of each fetch_units call
  mutable std::atomic<int> direct_reads{0};
  std::optional<Unit> failing_unit;             // decoding it throws
  bool fail_batch = false;                      // fetch_units throws before delivering anything
  std::chrono::milliseconds delay{0};           // each decode sleeps this long

  int fetch_count(const Unit& unit) const {
    std::lock_guard lock(mutex);
    const auto it = fetched.find(unit);
    return it == fetched.end() ? 0 : it->second;
  }

 protected:
  void fetch_units(std::span<const Unit> units, const UnitSink& sink) const override {
    {
      std::lock_guard lock(mutex);
      batches.push_back(units.size());
    }
    if (fail_batch) throw StoreError("the whole batch failed");
    for (std::size_t i = 0; i < units.size(); ++i) {
      sink(i, [&](MutableByteView out) {
        if (delay.count() > 0) std::this_thread::sleep_for(delay);
        if (failing_unit && units[i] == *failing_unit) throw StoreError("unit " + std::to_string(units[i][0]) + " is corrupt");
        {
          std::lock_guard lock(mutex);
          ++fetched[units[i]];
        }
        decode(units[i], out);
      });
    }
  }
  void check_selection(const ArraySelection& sel) const override {
    if (sel.size() != shape_.size()) throw SelectionError(describe() + ": wrong rank");
    for (std::size_t d = 0; d < sel.size(); ++d)
      if (sel[d].count > 0 && (sel[d].start >= shape_[d] || sel[d].at(sel[d].count - 1) >= shape_[d]))
        throw SelectionError(describe() + ": out of range");
  }

 private:
  void decode(const Unit& unit, MutableByteView out) const {
    auto* v = reinterpret_cast<std::int32_t*>(out.data());
    const std::uint64_t n = shape_size(unit_);
    for (std::uint64_t e = 0; e < n; ++e) {
      std::uint64_t rest = e, flat = 0;
      bool inside = true;
      std::vector<std::uint64_t> at(unit_.size());
      for (std::size_t d = unit_.size(); d-- > 0;) {
        at[d] = unit[d] * unit_[d] + rest % unit_[d];
        rest /= unit_[d];
        inside = inside && at[d] < shape_[d];
      }
      for (std::size_t d = 0; d < unit_.size(); ++d) flat = flat * shape_[d] + at[d];
      v[e] = inside ? static_cast<std::int32_t>(flat) : -1;
    }
  }

  Shape shape_, unit_;
  DataType dtype_ = DataType::int_(4);
  std::vector<std::string> dims_;
  nlohmann::json attrs_ = nlohmann::json::object();
  Buffer fill_;
  std::string fill_string_;
  std::string id_;
};

std::uint64_t elements(const ArraySelection& sel) {
  std::uint64_t n = 1;
  for (const auto& r : sel) n *= r.count;
  return n;
}

// read_cached of `sels` into fresh buffers, each checked against read().
void expect_cached_equals_read(const CountingArray& a, const std::vector<ArraySelection>& sels, ChunkCache& cache) {
  std::vector<Buffer> got;
  std::vector<MutableByteView> dests;
  for (const auto& s : sels) got.emplace_back(elements(s) * 4);
  for (auto& b : got) dests.push_back(b.span());
  a.read_cached(sels, dests, cache);
  for (std::size_t i = 0; i < sels.size(); ++i) {
    Buffer want(elements(sels[i]) * 4);
    a.read(sels[i], want.span());
    // An empty selection's buffers have no data pointer (memcmp takes none: UBSan).
    EXPECT_TRUE(want.size() == 0 || std::memcmp(want.data(), got[i].data(), want.size()) == 0) << "selection " << i;
  }
}

// Overlapping strided windows over a 20 x 30 array (units 4 x 7, edge units on both dims).
std::vector<ArraySelection> windows() {
  return {
      {{0, 10, 1}, {0, 15, 1}},
      {{5, 10, 1}, {10, 20, 1}},
      {{19, 10, -2}, {29, 10, -3}},
      {{3, 1, 1}, {0, 30, 1}},
      {{0, 0, 1}, {0, 5, 1}},  // empty
  };
}

}  // namespace

TEST(ChunkedArray, EachUnitIsFetchedOnceAcrossSelectionsAndCalls) {
  CountingArray a({20, 30}, {4, 7});
  ChunkCache cache(std::uint64_t{64} << 20);
  const auto sels = windows();
  expect_cached_equals_read(a, sels, cache);
  const auto units = a.read_units(sels);
  EXPECT_EQ(a.fetched.size(), units.size());
  for (const auto& [unit, n] : a.fetched) EXPECT_EQ(n, 1) << unit[0] << "," << unit[1];
  EXPECT_EQ(a.batches.size(), 1u);  // one round: every missing unit in one batch
  EXPECT_EQ(cache.stats().misses, units.size());
  // Again: every unit is a hit, nothing is fetched.
  expect_cached_equals_read(a, sels, cache);
  for (const auto& [unit, n] : a.fetched) EXPECT_EQ(n, 1);
  EXPECT_EQ(a.batches.size(), 1u);
  EXPECT_EQ(cache.stats().hits, units.size());
  EXPECT_EQ(a.direct_reads.load(), 2 * static_cast<int>(sels.size()));  // only the comparisons
}

TEST(ChunkedArray, ReadUnitsAreDistinctInFirstTouchOrder) {
  CountingArray a({20, 30}, {4, 7});
  const std::vector<ArraySelection> sels = {{{4, 2, 1}, {7, 8, 1}}, {{0, 6, 1}, {8, 1, 1}}};
  const std::vector<ChunkedArray::Unit> want = {{1, 1}, {1, 2}, {0, 1}};
  EXPECT_EQ(a.read_units(sels), want);
  EXPECT_THROW(a.read_units(std::vector<ArraySelection>{{{0, 1, 1}}}), SelectionError);
}

TEST(ChunkedArray, ConcurrentReadersShareOneLoadPerUnit) {
  CountingArray a({20, 30}, {4, 7});
  a.delay = std::chrono::milliseconds(2);  // loads overlap
  ChunkCache cache(std::uint64_t{64} << 20);
  const auto sels = windows();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) threads.emplace_back([&] { expect_cached_equals_read(a, sels, cache); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(a.fetched.size(), a.read_units(sels).size());
  for (const auto& [unit, n] : a.fetched) EXPECT_EQ(n, 1) << unit[0] << "," << unit[1];
}

TEST(ChunkedArray, RoundsAreBoundedByTheBudget) {
  CountingArray a({20, 30}, {4, 7});  // 112-byte units
  // round_bytes = budget / 16 = 224 bytes: two units per round.
  ChunkCache cache(16 * 224);
  const std::vector<ArraySelection> all = {{{0, 20, 1}, {0, 30, 1}}};
  expect_cached_equals_read(a, all, cache);
  const std::size_t units = 5 * 5;
  EXPECT_EQ(a.fetched.size(), units);
  ASSERT_EQ(a.batches.size(), (units + 1) / 2);
  for (std::size_t b : a.batches) EXPECT_LE(b, 2u);
  // A round is all a call pins: the cache holds no more than the budget afterwards.
  EXPECT_LE(cache.stats().bytes_cached, cache.budget());
}

TEST(ChunkedArray, AFailedUnitFailsItsClaimAndIsNotCached) {
  CountingArray a({20, 30}, {4, 7});
  a.failing_unit = ChunkedArray::Unit{1, 1};
  ChunkCache cache(std::uint64_t{64} << 20);
  const std::vector<ArraySelection> sels = {{{0, 12, 1}, {0, 14, 1}}};
  Buffer out(elements(sels[0]) * 4);
  const std::vector<MutableByteView> dests{out.span()};
  try {
    a.read_cached(sels, dests, cache);
    FAIL() << "no error";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("unit 1 is corrupt"), std::string::npos) << e.what();
  }
  // Nothing is left claimed or cached for the failed unit: the next read loads it.
  a.failing_unit.reset();
  expect_cached_equals_read(a, sels, cache);
  EXPECT_EQ(a.fetch_count({1, 1}), 1);
}

TEST(ChunkedArray, ReadersWaitingOnAFailedLoadSeeItsError) {
  CountingArray a({20, 30}, {4, 7});
  a.failing_unit = ChunkedArray::Unit{0, 0};
  a.delay = std::chrono::milliseconds(50);  // the others look up while the first load runs
  ChunkCache cache(std::uint64_t{64} << 20);
  const std::vector<ArraySelection> sels = {{{0, 2, 1}, {0, 2, 1}}};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      Buffer out(16);
      const std::vector<MutableByteView> dests{out.span()};
      try {
        a.read_cached(sels, dests, cache);
      } catch (const StoreError& e) {
        if (std::string(e.what()).find("unit 0 is corrupt") != std::string::npos) ++failures;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 4);
}

TEST(ChunkedArray, AFailedBatchFailsEveryClaim) {
  CountingArray a({20, 30}, {4, 7});
  a.fail_batch = true;
  ChunkCache cache(std::uint64_t{64} << 20);
  const std::vector<ArraySelection> sels = {{{0, 20, 1}, {0, 30, 1}}};
  Buffer out(elements(sels[0]) * 4);
  const std::vector<MutableByteView> dests{out.span()};
  EXPECT_THROW(a.read_cached(sels, dests, cache), StoreError);
  EXPECT_THROW(a.load_units(a.read_units(sels), cache), StoreError);
  EXPECT_EQ(cache.stats().entries, 0u);
  a.fail_batch = false;
  expect_cached_equals_read(a, sels, cache);
  EXPECT_EQ(a.fetched.size(), 25u);
}

TEST(ChunkedArray, DisabledCacheReadsEachSelectionDirectly) {
  CountingArray a({20, 30}, {4, 7});
  ChunkCache cache(0);
  const auto sels = windows();
  expect_cached_equals_read(a, sels, cache);
  EXPECT_TRUE(a.batches.empty());
  EXPECT_EQ(a.direct_reads.load(), 2 * static_cast<int>(sels.size()));
  EXPECT_TRUE(a.load_units(a.read_units(sels), cache).empty());
  EXPECT_TRUE(a.batches.empty());
}

TEST(ChunkedArray, LoadUnitsFetchAheadOnceAndReadersHitThem) {
  CountingArray a({20, 30}, {4, 7});
  ChunkCache cache(std::uint64_t{64} << 20);
  const auto sels = windows();
  const auto units = a.read_units(sels);
  const auto held = a.load_units(units, cache);
  EXPECT_EQ(held.size(), units.size());
  EXPECT_EQ(cache.stats().fetched_ahead, units.size());
  EXPECT_EQ(cache.stats().hits, 0u);
  expect_cached_equals_read(a, sels, cache);
  EXPECT_EQ(a.batches.size(), 1u);  // only the fetch-ahead
  EXPECT_EQ(cache.stats().hits, units.size());
  EXPECT_EQ(cache.stats().fetched_ahead_unused, 0u);
}

TEST(ChunkedArray, RefusesMismatchedDestinationsAndSelections) {
  CountingArray a({20, 30}, {4, 7});
  ChunkCache cache(std::uint64_t{64} << 20);
  Buffer out(16);
  const std::vector<MutableByteView> one{out.span()};
  const std::vector<ArraySelection> two = {{{0, 2, 1}, {0, 2, 1}}, {{0, 2, 1}, {0, 2, 1}}};
  EXPECT_THROW(a.read_cached(two, one, cache), UsageError);
  const std::vector<ArraySelection> bigger = {{{0, 3, 1}, {0, 2, 1}}};
  EXPECT_THROW(a.read_cached(bigger, one, cache), UsageError);
  const std::vector<ArraySelection> outside = {{{19, 2, 1}, {0, 2, 1}}};
  EXPECT_THROW(a.read_cached(outside, one, cache), SelectionError);
  EXPECT_TRUE(a.batches.empty());
}

TEST(ChunkedArray, ScalarArraysAreOneUnit) {
  CountingArray a({}, {});
  ChunkCache cache(std::uint64_t{64} << 20);
  const std::vector<ArraySelection> sels = {{}, {}};
  expect_cached_equals_read(a, sels, cache);
  EXPECT_EQ(a.fetch_count({}), 1);
}
