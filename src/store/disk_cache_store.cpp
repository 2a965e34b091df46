// The persistent chunk cache: see disk_cache_store.hpp and docs/disk_cache.md.
//
// One file per (store URL, key, object version, byte range), named by a hash of those and
// holding a header (magic, identity length, payload length, payload checksum), the identity text
// and the payload. Published by writing a temporary file in the directory and renaming it into
// place (readers see no file or a whole one); read whole through one open descriptor (an unlink
// by another process's eviction cannot tear it) and checked against the header (a truncated or
// corrupt file is removed and fetched again). Eviction: the least recently used files (mtime,
// refreshed on every hit) go first once the directory holds more than the budget.
#include "disk_cache_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "lazycube/error.hpp"
#include "lazycube/util/diagnostics.hpp"
#include "storage_options.hpp"

namespace lazycube {

namespace {

constexpr char kMagic[8] = {'L', 'Z', 'C', 'A', 'C', 'H', 'E', '1'};
constexpr std::size_t kHeader = 32;  // magic, identity length, payload length, checksum
constexpr const char* kSuffix = ".lcc";

std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t h = 1469598103934665603ULL) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

void put_u64(unsigned char* at, std::uint64_t v) { std::memcpy(at, &v, 8); }
std::uint64_t get_u64(const unsigned char* at) {
  std::uint64_t v;
  std::memcpy(&v, at, 8);
  return v;
}

std::string hex16(std::uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = digits[v & 15];
  return s;
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
  std::optional<std::string> version(std::string_view key) override { return inner_->version(key); }
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
      std::optional<std::string> v = r.condition.empty() ? known_version(r.key) : std::string();
      if (!v) {
        sink(i, std::nullopt);  // the HEAD said: no such object
        continue;
      }
      std::string identity, path;
      ByteRequest f = r;
      if (!v->empty()) {
        identity = inner_->url() + "\n" + r.key + "\n" + *v + "\n" + r.range.describe();
        path = o_.dir + "/" + hex16(fnv1a(identity.data(), identity.size())) + kSuffix;
        if (auto bytes = read_entry(path, identity)) {
          hits_.fetch_add(1);
          saved_.fetch_add(bytes->size());
          sink(i, std::move(*bytes));
          continue;
        }
        misses_.fetch_add(1);
        f.condition.etag = *v;  // the bytes published must be the version the HEAD saw
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
      // A changed object fails its If-Match: the next read asks for its version again.
      for (const auto& f : fetch) forget(f.key);
      throw;
    }
  }

 private:
  // HEADs (in parallel) the keys whose version this store has not asked yet.
  void resolve_versions(const std::vector<ByteRequest>& requests) {
    std::vector<std::string> todo;
    {
      std::lock_guard lock(mu_);
      for (const auto& r : requests)
        if (r.condition.empty() && !versions_.count(r.key) &&
            std::find(todo.begin(), todo.end(), r.key) == todo.end())
          todo.push_back(r.key);
    }
    if (todo.empty()) return;
    std::vector<std::optional<std::string>> got(todo.size());
    std::vector<std::exception_ptr> errors(todo.size());
    std::atomic<std::size_t> next{0};
    auto work = [&] {
      for (std::size_t k; (k = next.fetch_add(1)) < todo.size();) {
        try {
          got[k] = inner_->version(todo[k]);
        } catch (...) {
          errors[k] = std::current_exception();
        }
      }
    };
    const std::size_t n = std::min<std::size_t>(todo.size(), 32);
    std::vector<std::thread> threads;
    for (std::size_t t = 1; t < n; ++t) threads.emplace_back(work);
    work();
    for (auto& t : threads) t.join();
    for (const auto& e : errors)
      if (e) std::rethrow_exception(e);
    std::lock_guard lock(mu_);
    for (std::size_t k = 0; k < todo.size(); ++k) versions_[todo[k]] = got[k];
  }

  std::optional<std::string> known_version(const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = versions_.find(key);
    return it == versions_.end() ? std::string() : it->second;
  }

  void forget(std::string_view key) {
    std::lock_guard lock(mu_);
    versions_.erase(std::string(key));
  }

  // The payload of a whole, matching cache file, or nullopt (a bad file is removed).
  std::optional<Buffer> read_entry(const std::string& path, const std::string& identity) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    struct stat st {};
    std::optional<Buffer> out;
    bool bad = true;
    if (::fstat(fd, &st) == 0 && static_cast<std::uint64_t>(st.st_size) >= kHeader) {
      std::vector<unsigned char> all(static_cast<std::size_t>(st.st_size));
      std::size_t got = 0;
      while (got < all.size()) {
        const ssize_t r = ::read(fd, all.data() + got, all.size() - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += static_cast<std::size_t>(r);
      }
      if (got == all.size() && std::memcmp(all.data(), kMagic, 8) == 0) {
        const std::uint64_t id_len = get_u64(all.data() + 8), len = get_u64(all.data() + 16);
        const std::uint64_t sum = get_u64(all.data() + 24);
        if (kHeader + id_len + len == all.size() &&
            std::string_view(reinterpret_cast<const char*>(all.data() + kHeader), id_len) == identity) {
          const unsigned char* payload = all.data() + kHeader + id_len;
          if (fnv1a(payload, len) == sum) {
            Buffer b(static_cast<std::size_t>(len));
            if (len) std::memcpy(b.data(), payload, len);
            out = std::move(b);
            bad = false;
          }
        } else if (kHeader + id_len + len == all.size()) {
          bad = false;  // a hash collision with another entry: not ours, leave it
        }
      }
    }
    ::close(fd);
    if (out) ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // most recently used
    else if (bad) ::unlink(path.c_str());
    return out;
  }

  void publish(const std::string& path, const std::string& identity, const Buffer& bytes) {
    static std::atomic<std::uint64_t> counter{0};
    const std::string tmp = o_.dir + "/.tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return;  // a full or vanished directory: serve the bytes uncached
    unsigned char header[kHeader];
    std::memcpy(header, kMagic, 8);
    put_u64(header + 8, identity.size());
    put_u64(header + 16, bytes.size());
    put_u64(header + 24, fnv1a(bytes.data(), bytes.size()));
    const bool ok = write_all(fd, header, kHeader) && write_all(fd, identity.data(), identity.size()) &&
                    write_all(fd, bytes.data(), bytes.size());
    ::close(fd);
    if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
      ::unlink(tmp.c_str());
      return;
    }
    const std::uint64_t added = kHeader + identity.size() + bytes.size();
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
      const bool entry = name.ends_with(kSuffix), temp = name.starts_with(".tmp-");
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
  std::unordered_map<std::string, std::optional<std::string>> versions_;  // key -> ETag (per open)
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
