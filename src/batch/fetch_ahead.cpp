#include "fetch_ahead.hpp"

#include <algorithm>
#include <map>

namespace lazycube::batch {

namespace {
// A round covers at most this many positions, so that the first loads start soon even when
// windows share few chunks (walking the order costs a unit listing per window).
constexpr std::uint64_t kMaxRoundPositions = 4096;
// Rounds of about budget / kRoundsPerBudget bytes: several are in flight at once, so one slow
// request (a retry with backoff) holds back only its own round, not the requests behind it.
constexpr std::uint64_t kRoundsPerBudget = 8;
// The first round of a walk is this fraction of a full one, and each next one twice the last:
// the first batch's chunks then travel in a small round that the server answers first, not
// among a full round's worth of bodies sharing the bandwidth.
constexpr std::uint64_t kFirstRoundFraction = 16;
}  // namespace

std::uint64_t fetch_ahead_room_bytes(std::uint64_t cache_budget_bytes, std::uint64_t reuse_bytes) {
  return cache_budget_bytes - std::min(reuse_bytes, cache_budget_bytes);
}

std::uint64_t default_fetch_ahead_bytes(std::uint64_t cache_budget_bytes, std::uint64_t reuse_bytes) {
  return std::min<std::uint64_t>(fetch_ahead_room_bytes(cache_budget_bytes, reuse_bytes), std::uint64_t{256} << 20);
}

FetchAhead::FetchAhead(std::shared_ptr<ChunkCache> cache, std::uint64_t budget_bytes, std::uint64_t most_bytes,
                       double lead_seconds)
    : cache_(std::move(cache)),
      start_budget_(budget_bytes),
      most_budget_(std::max(budget_bytes, most_bytes)),
      lead_seconds_(lead_seconds),
      // Rounds keep the size the starting budget gives them: a grown budget holds more of them.
      round_bytes_(std::max<std::uint64_t>(1, budget_bytes / kRoundsPerBudget)),
      budget_(budget_bytes) {}

std::uint64_t FetchAhead::budget() const {
  std::lock_guard lock(mutex_);
  return budget_;
}

void FetchAhead::grow_budget(std::chrono::steady_clock::time_point now) {
  // The rate over at least a second of the walk, so that the first rounds (released at once
  // when the consumer catches up) do not count as a rate.
  const double elapsed = std::chrono::duration<double>(now - *first_release_).count();
  if (elapsed < 1.0 || budget_ >= most_budget_) return;
  const double want = static_cast<double>(released_since_first_) / elapsed * lead_seconds_;
  if (want > static_cast<double>(budget_))
    budget_ = want >= static_cast<double>(most_budget_) ? most_budget_ : static_cast<std::uint64_t>(want);
}

FetchAhead::~FetchAhead() { stop(); }

void FetchAhead::start(const PlannedReads& reads, std::uint64_t from) {
  stop();
  if (start_budget_ == 0 || !cache_ || !cache_->enabled() || from >= reads.size()) return;
  std::lock_guard lock(mutex_);
  consumed_ = from;
  budget_ = start_budget_;
  first_release_.reset();
  released_since_first_ = 0;
  walking_ = true;
  try {
    walker_ = std::thread([this, &reads, from] { walk(reads, from); });
  } catch (...) {
    walking_ = false;
    throw;
  }
}

std::unique_ptr<FetchAhead::Round> FetchAhead::plan_round(const PlannedReads& reads, std::uint64_t from,
                                                          std::uint64_t bytes) const {
  auto round = std::make_unique<Round>();
  round->begin = from;
  std::vector<std::map<std::vector<std::uint64_t>, bool>> seen;  // per entry of round->units
  std::uint64_t p = from;
  const std::uint64_t last = std::min(reads.size(), from + kMaxRoundPositions);
  for (; p < last && round->bytes < bytes; ++p) {
    reads.for_each_read(p, [&](const ArrayPtr& array, const ArraySelection& sel) {
      std::size_t a = 0;
      while (a < round->units.size() && round->units[a].first != array) ++a;
      if (a == round->units.size()) {
        round->units.emplace_back(array, std::vector<std::vector<std::uint64_t>>{});
        seen.emplace_back();
      }
      const std::uint64_t unit_bytes = array->read_unit_bytes();
      const bool regular = array->read_grid().is_regular();  // else units differ in size
      for (auto& unit : array->read_units({&sel, 1}))
        if (seen[a].emplace(unit, true).second) {
          round->bytes += regular ? unit_bytes : array->read_unit_bytes(unit);
          round->units[a].second.push_back(std::move(unit));
        }
    });
  }
  round->end = p;
  return round;
}

void FetchAhead::finish(Round& r, std::vector<std::shared_ptr<const Buffer>> chunks) {
  std::lock_guard lock(r.mutex);
  try {
    r.held.insert(r.held.end(), std::make_move_iterator(chunks.begin()), std::make_move_iterator(chunks.end()));
  } catch (...) {  // not held: the readers find them in the cache or load them again
  }
  if (--r.loading == 0) r.loaded.notify_all();
}

void FetchAhead::load_array(Round& r, std::size_t a, std::vector<std::vector<std::uint64_t>> missing,
                            ChunkCache& cache) {
  std::vector<std::shared_ptr<const Buffer>> got;
  try {
    got = r.units[a].first->load_units(missing, cache, &cancel_);
  } catch (...) {
    // A failed load reaches the readers waiting on it through the cache, and a reader that
    // comes later loads (and reports) it itself: nothing to do here. A cancelled one is
    // loaded by whoever waited on it.
  }
  finish(r, std::move(got));
}

void FetchAhead::start_round(Round& r, ChunkCache& cache) {
  // What the cache holds is pinned here, without a load: a warm epoch's rounds start nothing.
  // The arrays with units to load load at once, each its own task (its own read): one slow
  // request (a retry waiting out Retry-After or a backoff) then delays its own array's read
  // only, where loading them one after another made every array of the round wait behind it in
  // turn. The tasks run on threads kept from round to round, not one started per array.
  std::vector<std::shared_ptr<const Buffer>> pinned;
  for (std::size_t a = 0; a < r.units.size(); ++a) {
    try {
      std::vector<std::vector<std::uint64_t>> missing;
      try {
        auto held = r.units[a].first->pin_cached(r.units[a].second, cache, missing);
        pinned.insert(pinned.end(), std::make_move_iterator(held.begin()), std::make_move_iterator(held.end()));
      } catch (...) {  // load them all (and leave what is wrong to the readers: see load_array)
        missing = r.units[a].second;
      }
      if (missing.empty()) continue;
      {
        std::lock_guard lock(r.mutex);
        ++r.loading;
      }
      try {
        loaders_.run([this, &r, a, &cache, m = std::move(missing)]() mutable { load_array(r, a, std::move(m), cache); });
        ++loads_started_;
      } catch (...) {
        finish(r, {});  // not started: the readers load these units themselves
      }
    } catch (...) {  // out of memory listing them: the readers load them
    }
  }
  finish(r, std::move(pinned));  // the walker's own share (r.loading started at 1)
}

void FetchAhead::walk(const PlannedReads& reads, std::uint64_t from) {
  // Fetch-ahead only saves time: whatever fails here (listing units, starting a thread) ends
  // the walk, and the producer reads (and reports) as it would without it.
  try {
    walk_rounds(reads, from);
  } catch (...) {
  }
  walking_ = false;
}

void FetchAhead::walk_rounds(const PlannedReads& reads, std::uint64_t from) {
  std::uint64_t pos = from;
  std::uint64_t bytes = std::max<std::uint64_t>(1, round_bytes_ / kFirstRoundFraction);
  ChunkCache& cache = *cache_;
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      pos = std::max(pos, consumed_);  // fell behind the consumer: what it read is done
    }
    if (pos >= reads.size()) return;
    std::unique_ptr<Round> round = plan_round(reads, pos, bytes);
    bytes = std::min(round_bytes_, 2 * bytes);
    if (round->units.empty() ||
        std::all_of(round->units.begin(), round->units.end(), [](const auto& u) { return u.second.empty(); }))
      return;  // backends without chunk access: nothing to fetch ahead
    std::unique_lock lock(mutex_);
    // Within the budget, except that one round may always be held (a round bigger than the
    // whole budget still moves forward, one at a time).
    cv_.wait(lock, [&] { return stopping_ || rounds_.empty() || held_ + round->bytes <= budget_; });
    if (stopping_) return;
    pos = round->end;
    held_ += round->bytes;
    Round* r = round.get();
    r->loading = 1;  // the walker's setup below: a release waits for it
    rounds_.push_back(std::move(round));
    lock.unlock();
    start_round(*r, cache);
  }
}

