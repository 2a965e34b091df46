#include "lazycube/cache/chunk_cache.hpp"

#include <pthread.h>

#include <cstdlib>
#include <list>
#include <mutex>
#include <new>
#include <unordered_map>
#include <unordered_set>

#include "lazycube/error.hpp"

namespace lazycube {

namespace {

std::string describe_key(const ChunkKey& key) {
  std::string s = "chunk [";
  for (std::size_t i = 0; i < key.index.size(); ++i) s += (i ? ", " : "") + std::to_string(key.index[i]);
  return s + "] of " + key.array;
}

std::uint64_t budget_from_env() {
  const char* env = std::getenv("LAZYCUBE_CACHE_MB");
  if (env == nullptr || *env == '\0') return ChunkCache::kDefaultBudget;
  char* end = nullptr;
  const unsigned long long mb = std::strtoull(env, &end, 10);
  if (*end != '\0' || *env == '-')
    throw UsageError("LAZYCUBE_CACHE_MB must be a whole number of megabytes, got '" + std::string(env) + "'");
  return static_cast<std::uint64_t>(mb) << 20;
}

}  // namespace

std::size_t ChunkKeyHash::operator()(const ChunkKey& key) const noexcept {
  std::size_t h = std::hash<std::string>{}(key.array);
  for (auto i : key.index) h ^= std::hash<std::uint64_t>{}(i) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

double CacheStats::hit_rate() const {
  const std::uint64_t n = hits + misses;
  return n == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(n);
}

double CacheStats::read_amplification() const {
  if (bytes_fetched == 0 || bytes_unique == 0) return 0.0;
  return static_cast<double>(bytes_fetched) / static_cast<double>(bytes_unique);
}

// All state behind one mutex, held only for map and LRU bookkeeping (never while loading).
struct ChunkCache::Impl {
  struct Entry {
    Chunk chunk;
    std::list<ChunkKey>::iterator lru;  // position in `lru` (front = most recently used)
    bool ahead_unused = false;          // fetched ahead, not yet looked up by a reader
  };
  struct Load {
    std::shared_future<Chunk> future;
    bool ahead = false;  // claimed by a fetch-ahead lookup
    bool used = false;   // a reader has joined it
  };

  mutable std::mutex mutex;
  std::uint64_t budget;
  std::list<ChunkKey> lru;
  std::unordered_map<ChunkKey, Entry, ChunkKeyHash> entries;
  std::unordered_map<ChunkKey, Load, ChunkKeyHash> in_flight;
  std::unordered_set<ChunkKey, ChunkKeyHash> seen;  // distinct keys since reset_stats
  CacheStats counters;  // hits, misses, evictions, bytes_*; the gauges live in `entries`
  std::uint64_t bytes_cached = 0;
  std::uint64_t peak = 0;

  explicit Impl(std::uint64_t budget_bytes) : budget(budget_bytes) {}

  // A chunk is pinned while a handle to it exists outside the cache. Handles are only copied
  // out of `entries` under the mutex, so use_count() read under it cannot grow behind our back.
  static bool pinned(const Entry& e) { return e.chunk.use_count() > 1; }

  void drop(std::unordered_map<ChunkKey, Entry, ChunkKeyHash>::iterator it) {
    if (it->second.ahead_unused) ++counters.fetched_ahead_unused;
    bytes_cached -= it->second.chunk->size();
    lru.erase(it->second.lru);
    entries.erase(it);
  }

  // Evicts unpinned chunks, least recently used first, until the cache fits `limit`.
  void trim(std::uint64_t limit, bool count_evictions) {
    for (auto pos = lru.end(); bytes_cached > limit && pos != lru.begin();) {
      --pos;
      auto it = entries.find(*pos);
      if (pinned(it->second)) continue;
      pos = std::next(pos);  // `pos` itself is about to be erased
      drop(it);
      if (count_evictions) ++counters.evictions;
    }
  }

  void note_seen(const ChunkKey& key, std::uint64_t bytes) {
    if (seen.insert(key).second) counters.bytes_unique += bytes;
  }

  // Keeps a freshly loaded chunk when it can fit the budget at all.
  void admit(const ChunkKey& key, const Chunk& chunk, bool ahead_unused) {
    if (chunk->size() > budget) {  // bigger than the whole budget (or budget 0): hand out only
      if (ahead_unused) ++counters.fetched_ahead_unused;
      return;
    }
    lru.push_front(key);
    entries.emplace(key, Entry{chunk, lru.begin(), ahead_unused});
    bytes_cached += chunk->size();
    trim(budget, true);
    if (bytes_cached > peak) peak = bytes_cached;
  }

  // Resolves an in-flight load: its waiters keep their shared_future, new lookups see the entry.
  void finish(const ChunkKey& key, const Chunk* loaded) {
    std::lock_guard lock(mutex);
    auto it = in_flight.find(key);
    const bool ahead_unused = it != in_flight.end() && it->second.ahead && !it->second.used;
    if (it != in_flight.end()) in_flight.erase(it);
    if (loaded == nullptr) return;
    counters.bytes_fetched += (*loaded)->size();
    note_seen(key, (*loaded)->size());
    admit(key, *loaded, ahead_unused);
  }
};

ChunkCache::ChunkCache(std::uint64_t budget_bytes) : impl_(std::make_shared<Impl>(budget_bytes)) {}

ChunkCache::~ChunkCache() = default;

namespace {
// The process-wide cache. A forked child (a DataLoader worker) starts a fresh one: the parent's
// copy may have its mutex held or loads in flight by threads that do not exist in the child.
// The parent's copy is left allocated in the child on purpose (destroying it could block).
std::shared_ptr<ChunkCache>* global_cache = nullptr;
std::shared_ptr<ChunkCache>* abandoned[8] = {};  // parents' caches, still referenced (no leak report)
std::mutex global_cache_mutex;
std::once_flag global_cache_atfork;
}  // namespace

const std::shared_ptr<ChunkCache>& ChunkCache::global() {
  std::call_once(global_cache_atfork, [] {
    ::pthread_atfork(nullptr, nullptr, [] {
      for (auto*& slot : abandoned)
        if (slot == nullptr) {
          slot = global_cache;
          break;
        }
      global_cache = nullptr;
      new (&global_cache_mutex) std::mutex();
    });
  });
  std::lock_guard lock(global_cache_mutex);
  if (global_cache == nullptr) global_cache = new std::shared_ptr<ChunkCache>(std::make_shared<ChunkCache>(budget_from_env()));
  return *global_cache;
}

ChunkCache::Lookup ChunkCache::lookup(const ChunkKey& key, Purpose purpose) {
  Lookup out;
  const bool read = purpose == Purpose::Read;
  std::lock_guard lock(impl_->mutex);
  // Chunks released since the last bookkeeping may have left the cache over its budget.
  if (impl_->bytes_cached > impl_->budget) impl_->trim(impl_->budget, true);
  if (auto it = impl_->entries.find(key); it != impl_->entries.end()) {
    impl_->lru.splice(impl_->lru.begin(), impl_->lru, it->second.lru);
    if (read) {
      ++impl_->counters.hits;
      it->second.ahead_unused = false;
      impl_->note_seen(key, it->second.chunk->size());
    }
    out.chunk = it->second.chunk;
    return out;
  }
  if (auto it = impl_->in_flight.find(key); it != impl_->in_flight.end()) {
    if (read) {
      ++impl_->counters.hits;
      it->second.used = true;
    }
    out.pending = it->second.future;
    return out;
  }
  ++impl_->counters.misses;
  if (!read) ++impl_->counters.fetched_ahead;
  std::promise<Chunk> promise;
  impl_->in_flight.emplace(key, Impl::Load{promise.get_future().share(), !read, false});
  out.claim = std::shared_ptr<Claim>(new Claim(impl_, key, std::move(promise)));
  return out;
}

std::vector<ChunkCache::Chunk> ChunkCache::resident(std::span<const ChunkKey> keys) {
  std::vector<Chunk> out(keys.size());
  std::lock_guard lock(impl_->mutex);
  for (std::size_t k = 0; k < keys.size(); ++k)
    if (auto it = impl_->entries.find(keys[k]); it != impl_->entries.end()) {
      impl_->lru.splice(impl_->lru.begin(), impl_->lru, it->second.lru);
      out[k] = it->second.chunk;
    }
  return out;
}

ChunkCache::Chunk ChunkCache::fulfill(Claim& claim, Buffer decoded) {
  if (claim.owner_ != impl_) throw UsageError("fulfill: the claim on " + describe_key(claim.key_) + " belongs to another cache");
  if (claim.done_) throw UsageError("fulfill: the claim on " + describe_key(claim.key_) + " was already resolved");
  Chunk chunk = std::make_shared<const Buffer>(std::move(decoded));
  impl_->finish(claim.key_, &chunk);
  claim.done_ = true;
  claim.promise_.set_value(chunk);
  return chunk;
}

void ChunkCache::fail(Claim& claim, std::exception_ptr error) {
  if (claim.owner_ != impl_) throw UsageError("fail: the claim on " + describe_key(claim.key_) + " belongs to another cache");
  if (claim.done_) throw UsageError("fail: the claim on " + describe_key(claim.key_) + " was already resolved");
  impl_->finish(claim.key_, nullptr);
  claim.done_ = true;
  claim.promise_.set_exception(std::move(error));
}

ChunkCache::Claim::~Claim() {
  if (done_) return;
  owner_->finish(key_, nullptr);
  promise_.set_exception(std::make_exception_ptr(
      Error(describe_key(key_) + ": its load was abandoned (the claim was dropped unfulfilled)")));
}

ChunkCache::Chunk ChunkCache::get_or_load(const ChunkKey& key, const std::function<Buffer()>& load) {
  Lookup found = lookup(key);
  if (found.chunk) return found.chunk;
  if (found.pending.valid()) return found.pending.get();
  Buffer decoded;
  try {
    decoded = load();
  } catch (...) {
    fail(*found.claim, std::current_exception());
    throw;
  }
  return fulfill(*found.claim, std::move(decoded));
}

void ChunkCache::note_delivered(std::uint64_t bytes) {
  std::lock_guard lock(impl_->mutex);
  impl_->counters.bytes_delivered += bytes;
}

std::uint64_t ChunkCache::budget() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->budget;
}

void ChunkCache::set_budget(std::uint64_t budget_bytes) {
  std::lock_guard lock(impl_->mutex);
  impl_->budget = budget_bytes;
  impl_->trim(budget_bytes, true);
}

CacheStats ChunkCache::stats() const {
  std::lock_guard lock(impl_->mutex);
  CacheStats s = impl_->counters;
  s.bytes_cached = impl_->bytes_cached;
  s.peak_bytes_cached = impl_->peak;
  s.entries = impl_->entries.size();
  s.budget_bytes = impl_->budget;
  return s;
}

void ChunkCache::reset_stats() {
  std::lock_guard lock(impl_->mutex);
  impl_->counters = CacheStats{};
  impl_->seen.clear();
  impl_->peak = impl_->bytes_cached;
}

void ChunkCache::clear() {
  std::lock_guard lock(impl_->mutex);
  impl_->trim(0, false);
}

}  // namespace lazycube
