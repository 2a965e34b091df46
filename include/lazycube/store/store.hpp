// Store: bytes by key (and byte range). Backends: local files and memory here; the cloud
// backends share this interface. Keys use '/' separators, no leading slash.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lazycube/util/buffer.hpp"

namespace lazycube {

// Which bytes of an object to read.
struct ByteRange {
  enum class Kind { Full, Range, Offset, Suffix };
  Kind kind = Kind::Full;
  std::uint64_t offset = 0;  // Range, Offset
  std::uint64_t length = 0;  // Range: number of bytes; Suffix: last `length` bytes

  static ByteRange full() { return {}; }
  static ByteRange range(std::uint64_t off, std::uint64_t len) { return {Kind::Range, off, len}; }
  static ByteRange from(std::uint64_t off) { return {Kind::Offset, off, 0}; }
  static ByteRange suffix(std::uint64_t len) { return {Kind::Suffix, 0, len}; }
  std::string describe() const;
};

// A precondition on the object a read is served from: it must still be the object a reference
// recorded (Icechunk's virtual chunks). HTTP backends send it as If-Match / If-Unmodified-Since;
// the file store compares the file's ETag (object_store's "inode-mtime-size" hex form) and mtime.
// A failed condition is a StoreError naming the object, never other bytes; a store that cannot
// check conditions refuses a conditional read (Store::get_each).
struct ReadCondition {
  std::string etag;                   // the object's ETag must equal this one ("": no check)
  std::int64_t unmodified_since = 0;  // Unix seconds: not modified after this (0: no check)
  bool empty() const { return etag.empty() && unmodified_since == 0; }
  bool operator==(const ReadCondition&) const = default;
  std::string describe() const;  // "ETag \"abc\"", "not modified after 2024-01-02T03:04:05Z"
};

struct ByteRequest {
  std::string key;
  ByteRange range;
  ReadCondition condition{};  // none by default (the braces keep {key, range} warning-free)
  // The object at `key` never changes once written: its key names its content (Icechunk's
  // chunks, manifests and snapshots are named by their ids). Caches keep it without asking the
  // store for its version.
  bool immutable = false;
  // Called with the target of each redirect an HTTP store is answered with, before following
  // it: throws (StoreError, saying why) to refuse it. Kerchunk reference sets check hops against
  // their allowed prefixes, as they check the reference's own URL.
  std::function<void(const std::string& target_url)> check_redirect{};
  // The most bytes this read may return when the reader knows a bound from metadata (a chunk's
  // encoded-size bound, a manifest's recorded size, a native chunk's recorded length); 0: none
  // beyond the store's own. An object past it is a StoreError naming it, the bound and the
  // bytes, raised before reading (local stores) or as soon as the reply passes it (HTTP).
  std::uint64_t max_bytes = 0;
};

// What a store can tell of an object's current version (Store::version).
struct ObjectVersion {
  std::string etag;  // "" when the store cannot tell, which the persistent chunk cache reads as "do not cache"
  // Unix seconds until which the server declares the object unchanged (HTTP Cache-Control
  // max-age / Expires, as GCS sends for public objects); 0: no such promise, ask again. For an
  // absent object: until when its absence is declared (a 404 sent with such headers).
  std::int64_t fresh_until = 0;
  bool exists = true;  // false: there is no object at the key
  bool operator==(const ObjectVersion&) const = default;
};

// Counters of a store's traffic (network backends; local stores report zeros). Latency is per
// HTTP attempt, in milliseconds, over a bounded window of recent attempts.
struct StoreStats {
  std::uint64_t requests = 0;  // HTTP attempts sent (retries included)
  std::uint64_t bytes = 0;     // body bytes received
  std::uint64_t retries = 0;   // attempts that were retried
  std::map<std::string, std::uint64_t> retries_by_cause;  // "http_503", "timeout", "connection", ...
  std::uint64_t errors = 0;    // requests that failed for good (after their last attempt)
  double latency_ms_p50 = 0, latency_ms_p90 = 0, latency_ms_p99 = 0, latency_ms_max = 0;
  // The persistent chunk cache (storage option cache_dir): reads served from local files, reads
  // fetched (and published), and the bytes the hits did not fetch.
  std::uint64_t cache_hits = 0, cache_misses = 0, cache_bytes_saved = 0;
};

// Options passed when opening a URL (fsspec-style storage_options for the network backends; the
// names each backend accepts are listed in docs/stores.md, "Storage options").
using StoreOptions = std::map<std::string, std::string>;

class Store {
 public:
  Store();
  virtual ~Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Human-readable location of the store root, for messages (never contains secrets).
  virtual std::string url() const = 0;
  // The object at `key`, or nullopt when it does not exist. A range reaching past the end is
  // clipped; a range starting past the end is a StoreError. Other failures throw StoreError.
  virtual std::optional<Buffer> get(std::string_view key, ByteRange range = {}) = 0;
  // Like get(), but reads into `out` (reusing its capacity); false when the key does not exist.
  // The hot read path calls this with a per-thread buffer so chunks cost no fresh allocation.
  virtual bool get_into(std::string_view key, ByteRange range, Buffer& out);
  // get_into for a whole request, honouring all of it (max_bytes, condition, redirect check):
  // the Zarr reader's per-thread buffer path. The default goes through get_each, so a store
  // (or a wrapper passing requests on) overrides it only to read straight into `out`.
  virtual bool read_into(const ByteRequest& request, Buffer& out);
  // Receives each result of get_each: the request's index and its bytes (nullopt: no such key).
  using ByteSink = std::function<void(std::size_t index, std::optional<Buffer>&& bytes)>;
  // Several reads at once (backends that can overlap requests do), each result handed to `sink`
  // as soon as it is complete: once per request, in completion order, one call at a time,
  // possibly on another thread than the caller's. Errors as for get(). When `sink` throws, the
  // reads not yet started are dropped and the exception is rethrown. The default reads one
  // request after the other with get(), and refuses requests with a ReadCondition.
  virtual void get_each(const std::vector<ByteRequest>& requests, const ByteSink& sink);
  // get_each collected: the results in request order.
  std::vector<std::optional<Buffer>> get_many(const std::vector<ByteRequest>& requests);
  // Size of the object at `key`, or nullopt when it does not exist.
  virtual std::optional<std::uint64_t> size(std::string_view key) = 0;
  // The current version of the object at `key` (its ETag and the freshness the server declares,
  // asked with a HEAD on HTTP stores); exists false when there is none (with the freshness the
  // 404 declared); an empty ETag when this store cannot tell (the default), which the persistent
  // chunk cache reads as "do not cache".
  virtual ObjectVersion version(std::string_view key) {
    (void)key;
    return ObjectVersion{};
  }
  bool exists(std::string_view key) { return size(key).has_value(); }
  // Every key under `prefix` (a "directory" ending in '/' or empty for all), recursively, sorted.
  virtual std::vector<std::string> list(std::string_view prefix) = 0;
  // Immediate children of `prefix` (keys and sub-prefixes, without trailing '/'), sorted.
  virtual std::vector<std::string> list_dir(std::string_view prefix) = 0;
  // True for network stores, where one get_many over many keys beats one get per key: the
  // Zarr read path then batches the fetches of a read's units.
  virtual bool prefers_batches() const { return false; }
  // Traffic counters (see StoreStats); all zero for stores that do no network I/O.
  virtual StoreStats stats() const { return {}; }

