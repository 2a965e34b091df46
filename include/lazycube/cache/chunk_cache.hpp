// ChunkCache: an LRU of decoded chunks with a byte budget, shared by every thread and dataset
// of the process. Keyed by (array identity = store URL + array path, chunk index). One fetch +
// decode per chunk however many threads ask at once (single-flight); a chunk handed out stays
// alive (pinned) while its handle is held, and pinned chunks are never evicted, so the cache
// exceeds its budget by at most the chunks currently in use.
#pragma once
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lazycube/util/buffer.hpp"

namespace lazycube {

struct ChunkKey {
  std::string array;                 // Array::cache_id(): store URL + array path
  std::vector<std::uint64_t> index;  // chunk (read unit) grid index
  bool operator==(const ChunkKey&) const = default;
};

struct ChunkKeyHash {
  std::size_t operator()(const ChunkKey& key) const noexcept;
};

struct CacheStats {
  std::uint64_t hits = 0;       // lookups answered from memory (or by joining a load in flight)
  std::uint64_t misses = 0;     // lookups that fetched + decoded the chunk
  std::uint64_t evictions = 0;  // chunks dropped to stay within the budget
  std::uint64_t bytes_fetched = 0;    // decoded bytes produced by misses
  std::uint64_t bytes_delivered = 0;  // bytes copied out of cached chunks to readers
  std::uint64_t bytes_unique = 0;     // decoded bytes of the distinct chunks ever requested
  std::uint64_t bytes_cached = 0;     // decoded bytes held now
  std::uint64_t peak_bytes_cached = 0;
  std::uint64_t entries = 0;  // chunks held now
  std::uint64_t budget_bytes = 0;
  // Fetch-ahead (BatchOptions::fetch_ahead_bytes): chunks loaded ahead of their readers, and
  // of those the ones dropped from the cache (evicted, cleared, or too big to keep) before
  // any reader used them.
  std::uint64_t fetched_ahead = 0;
  std::uint64_t fetched_ahead_unused = 0;
  // hits / (hits + misses); 0 when nothing was looked up.
  double hit_rate() const;
  // bytes_fetched / bytes_unique: 1.0 when every chunk needed was fetched exactly once, 2.0
  // when on average twice (evicted, then needed again); 0 when nothing was fetched.
  double read_amplification() const;
};

class ChunkCache {
 public:
  static constexpr std::uint64_t kDefaultBudget = std::uint64_t{1} << 30;  // 1 GiB

  // budget_bytes 0 = off: nothing is kept (loads still single-flight among concurrent callers).
  explicit ChunkCache(std::uint64_t budget_bytes = kDefaultBudget);
  ~ChunkCache();
  ChunkCache(const ChunkCache&) = delete;
  ChunkCache& operator=(const ChunkCache&) = delete;

  // The process-wide cache (budget from LAZYCUBE_CACHE_MB when set, else 1 GiB).
  static const std::shared_ptr<ChunkCache>& global();

  // A decoded chunk; holding the handle pins it.
  using Chunk = std::shared_ptr<const Buffer>;

  // The chunk for `key`: from memory, by waiting on a load already in flight, or by calling
  // `load` (exactly one caller runs it). An exception from `load` reaches every caller waiting
  // for that key and nothing is cached.
  Chunk get_or_load(const ChunkKey& key, const std::function<Buffer()>& load);

  // Batched form for callers that fetch many chunks together (network stores): lookup() tells
  // what to do with each key. A Claim obliges its holder to call fulfill() or fail() exactly
  // once (its destructor fails it with an error if neither happened, so waiters never hang).
  class Claim;
  struct Lookup {
    Chunk chunk;                       // set on a hit
    std::shared_future<Chunk> pending;  // valid when another caller is loading it
    std::shared_ptr<Claim> claim;       // set when this caller must load it
  };
  // `Purpose::FetchAhead` is a lookup on behalf of readers still to come: a hit is not counted
  // as one (nor marks the chunk as used), and a chunk it loads counts as fetched ahead until a
  // reader looks it up.
  enum class Purpose { Read, FetchAhead };
  Lookup lookup(const ChunkKey& key, Purpose purpose = Purpose::Read);
  // The chunks of `keys` the cache holds now (null for the others: neither loaded, claimed nor
  // joined), under one lock; looked up as by Purpose::FetchAhead (moved to the front of the
  // LRU, no hit counted). What fetch-ahead pins without loading anything.
  std::vector<Chunk> resident(std::span<const ChunkKey> keys);
  Chunk fulfill(Claim& claim, Buffer decoded);
  void fail(Claim& claim, std::exception_ptr error);

  // Readers report the bytes they copied out of chunks (for read amplification).
  void note_delivered(std::uint64_t bytes);

  std::uint64_t budget() const;
  // Changes the budget (evicting unpinned chunks down to it).
  void set_budget(std::uint64_t budget_bytes);
  bool enabled() const { return budget() > 0; }
  CacheStats stats() const;
  // Zeroes the counters (hits, misses, evictions, byte counts, the distinct-chunk record),
  // keeping the chunks.
  void reset_stats();
  // Drops every unpinned chunk.
  void clear();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
  friend class Claim;
};

class ChunkCache::Claim {
 public:
  ~Claim();
  const ChunkKey& key() const { return key_; }

 private:
  friend class ChunkCache;
  Claim(std::shared_ptr<ChunkCache::Impl> owner, ChunkKey key, std::promise<Chunk> promise)
      : owner_(std::move(owner)), key_(std::move(key)), promise_(std::move(promise)) {}
  std::shared_ptr<ChunkCache::Impl> owner_;
  ChunkKey key_;
  std::promise<Chunk> promise_;
  bool done_ = false;
};

}  // namespace lazycube