void FetchAhead::release(std::deque<std::unique_ptr<Round>>& rounds) {
  for (auto& r : rounds) {
    std::unique_lock lock(r->mutex);
    r->loaded.wait(lock, [&] { return r->loading == 0; });
  }
  rounds.clear();
}

void FetchAhead::consumed(std::uint64_t position) {
  std::deque<std::unique_ptr<Round>> done;
  {
    std::lock_guard lock(mutex_);
    consumed_ = std::max(consumed_, position);
    while (!rounds_.empty() && rounds_.front()->end <= position) {
      held_ -= rounds_.front()->bytes;
      if (first_release_) released_since_first_ += rounds_.front()->bytes;
      done.push_back(std::move(rounds_.front()));
      rounds_.pop_front();
    }
    if (!done.empty()) {
      const auto now = std::chrono::steady_clock::now();
      if (!first_release_) first_release_ = now;
      grow_budget(now);
    }
  }
  if (done.empty()) return;
  cv_.notify_all();
  release(done);
}

void FetchAhead::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cancel_ = true;
  cv_.notify_all();
  if (walker_.joinable()) walker_.join();
  std::deque<std::unique_ptr<Round>> all;
  {
    std::lock_guard lock(mutex_);
    all.swap(rounds_);
    held_ = 0;
    stopping_ = false;
  }
  release(all);
  cancel_ = false;
}

}  // namespace lazycube::batch