  // ---- writing (the Zarr writer) ----
  // Whether put() and remove() work here: local directories, memory, and the object stores
  // (s3://, gs://, az://); plain http(s):// and kerchunk reference sets are read-only.
  virtual bool writable() const { return false; }
  // Writes `bytes` as the whole object at `key`, replacing any. Readers see the old object or the
  // new one, never a part: a local file is written beside and renamed into place; an object
  // store gets one PUT, or above the `part_size` storage option a multipart upload (S3, GCS) or
  // a block list (Azure) committed once every part is in, and aborted when one fails.
  // StoreError naming the key when it fails (AuthError when credentials are refused), or when
  // the store is read-only.
  virtual void put(std::string_view key, ByteView bytes);
  // Removes the object at `key`; nothing happens when there is none. StoreError as for put().
  virtual void remove(std::string_view key);
  // Removes what puts of a killed process left half-done under `prefix` (a local put's
  // temporary file beside its target), so that a resumed write ends as a whole one; returns how
  // many. Only while no put runs there: a live put's temporary file looks the same. Nothing for
  // object stores, where an upload is invisible until complete (a multipart upload left open
  // holds no object).
  virtual std::size_t remove_partial_puts(std::string_view prefix) {
    (void)prefix;
    return 0;
  }

  // Unique id of this store instance within the process (used in cache keys).
  std::uint64_t id() const { return id_; }
  // Joins a key for messages: "<url>/<key>".
  std::string describe(std::string_view key) const;

 private:
  std::uint64_t id_;
};

// Reads a local directory tree. Keys map to paths under `root`; '..' components are refused.
std::shared_ptr<Store> make_file_store(const std::string& root);
// Reads objects under an http:// or https:// root URL through the process-wide fetch engine.
// Options: the transfer options every network store shares (max_concurrency, timeout, retries,
// deadline, backoff, coalesce_gap, ...; docs/stores.md "Storage options"); an unknown one is a StoreError
// naming it and listing the valid ones. Listing is not supported.
std::shared_ptr<Store> make_http_store(const std::string& url, const StoreOptions& options = {});
// An in-memory store (tests, generated data).
class MemoryStore;
std::shared_ptr<MemoryStore> make_memory_store();

class MemoryStore : public Store {
 public:
  std::string url() const override { return "memory://"; }
  std::optional<Buffer> get(std::string_view key, ByteRange range = {}) override;
  std::optional<std::uint64_t> size(std::string_view key) override;
  std::vector<std::string> list(std::string_view prefix) override;
  std::vector<std::string> list_dir(std::string_view prefix) override;
  void set(const std::string& key, ByteView value);
  void set(const std::string& key, std::string_view value);
  void erase(const std::string& key);
  bool writable() const override { return true; }
  void put(std::string_view key, ByteView bytes) override { set(std::string(key), bytes); }
  void remove(std::string_view key) override { erase(std::string(key)); }

 private:
  std::map<std::string, Buffer, std::less<>> objects_;
};

// A parsed location: the store holding it and the path of the node (group or array) inside it.
struct Location {
  std::shared_ptr<Store> store;
  std::string path;  // node path inside the store, "" for the root
};

// Opens a URL (plain path, file://, http(s)://, s3://, gs:// (gcs://), az:// (abfs[s]://); the
// backends of src/store/backend_registry.cpp) as the store root, with the store layers over it
// (storage option cache_dir: the persistent cache). Kerchunk reference sets are a format, not a
// store: lazycube::open reads them, refs::open_references (lazycube/refs/references.hpp) gives
// their store. Throws NotFound when a local path does not exist.
Location open_location(std::string_view url, const StoreOptions& options = {});

// `url` for messages and reprs: without its userinfo (user:password@) and its query string
// (presigned URLs carry signatures there).
std::string redact_url(std::string_view url);

// open_location for writing (the Zarr writer): a missing local directory is created with its
// parents; a store that cannot be written (http(s)://, kerchunk references) is a StoreError
// naming the URL.
Location open_writable_location(std::string_view url, const StoreOptions& options = {});

}  // namespace lazycube
