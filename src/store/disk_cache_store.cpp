// The persistent chunk cache: see disk_cache_store.hpp and docs/disk_cache.md.
//
// One file per (store URL, key, object version, byte range), named by a hash of those and
// holding a header (magic, identity length, payload length, payload checksum), the identity text
// and the payload. Published by writing a temporary file in the directory and renaming it into
// place (readers see no file or a whole one); read whole through one open descriptor (an unlink
// by another process's eviction cannot tear it) and checked against the header (a truncated or
// corrupt file is removed and fetched again). Eviction: the least recently used files (mtime,
// refreshed on every hit) go first once the directory holds more than the budget.
//
// Which version an entry is keyed by (never a stale one, by what the server declares): an
// immutable object's (ByteRequest::immutable: Icechunk chunks) is fixed; a conditional read's is
// its condition's ETag; any other object's ETag is asked once per open store with a HEAD, unless
// a version record in the directory (.lcv, written by any process) holds one the server declared
// fresh until a later time (Cache-Control max-age / Expires), so that a new process reads a
// fresh, cached object without a request.
#include "disk_cache_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "lazycube/error.hpp"
#include "util/diagnostics.hpp"
#include "util/hash.hpp"
#include "backend_registry.hpp"
#include "storage_options.hpp"

namespace lazycube {

namespace {

constexpr char kMagic[8] = {'L', 'Z', 'C', 'A', 'C', 'H', 'E', '2'};  // 2: payload_sum
constexpr std::size_t kHeader = 32;  // magic, identity length, payload length, checksum
constexpr const char* kSuffix = ".lcc";         // a cached byte range
constexpr const char* kRecordSuffix = ".lcv";   // a version record
constexpr const char* kRecordMagic = "LZCVER1";

// The payload checksum: Fletcher-style sums of 64-bit words in four independent lanes, kept in
// registers (a byte-at-a-time FNV-1a over each hit's payload cost more than decoding it),
// position-sensitive through the second sums, folded with the tail and the length.
std::uint64_t payload_sum(const void* data, std::size_t n) {
  std::uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0;
  const auto* p = static_cast<const unsigned char*>(data);
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    std::uint64_t w0, w1, w2, w3;
    std::memcpy(&w0, p + i, 8);
    std::memcpy(&w1, p + i + 8, 8);
    std::memcpy(&w2, p + i + 16, 8);
    std::memcpy(&w3, p + i + 24, 8);
    a0 += w0;
    a1 += w1;
    a2 += w2;
    a3 += w3;
    b0 += a0;
    b1 += a1;
    b2 += a2;
    b3 += a3;
  }
  std::uint64_t h = fnv1a(p + i, n - i);
  for (const std::uint64_t v : {a0, b0, a1, b1, a2, b2, a3, b3}) h = (h ^ v) * 1099511628211ULL;
  return (h ^ n) * 1099511628211ULL;
}

void put_u64(unsigned char* at, std::uint64_t v) { std::memcpy(at, &v, 8); }
std::uint64_t get_u64(const unsigned char* at) {
  std::uint64_t v;
  std::memcpy(&v, at, 8);
  return v;
}

bool write_all(int fd, const void* data, std::size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

class DiskCacheStore final : public Store {
 public:
  DiskCacheStore(std::shared_ptr<Store> inner, DiskCacheOptions options)
      : inner_(std::move(inner)), o_(std::move(options)) {}

  std::string url() const override { return inner_->url(); }
  bool prefers_batches() const override { return inner_->prefers_batches(); }
  std::optional<std::uint64_t> size(std::string_view key) override { return inner_->size(key); }
  ObjectVersion version(std::string_view key) override { return inner_->version(key); }
  std::vector<std::string> list(std::string_view prefix) override { return inner_->list(prefix); }
  std::vector<std::string> list_dir(std::string_view prefix) override { return inner_->list_dir(prefix); }
  bool writable() const override { return inner_->writable(); }
  void put(std::string_view key, ByteView bytes) override {
    forget(key);
    inner_->put(key, bytes);
  }
  void remove(std::string_view key) override {
    forget(key);
    inner_->remove(key);
  }
  std::size_t remove_partial_puts(std::string_view prefix) override { return inner_->remove_partial_puts(prefix); }

  StoreStats stats() const override {
    StoreStats s = inner_->stats();
    s.cache_hits = hits_.load();
    s.cache_misses = misses_.load();
    s.cache_bytes_saved = saved_.load();
    return s;
  }

  std::optional<Buffer> get(std::string_view key, ByteRange range) override {
    auto r = get_many({{std::string(key), range}});
    return std::move(r[0]);
  }

  void get_each(const std::vector<ByteRequest>& requests, const ByteSink& sink) override {
    resolve_versions(requests);
    std::vector<ByteRequest> fetch;
    std::vector<std::size_t> index;          // fetch[j] is requests[index[j]]
    std::vector<std::string> entry_of;       // fetch[j]'s cache file ("": not cached)
    std::vector<std::string> identity_of;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const ByteRequest& r = requests[i];
      std::optional<std::string> v = version_to_cache(r);
      if (!v) {
        sink(i, std::nullopt);  // the HEAD said: no such object
        continue;
      }
      std::string identity, path;
      ByteRequest f = r;
      if (!v->empty()) {
        identity = inner_->url() + "\n" + r.key + "\n" + *v + "\n" + r.range.describe();
        path = entry_path(identity, kSuffix);
        if (auto bytes = read_entry(path, identity)) {
          hits_.fetch_add(1);
          saved_.fetch_add(bytes->size());
          sink(i, std::move(*bytes));
          continue;
        }
        misses_.fetch_add(1);
        // The bytes published must be the version the HEAD saw (an immutable object has one).
        if (!r.immutable) f.condition.etag = *v;
      }
      fetch.push_back(std::move(f));
      index.push_back(i);
      entry_of.push_back(std::move(path));
      identity_of.push_back(std::move(identity));
    }
    if (fetch.empty()) return;
    try {
      inner_->get_each(fetch, [&](std::size_t j, std::optional<Buffer>&& bytes) {
        if (bytes && !entry_of[j].empty()) publish(entry_of[j], identity_of[j], *bytes);
        sink(index[j], std::move(bytes));
      });
    } catch (const StoreError&) {
      // A changed object fails its If-Match: the next read asks for its version again (and a
      // server that declared it fresh is asked too: its record is dropped).
      for (const auto& f : fetch) forget(f.key, true);
      throw;
    }
  }

 private:
  // The version a request's cache entry is keyed by: "immutable" for content-named objects, the
  // read condition's ETag (the fetch is conditional on it anyway), else the one resolved for its
  // key; "" : do not cache; nullopt: no such object.
  std::optional<std::string> version_to_cache(const ByteRequest& r) {
    if (r.immutable) return std::string("immutable");
    if (!r.condition.empty()) return r.condition.etag;
    std::lock_guard lock(mu_);
    auto it = versions_.find(r.key);
    if (it == versions_.end()) return std::string();
    if (!it->second.exists) return std::nullopt;
    return it->second.etag;
  }

  // The versions of the keys this store has not asked yet: from a version record the server
  // declared still fresh (no request), else a HEAD (in parallel).
  void resolve_versions(const std::vector<ByteRequest>& requests) {
    std::vector<std::string> todo;
    {
      std::unordered_set<std::string_view> seen;
      std::lock_guard lock(mu_);
      for (const auto& r : requests)
        if (!r.immutable && r.condition.empty() && !versions_.count(r.key) && seen.insert(r.key).second)
          todo.push_back(r.key);
    }
    if (todo.empty()) return;
    const std::int64_t now = static_cast<std::int64_t>(::time(nullptr));
    std::vector<std::string> ask;
    {
      std::vector<std::pair<std::string, ObjectVersion>> fresh;
      for (auto& key : todo) {
        if (auto v = read_version_record(key, now)) fresh.emplace_back(std::move(key), std::move(*v));
        else ask.push_back(std::move(key));
      }
      std::lock_guard lock(mu_);
      for (auto& [key, v] : fresh) versions_[key] = std::move(v);
    }
    if (ask.empty()) return;
    std::vector<ObjectVersion> got(ask.size());
    std::vector<std::exception_ptr> errors(ask.size());
    std::atomic<std::size_t> next{0};
    auto work = [&] {
      for (std::size_t k; (k = next.fetch_add(1)) < ask.size();) {
        try {
          got[k] = inner_->version(ask[k]);
        } catch (...) {
          errors[k] = std::current_exception();
        }
      }
    };
    const std::size_t n = std::min<std::size_t>(ask.size(), 32);
    std::vector<std::thread> threads;
    for (std::size_t t = 1; t < n; ++t) threads.emplace_back(work);
    work();
    for (auto& t : threads) t.join();
    for (const auto& e : errors)
      if (e) std::rethrow_exception(e);
    for (std::size_t k = 0; k < ask.size(); ++k)
      if ((!got[k].exists || !got[k].etag.empty()) && got[k].fresh_until > now) write_version_record(ask[k], got[k]);
    std::lock_guard lock(mu_);
    for (std::size_t k = 0; k < ask.size(); ++k) versions_[ask[k]] = std::move(got[k]);
  }

  void forget(std::string_view key, bool drop_record = false) {
    {
      std::lock_guard lock(mu_);
      versions_.erase(std::string(key));
    }
    if (drop_record) ::unlink(version_record_path(key).c_str());
  }

  std::string entry_path(const std::string& identity, const char* suffix) const {
    return o_.dir + "/" + hex16(fnv1a(identity.data(), identity.size())) + suffix;
  }
  std::string record_identity(std::string_view key) const { return "version\n" + inner_->url() + "\n" + std::string(key); }
  std::string version_record_path(std::string_view key) const { return entry_path(record_identity(key), kRecordSuffix); }

  // A version record: the ETag a HEAD saw and until when the server declared it fresh, shared
  // by every process using the directory, so that a new process reads its fresh entries without
  // asking. Text: magic, identity length, identity, fresh_until, ETag. An absent object whose
  // 404 was declared fresh has a record with no ETag: a new process does not ask for it again
  // (format sniffing's probes of keys a store does not hold). nullopt when missing, malformed or
  // no longer fresh.
  std::optional<ObjectVersion> read_version_record(std::string_view key, std::int64_t now) const {
    const std::string path = version_record_path(key), identity = record_identity(key);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    char buf[4096];
    std::size_t got = 0;
    while (got < sizeof buf) {
      const ssize_t r = ::read(fd, buf + got, sizeof buf - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += static_cast<std::size_t>(r);
    }
    ::close(fd);
    const std::string_view text(buf, got);
    const std::string head = std::string(kRecordMagic) + "\n" + identity + "\n";
    if (got == sizeof buf || !text.starts_with(head)) return std::nullopt;
    std::string_view rest = text.substr(head.size());
    const auto nl = rest.find('\n');
    if (nl == std::string_view::npos || rest.back() != '\n') return std::nullopt;
    ObjectVersion v;
    const auto [p, ec] = std::from_chars(rest.data(), rest.data() + nl, v.fresh_until);
    if (ec != std::errc() || p != rest.data() + nl) return std::nullopt;
    v.etag = std::string(rest.substr(nl + 1, rest.size() - nl - 2));
    v.exists = !v.etag.empty();
    if (v.fresh_until <= now) return std::nullopt;
    return v;
  }

  void write_version_record(std::string_view key, const ObjectVersion& v) {
    const std::string text = std::string(kRecordMagic) + "\n" + record_identity(key) + "\n" +
                             std::to_string(v.fresh_until) + "\n" + v.etag + "\n";
    if (text.size() >= 4096 || v.etag.find('\n') != std::string::npos) return;
    publish_file(version_record_path(key), text.data(), text.size(), nullptr, 0);
  }

  // The payload of a whole, matching cache file, or nullopt (a bad file is removed). Read
  // through one descriptor: header and identity first, then the payload straight into the
  // buffer handed out.
  std::optional<Buffer> read_entry(const std::string& path, const std::string& identity) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    struct stat st {};
    std::optional<Buffer> out;
    bool bad = true;
    const std::size_t head_size = kHeader + identity.size();
    if (::fstat(fd, &st) == 0 && static_cast<std::uint64_t>(st.st_size) >= kHeader) {
      std::string head(std::min<std::size_t>(head_size, static_cast<std::size_t>(st.st_size)), '\0');
      if (read_at(fd, head.data(), head.size(), 0) && std::memcmp(head.data(), kMagic, 8) == 0) {
        const auto* h = reinterpret_cast<const unsigned char*>(head.data());
        const std::uint64_t id_len = get_u64(h + 8), len = get_u64(h + 16), sum = get_u64(h + 24);
        const bool whole = kHeader + id_len + len == static_cast<std::uint64_t>(st.st_size);
        if (whole && id_len == identity.size() && std::string_view(head).substr(kHeader) == identity) {
          Buffer b(static_cast<std::size_t>(len));
          if (read_at(fd, b.data(), b.size(), head_size) && payload_sum(b.data(), b.size()) == sum) {
            out = std::move(b);
            bad = false;
          }
        } else if (whole) {
          bad = false;  // a hash collision with another entry: not ours, leave it
        }
      }
    }
    ::close(fd);
    // Most recently used: the mtime is refreshed when older than a few seconds (LRU needs no
    // finer order, and a metadata write per hit is not free).
    if (out && ::time(nullptr) - st.st_mtim.tv_sec > 5) ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
    else if (!out && bad) ::unlink(path.c_str());
    return out;
  }

  static bool read_at(int fd, void* into, std::size_t n, std::size_t offset) {
    auto* p = static_cast<char*>(into);
    while (n > 0) {
      const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      p += r;
      n -= static_cast<std::size_t>(r);
      offset += static_cast<std::size_t>(r);
    }
    return true;
  }

  void publish(const std::string& path, const std::string& identity, const Buffer& bytes) {
    unsigned char header[kHeader];
    std::memcpy(header, kMagic, 8);
    put_u64(header + 8, identity.size());
    put_u64(header + 16, bytes.size());
    put_u64(header + 24, payload_sum(bytes.data(), bytes.size()));
    std::string head(reinterpret_cast<const char*>(header), kHeader);
    head += identity;
    publish_file(path, head.data(), head.size(), bytes.data(), bytes.size());
  }

  // Writes `a` then `b` to a temporary file in the directory and renames it to `path` (readers
  // see no file or a whole one); a full or vanished directory leaves nothing (the bytes are served
  // uncached). Runs eviction once enough has been published since the last scan.
  void publish_file(const std::string& path, const void* a, std::size_t a_size, const void* b, std::size_t b_size) {
    static std::atomic<std::uint64_t> counter{0};
    const std::string tmp = o_.dir + "/.tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return;
    const bool ok = write_all(fd, a, a_size) && (b_size == 0 || write_all(fd, b, b_size));
    ::close(fd);
    if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
      ::unlink(tmp.c_str());
      return;
    }
    const std::uint64_t added = a_size + b_size;
    if (published_since_scan_.fetch_add(added) + added > o_.max_bytes / 16 || !scanned_.exchange(true)) evict();
  }

