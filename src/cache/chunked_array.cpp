// ChunkedArray's planner: many selections served from the chunk cache, each read unit fetched
// and decoded at most once however many selections (and threads) touch it.
#include "lazycube/cache/chunked_array.hpp"

#include <algorithm>
#include <exception>
#include <future>
#include <map>
#include <numeric>
#include <string>

#include "lazycube/error.hpp"
#include "util/chunk_copy.hpp"
#include "util/thread_pool.hpp"

namespace lazycube {

namespace {

// Copies of fewer bytes than this in a round are done by the calling thread alone while no
// pool worker is idle.
constexpr std::uint64_t kParallelCopyBytes = std::uint64_t{2} << 20;

// One copy job: the region of selection `sel` that lies in distinct unit `unit`.
struct PlannedCopy {
  std::size_t sel;
  std::size_t unit;
  grid::Region region;
};

// Orders unit indices lexicographically; also compares a stored index with a DimIndex.
struct UnitIndexLess {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
};

// The distinct units of a list of selections, numbered in the order the selections first touch
// them.
class DistinctUnits {
 public:
  std::size_t number(const grid::DimIndex& unit) {
    // A batch's read touches a few dozen units: scanning them (the last one first: a
    // selection's pieces and the next selection's often share it) beats a map's node per unit.
    if (number_.empty()) {
      for (std::size_t k = units_.size(); k-- > 0;)
        if (std::equal(unit.begin(), unit.end(), units_[k].begin(), units_[k].end())) return k;
      units_.emplace_back(unit.begin(), unit.end());
      if (units_.size() == kScanned)
        for (std::size_t k = 0; k < units_.size(); ++k) number_.emplace(units_[k], k);
      return units_.size() - 1;
    }
    auto it = number_.find(unit);  // no allocation for a unit already seen
    if (it == number_.end()) {
      units_.emplace_back(unit.begin(), unit.end());
      it = number_.emplace(units_.back(), units_.size() - 1).first;
    }
    return it->second;
  }
  std::vector<ChunkedArray::Unit>& units() { return units_; }

