// ZarrArray::read_cached: many selections served from the chunk cache, each read unit
// (innermost chunk) fetched and decoded at most once however many selections touch it.
#include <algorithm>
#include <exception>
#include <map>
#include <numeric>

#include "lazycube/cache/chunk_cache.hpp"
#include "lazycube/error.hpp"
#include "util/thread_pool.hpp"
#include "zarr_array.hpp"

namespace lazycube::zarr {

namespace {

// One copy job: the region of selection `sel` that lies in distinct unit `unit`.
struct CopyJob {
  std::size_t sel;
  std::size_t unit;
  Region region;
};

// Orders unit indices lexicographically; also compares a stored index with a DimIndex.
struct UnitLess {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
};

}  // namespace

void ZarrArray::read_cached(std::span<const ArraySelection> selections, std::span<const MutableByteView> dests,
                            ChunkCache& cache) const {
  if (selections.size() != dests.size())
    throw UsageError(describe() + ": read_cached got " + std::to_string(selections.size()) +
                     " selections and " + std::to_string(dests.size()) + " destinations");
  if (meta_.dtype.is_variable_length())
    throw UsageError(describe() + ": " + meta_.dtype.name() + " data must be read as strings (read_cached)");
  const std::size_t item = meta_.dtype.itemsize;
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
  std::vector<std::vector<std::uint64_t>> units;
  std::map<std::vector<std::uint64_t>, std::size_t, UnitLess> unit_number;
  std::vector<CopyJob> jobs;
  jobs.reserve(selections.size());
  std::size_t visiting = 0;  // the selection whose pieces add_piece receives
  const PieceVisitor add_piece = [&](const DimIndex& unit, const Region& region) {
    auto it = unit_number.find(unit);  // no allocation for a unit already seen
    if (it == unit_number.end()) {
      units.emplace_back(unit.begin(), unit.end());
      it = unit_number.emplace(units.back(), units.size() - 1).first;
    }
    jobs.push_back({visiting, it->second, region});
  };
  for (visiting = 0; visiting < selections.size(); ++visiting) visit_unit_pieces(selections[visiting], add_piece);

  // Units are served in rounds of bounded bytes (in unit order, the order selections first
  // touch them): a round's chunks stay pinned only until its copies are done, so one call over
  // many chunks (a shuffled batch touching a hundred) holds at most a round beyond the budget.
  const std::uint64_t unit_bytes = shape_size(unit_shape_) * item;
  const std::uint64_t round_bytes = std::min<std::uint64_t>(cache.budget() / 16, std::uint64_t{32} << 20);
  const std::size_t per_round =
      static_cast<std::size_t>(std::max<std::uint64_t>(1, round_bytes / std::max<std::uint64_t>(unit_bytes, 1)));
  // Jobs ordered by unit: a round's jobs are then one run of `by_unit`.
  std::vector<std::size_t> by_unit(jobs.size());
  std::iota(by_unit.begin(), by_unit.end(), std::size_t{0});
  std::stable_sort(by_unit.begin(), by_unit.end(),
                   [&](std::size_t a, std::size_t b) { return jobs[a].unit < jobs[b].unit; });
  std::size_t round_begin = 0;  // first entry of by_unit in the current round
  std::vector<Shape> dst_shapes(selections.size());
  for (std::size_t s = 0; s < selections.size(); ++s) {
    dst_shapes[s].reserve(selections[s].size());
    for (const auto& r : selections[s]) dst_shapes[s].push_back(r.count);
  }
  for (std::size_t first = 0; first < units.size(); first += per_round) {
    const std::size_t n = std::min(per_round, units.size() - first);
    const std::vector<ChunkCache::Chunk> chunks =
        cached_units(std::span(units).subspan(first, n), cache, ChunkCache::Purpose::Read);
    // Copy the round's regions out of its pinned chunks.
    std::size_t round_end = round_begin;
    while (round_end < by_unit.size() && jobs[by_unit[round_end]].unit < first + n) ++round_end;
    parallel_for(round_end - round_begin, [&](std::size_t k) {
      const CopyJob& job = jobs[by_unit[round_begin + k]];
      copy_region(chunks[job.unit - first]->data(), unit_shape_, dests[job.sel].data(), dst_shapes[job.sel],
                  job.region, item);
    });
    round_begin = round_end;
  }
  std::uint64_t delivered = 0;
  for (const auto& d : dests) delivered += d.size();
  cache.note_delivered(delivered);
}

std::vector<ChunkCache::Chunk> ZarrArray::cached_units(std::span<const std::vector<std::uint64_t>> units,
                                                       ChunkCache& cache, ChunkCache::Purpose purpose) const {
  const std::size_t n = units.size();
  const std::uint64_t unit_bytes = shape_size(unit_shape_) * meta_.dtype.itemsize;
  const std::string id = cache_id();
  // Ask the cache about every unit; load the ones this call claims.
  std::vector<ChunkCache::Chunk> chunks(n);
  std::vector<std::shared_future<ChunkCache::Chunk>> pending(n);
  std::vector<std::shared_ptr<ChunkCache::Claim>> claims(n);
  std::vector<std::vector<std::uint64_t>> to_load;
  std::vector<std::size_t> load_of;  // to_load[i] is unit load_of[i]
  for (std::size_t u = 0; u < n; ++u) {
    auto found = cache.lookup(ChunkKey{id, units[u]}, purpose);
    chunks[u] = std::move(found.chunk);
    pending[u] = std::move(found.pending);
    claims[u] = std::move(found.claim);
    if (claims[u]) {
      to_load.push_back(units[u]);
      load_of.push_back(u);
    }
  }
  try {
    fetch_units(to_load, [&](std::size_t i, const Buffer* encoded, const std::string& what) {
      const std::size_t u = load_of[i];
      try {
        Buffer decoded(unit_bytes);
        decode_unit(encoded, what, decoded.span());
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
  for (std::size_t u = 0; u < n; ++u)
    if (pending[u].valid()) chunks[u] = pending[u].get();
  return chunks;
}

std::vector<std::vector<std::uint64_t>> ZarrArray::read_units(std::span<const ArraySelection> selections) const {
  std::vector<std::vector<std::uint64_t>> units;
  std::map<std::vector<std::uint64_t>, std::size_t, UnitLess> seen;
  for (const auto& sel : selections)
    visit_unit_pieces(sel, [&](const DimIndex& unit, const Region&) {
      if (seen.find(unit) != seen.end()) return;
      units.emplace_back(unit.begin(), unit.end());
      seen.emplace(units.back(), units.size() - 1);
    });
  return units;
}

std::vector<std::shared_ptr<const Buffer>> ZarrArray::load_units(const std::vector<std::vector<std::uint64_t>>& units,
                                                                 ChunkCache& cache) const {
  if (!cache.enabled() || units.empty()) return {};
  return cached_units(units, cache, ChunkCache::Purpose::FetchAhead);
}

}  // namespace lazycube::zarr