  // Brings the directory under the budget: removes least recently used entries (by mtime) until
  // it holds at most 90% of it. Any process may run it at any time; files gone meanwhile are
  // skipped, and a reader holding one open still reads it whole.
  void evict() {
    std::lock_guard lock(evict_mu_);
    published_since_scan_.store(0);
    struct Entry {
      std::string path;
      std::uint64_t size;
      struct timespec mtime;
    };
    std::vector<Entry> entries;
    std::uint64_t total = 0;
    DIR* d = ::opendir(o_.dir.c_str());
    if (!d) return;
    while (const dirent* e = ::readdir(d)) {
      const std::string_view name = e->d_name;
      const bool entry = name.ends_with(kSuffix) || name.ends_with(kRecordSuffix), temp = name.starts_with(".tmp-");
      if (!entry && !temp) continue;
      std::string path = o_.dir + "/" + std::string(name);
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0) continue;
      if (temp) {  // left by a killed process (a live one renames within seconds)
        if (::time(nullptr) - st.st_mtim.tv_sec > 3600) ::unlink(path.c_str());
        continue;
      }
      total += static_cast<std::uint64_t>(st.st_size);
      entries.push_back({std::move(path), static_cast<std::uint64_t>(st.st_size), st.st_mtim});
    }
    ::closedir(d);
    if (total <= o_.max_bytes) return;
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return a.mtime.tv_sec != b.mtime.tv_sec ? a.mtime.tv_sec < b.mtime.tv_sec : a.mtime.tv_nsec < b.mtime.tv_nsec;
    });
    const std::uint64_t target = o_.max_bytes / 10 * 9;
    for (const auto& e : entries) {
      if (total <= target) break;
      if (::unlink(e.path.c_str()) == 0 || errno == ENOENT) total -= e.size;
    }
  }

  std::shared_ptr<Store> inner_;
  DiskCacheOptions o_;
  std::mutex mu_;
  std::unordered_map<std::string, ObjectVersion> versions_;  // key -> version (per open)
  std::mutex evict_mu_;
  std::atomic<std::uint64_t> published_since_scan_{0};
  std::atomic<bool> scanned_{false};
  std::atomic<std::uint64_t> hits_{0}, misses_{0}, saved_{0};
};

}  // namespace

