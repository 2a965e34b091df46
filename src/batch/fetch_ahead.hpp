// FetchAhead: walks an epoch's planned reads (PlannedReads: the windows of an epoch order, or a
// worker's forecast samples in the planner's order) ahead of the batch producer and brings the
// chunks the coming positions read into the chunk cache, many requests at once, so that assembling a batch
// waits only on what is still in flight. Bounded by bytes (BatchOptions::fetch_ahead_bytes):
// chunks fetched ahead are held (pinned) until the batches that read them have been assembled,
// so the LRU cannot evict them first and nothing is fetched twice. A budget the caller left
// unset grows with the rate the batches consume chunks at, so that the walk keeps a lead in
// time (what riding out a Retry-After needs), not only in bytes.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "lazycube/cache/chunk_cache.hpp"
#include "load_threads.hpp"
#include "planned_reads.hpp"

namespace lazycube::batch {

// The room fetch-ahead may hold in a cache of `cache_budget_bytes` that keeps `reuse_bytes` for
// what batches re-read, and the budget a walk starts with by default: that room, at most 256 MiB.
std::uint64_t fetch_ahead_room_bytes(std::uint64_t cache_budget_bytes, std::uint64_t reuse_bytes);
std::uint64_t default_fetch_ahead_bytes(std::uint64_t cache_budget_bytes, std::uint64_t reuse_bytes);

class FetchAhead {
 public:
  // budget_bytes 0: off (start() does nothing). The budget grows, up to most_bytes, to what
  // the batches consume in lead_seconds (measured over a walk, never shrinking within it).
  FetchAhead(std::shared_ptr<ChunkCache> cache, std::uint64_t budget_bytes, std::uint64_t most_bytes,
             double lead_seconds = kLeadSeconds);
  // The lead in time a budget left unset grows to keep: a request waiting out Retry-After (1 s
  // under the fault benchmark's mix) and its backoff must be covered by what is held already.
  static constexpr double kLeadSeconds = 8.0;
  ~FetchAhead();
  FetchAhead(const FetchAhead&) = delete;
  FetchAhead& operator=(const FetchAhead&) = delete;

  // The budget in effect now.
  std::uint64_t budget() const;
  // Array loads the walks have started (an array's units of one round that the cache did not
  // hold when the round was planned): none over an epoch whose chunks are all cached.
  std::uint64_t loads_started() const { return loads_started_.load(); }
  // Threads started for those loads so far (reused from round to round).
  std::size_t load_threads() const { return loaders_.threads(); }
  // Whether a walk is under way: false once it has planned its last round (or stopped).
  bool walking() const { return walking_.load(); }
  // Starts walking `reads` (which must outlive the walk: stop() before changing it) from
  // position `from`. Stops a previous walk first.
  void start(const PlannedReads& reads, std::uint64_t from);
  // Every position before `position` has been assembled: holds of the positions before it are
  // released, and the walk skips ahead to it if it fell behind.
  void consumed(std::uint64_t position);
  // Stops the walk, gives up the loads not yet delivered (their requests not yet answered;
  // readers that joined them load those chunks themselves), waits for the rest and drops every
  // hold.
  void stop();

 private:
  // The units of a stretch [begin, end) of shard positions, held (pinned in the cache) until
  // the consumer has assembled the stretch. The units the cache holds already are pinned by the
  // walker; each array with units to load loads them as a task of its own on `loaders_`.
  struct Round {
    std::uint64_t begin = 0, end = 0;
    std::uint64_t bytes = 0;  // decoded bytes of its distinct units
    std::vector<std::pair<ArrayPtr, std::vector<std::vector<std::uint64_t>>>> units;  // per array
    std::mutex mutex;
    std::condition_variable loaded;
    std::vector<std::shared_ptr<const Buffer>> held;  // under mutex
    std::size_t loading = 0;  // loads (and the walker's setup) not yet done, under mutex
  };
  void walk(const PlannedReads& reads, std::uint64_t from);
  void walk_rounds(const PlannedReads& reads, std::uint64_t from);
  std::unique_ptr<Round> plan_round(const PlannedReads& reads, std::uint64_t from, std::uint64_t bytes) const;
  // Pins what the cache holds of round `r` and starts the loads of the rest.
  void start_round(Round& r, ChunkCache& cache);
  // Loads array `a`'s missing units of round `r` (a task on loaders_).
  void load_array(Round& r, std::size_t a, std::vector<std::vector<std::uint64_t>> missing, ChunkCache& cache);
  static void finish(Round& r, std::vector<std::shared_ptr<const Buffer>> chunks);
  void release(std::deque<std::unique_ptr<Round>>& rounds);

  // Grows budget_ towards what the batches consumed over `elapsed` seconds since the first
  // release, in lead_seconds_ (under mutex_).
  void grow_budget(std::chrono::steady_clock::time_point now);

  const std::shared_ptr<ChunkCache> cache_;
  const std::uint64_t start_budget_, most_budget_;
  const double lead_seconds_;
  std::uint64_t round_bytes_;
  std::uint64_t budget_;  // under mutex_
  // Consumption since the first release of the walk (under mutex_).
  std::optional<std::chrono::steady_clock::time_point> first_release_;
  std::uint64_t released_since_first_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::thread walker_;
  bool stopping_ = false;
  std::uint64_t consumed_ = 0;  // shard position the consumer has assembled up to
  std::uint64_t held_ = 0;      // bytes of the rounds in `rounds_`
  std::deque<std::unique_ptr<Round>> rounds_;  // in position order
  std::atomic<bool> cancel_{false};  // stop(): the rounds' loads give up what is not delivered
  std::atomic<std::uint64_t> loads_started_{0};
  std::atomic<bool> walking_{false};
  // Threads of the rounds' loads, reused from round to round (destroyed last: after stop()).
  LoadThreads loaders_;
};

}  // namespace lazycube::batch