 private:
  static constexpr std::size_t kScanned = 64;  // units numbered by scanning; a map from there on
  std::vector<ChunkedArray::Unit> units_;
  std::map<ChunkedArray::Unit, std::size_t, UnitIndexLess> number_;
};

// Calls piece(unit, region) for every read unit `sel` touches, in C order of units.
template <class Piece>
void for_each_piece(const ArraySelection& sel, const ChunkGrid& units, Piece&& piece) {
  const grid::UnitPieces pieces(sel, units);
  grid::DimIndex unit;
  grid::Region region;
  for (std::uint64_t t = 0; t < pieces.size(); ++t) {
    pieces.get(t, unit, region);
    piece(unit, region);
  }
}

}  // namespace

void ChunkedArray::read_cached(std::span<const ArraySelection> selections, std::span<const MutableByteView> dests,
                               ChunkCache& cache) const {
  if (selections.size() != dests.size())
    throw UsageError(describe() + ": read_cached got " + std::to_string(selections.size()) +
                     " selections and " + std::to_string(dests.size()) + " destinations");
  if (dtype().is_variable_length())
    throw UsageError(describe() + ": " + dtype().name() + " data must be read as strings (read_cached)");
  const std::size_t item = dtype().itemsize;
  for (std::size_t s = 0; s < selections.size(); ++s) {
    check_selection(selections[s]);
    std::uint64_t n = 1;
    for (const auto& r : selections[s]) n *= r.count;
    if (dests[s].size() != n * item)
      throw UsageError(describe() + ": destination " + std::to_string(s) + " holds " +
                       std::to_string(dests[s].size()) + " bytes, selection needs " + std::to_string(n * item));
  }
  if (!cache.enabled()) {
    for (std::size_t s = 0; s < selections.size(); ++s) read(selections[s], dests[s]);
    return;
  }

  // The distinct units all selections touch, and what each selection copies out of them.
  const ChunkGrid unit_grid = read_grid();
  DistinctUnits distinct;
  std::vector<PlannedCopy> jobs;
  jobs.reserve(selections.size());
  for (std::size_t s = 0; s < selections.size(); ++s)
    for_each_piece(selections[s], unit_grid, [&](const grid::DimIndex& unit, const grid::Region& region) {
      jobs.push_back({s, distinct.number(unit), region});
    });
  const std::vector<Unit>& units = distinct.units();
  // Each unit's decoded shape: one for a regular grid, per unit for a rectilinear one.
  const Shape& unit_shape = unit_grid.regular_shape();
  std::vector<Shape> unit_shapes;
  if (!unit_grid.is_regular())
    for (const Unit& u : units) unit_shapes.push_back(unit_grid.decoded_shape(u));

  // Units are served in rounds of bounded bytes (in unit order, the order selections first
  // touch them): a round's chunks stay pinned only until its copies are done, so one call over
  // many chunks (a shuffled batch touching a hundred) holds at most a round beyond the budget.
  const std::uint64_t unit_bytes = shape_size(unit_shape) * item;
  const std::uint64_t round_bytes = std::min<std::uint64_t>(cache.budget() / 16, std::uint64_t{32} << 20);
  const std::size_t per_round =
      static_cast<std::size_t>(std::max<std::uint64_t>(1, round_bytes / std::max<std::uint64_t>(unit_bytes, 1)));
  // Jobs ordered by unit: a round's jobs are then one run of `by_unit`.
  std::vector<std::size_t> by_unit(jobs.size());
  std::iota(by_unit.begin(), by_unit.end(), std::size_t{0});
  std::stable_sort(by_unit.begin(), by_unit.end(),
                   [&](std::size_t a, std::size_t b) { return jobs[a].unit < jobs[b].unit; });
  // Each selection's extent, one Shape per run of equal extents (a batch's windows share one).
  std::vector<Shape> shapes;
  std::vector<std::size_t> shape_of(selections.size());
  for (std::size_t s = 0; s < selections.size(); ++s) {
    const ArraySelection& sel = selections[s];
    if (shapes.empty() || !std::equal(sel.begin(), sel.end(), shapes.back().begin(), shapes.back().end(),
                                      [](const IndexRange& r, std::uint64_t n) { return r.count == n; })) {
      shapes.emplace_back();
      shapes.back().reserve(sel.size());
      for (const auto& r : sel) shapes.back().push_back(r.count);
    }
    shape_of[s] = shapes.size() - 1;
  }
  std::size_t round_begin = 0;  // first entry of by_unit in the current round
  for (std::size_t first = 0; first < units.size(); first += per_round) {
    const std::size_t n = std::min(per_round, units.size() - first);
    const std::vector<ChunkCache::Chunk> chunks =
        cached_units(std::span(units).subspan(first, n), cache, ChunkCache::Purpose::Read);
    // Copy the round's regions out of its pinned chunks.
    std::size_t round_end = round_begin;
    std::uint64_t round_copy_bytes = 0;
    for (; round_end < by_unit.size() && jobs[by_unit[round_end]].unit < first + n; ++round_end)
      round_copy_bytes += item * std::accumulate(jobs[by_unit[round_end]].region.count.begin(),
                                                 jobs[by_unit[round_end]].region.count.end(), std::uint64_t{1},
                                                 std::multiplies<>());
    auto copy = [&](std::size_t k) {
      const PlannedCopy& job = jobs[by_unit[round_begin + k]];
      grid::copy_region(chunks[job.unit - first]->data(), unit_shapes.empty() ? unit_shape : unit_shapes[job.unit],
                        dests[job.sel].data(), shapes[shape_of[job.sel]], job.region, item);
    };
    // A few hundred KiB copy faster here than a helper queued behind busy workers gets to
    // them: when no worker is idle (a batch's channels and the batches assembled at once keep
    // every core busy) this thread copies them alone.
    if (round_copy_bytes < kParallelCopyBytes && ThreadPool::global().idle() == 0)
      for (std::size_t k = 0; k < round_end - round_begin; ++k) copy(k);
    else
      parallel_for(round_end - round_begin, copy);
    round_begin = round_end;
  }
  std::uint64_t delivered = 0;
  for (const auto& d : dests) delivered += d.size();
  cache.note_delivered(delivered);
}

std::vector<ChunkCache::Chunk> ChunkedArray::cached_units(std::span<const Unit> units, ChunkCache& cache,
                                                          ChunkCache::Purpose purpose,
                                                          const std::atomic<bool>* cancel) const {
  const std::size_t n = units.size();
  const ChunkGrid unit_grid = read_grid();
  const std::string id = cache_id();
  // Ask the cache about every unit; load the ones this call claims.
  std::vector<ChunkCache::Chunk> chunks(n);
  std::vector<std::shared_future<ChunkCache::Chunk>> pending(n);
  std::vector<std::shared_ptr<ChunkCache::Claim>> claims(n);
  std::vector<Unit> to_load;
  std::vector<std::size_t> load_of;  // to_load[i] is unit load_of[i]
  ChunkKey key{id, {}};  // one key reused: a hit copies nothing
  for (std::size_t u = 0; u < n; ++u) {
    key.index.assign(units[u].begin(), units[u].end());
    auto found = cache.lookup(key, purpose);
    chunks[u] = std::move(found.chunk);
    pending[u] = std::move(found.pending);
    claims[u] = std::move(found.claim);
    if (claims[u]) {
      to_load.push_back(units[u]);
      load_of.push_back(u);
    }
  }
  try {
    if (!to_load.empty())
      fetch_units(to_load, [&](std::size_t i, const UnitDecoder& decode) {
        // Thrown from the sink, this also stops the store's batch (nothing more is started).
        if (cancel && cancel->load(std::memory_order_relaxed)) throw Cancelled(describe() + ": load cancelled");
        const std::size_t u = load_of[i];
        try {
          Buffer decoded(unit_grid.decoded_elements(units[u]) * dtype().itemsize);
          decode(decoded.span());
          chunks[u] = cache.fulfill(*claims[u], std::move(decoded));
        } catch (...) {
          cache.fail(*claims[u], std::current_exception());
          claims[u].reset();
          throw;
        }
        claims[u].reset();
      });
  } catch (...) {
    // Claims left unresolved (a failed batch fetch, work skipped after the first error) are
    // failed with the same error so that other readers waiting on them see it too.
    for (auto& claim : claims)
      if (claim) cache.fail(*claim, std::current_exception());
    throw;
  }
  // Loads other readers had in flight; every claim of ours is resolved, so this cannot deadlock.
  // One that its caller gave up (fetch-ahead stopping) is looked up again: loaded here, or
  // joined once more.
  for (std::size_t u = 0; u < n; ++u) {
    if (!pending[u].valid()) continue;
    try {
      chunks[u] = pending[u].get();
    } catch (const Cancelled&) {
      if (cancel && cancel->load(std::memory_order_relaxed)) throw;
      chunks[u] = cached_units(units.subspan(u, 1), cache, purpose, cancel).front();
    }
  }
  return chunks;
}

std::vector<std::vector<std::uint64_t>> ChunkedArray::read_units(std::span<const ArraySelection> selections) const {
  const ChunkGrid unit_grid = read_grid();
  DistinctUnits distinct;
  for (const auto& sel : selections) {
    check_selection(sel);
    for_each_piece(sel, unit_grid, [&](const grid::DimIndex& unit, const grid::Region&) { distinct.number(unit); });
  }
  return std::move(distinct.units());
}

std::vector<std::shared_ptr<const Buffer>> ChunkedArray::load_units(const std::vector<std::vector<std::uint64_t>>& units,
                                                                    ChunkCache& cache,
                                                                    const std::atomic<bool>* cancel) const {
  if (!cache.enabled() || units.empty()) return {};
  return cached_units(units, cache, ChunkCache::Purpose::FetchAhead, cancel);
}

std::vector<std::shared_ptr<const Buffer>> ChunkedArray::pin_cached(const std::vector<std::vector<std::uint64_t>>& units,
                                                                    ChunkCache& cache,
                                                                    std::vector<std::vector<std::uint64_t>>& missing) const {
  if (!cache.enabled()) {
    missing.insert(missing.end(), units.begin(), units.end());
    return {};
  }
  const std::string id = cache_id();
  std::vector<ChunkKey> keys;
  keys.reserve(units.size());
  for (const auto& u : units) keys.push_back(ChunkKey{id, u});
  std::vector<ChunkCache::Chunk> found = cache.resident(keys);
  std::vector<std::shared_ptr<const Buffer>> held;
  held.reserve(found.size());
  for (std::size_t k = 0; k < found.size(); ++k) {
    if (found[k])
      held.push_back(std::move(found[k]));
    else
      missing.push_back(units[k]);
  }
  return held;
}

}  // namespace lazycube