DiskCacheOptions disk_cache_options(const StorageOptions& options) {
  DiskCacheOptions o;
  if (options.given.count("cache_dir")) {
    o.dir = options.cache_dir;
  } else if (const char* env = std::getenv("LAZYCUBE_CACHE_DIR")) {
    o.dir = env;
  }
  o.max_bytes = options.cache_size;
  while (o.dir.size() > 1 && o.dir.back() == '/') o.dir.pop_back();
  return o;
}

std::shared_ptr<Store> make_disk_cache_store(std::shared_ptr<Store> inner, const DiskCacheOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec && (ec.value() == ENOSPC || ec.value() == EDQUOT)) {
    // A full disk is no reason to fail the read (as a publish that finds no room): uncached.
    diagnostics::warn("cache_dir '" + options.dir + "' cannot be created: " + ec.message() +
                      "; reading without the chunk cache");
    return inner;
  }
  if (ec || ::access(options.dir.c_str(), W_OK | X_OK) != 0)
    throw StoreError("cache_dir '" + options.dir + "' cannot be used as the chunk cache: " +
                     (ec ? ec.message() : std::string(std::strerror(errno))) +
                     " (give a writable directory, or cache_dir=\"\" to read without the cache)");
  return std::make_shared<DiskCacheStore>(std::move(inner), options);
}

}  // namespace lazycube

// The persistent cache is a store layer over every network store (backend_registry.hpp).
LAZYCUBE_REGISTER_BACKEND(disk_cache) {
  using namespace lazycube;
  registry.add_layer({.name = "disk_cache", .order = 100, .wrap = [](Location location, const StorageOptions& options) {
                        const DiskCacheOptions cache = disk_cache_options(options);
                        if (!cache.dir.empty()) location.store = make_disk_cache_store(std::move(location.store), cache);
                        return location;
                      }});
}
