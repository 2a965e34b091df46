// Local directory store: keys are relative paths under the root.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "lazycube/store/byte_range.hpp"
#include "lazycube/error.hpp"
#include "lazycube/store/store.hpp"

namespace lazycube {

namespace {

// The suffix of a put's temporary file, before mkstemp's six random characters.
constexpr std::string_view kPartialPutMark = ".lazycube-tmp-";

bool is_partial_put_key(std::string_view key) {
  const auto slash = key.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? key : key.substr(slash + 1);
  const auto at = name.rfind(kPartialPutMark);
  return at != std::string_view::npos && at > 0 && name.size() == at + kPartialPutMark.size() + 6;
}

}  // namespace

namespace fs = std::filesystem;

namespace {

// Closes a file descriptor on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

class FileStore final : public Store {
 public:
  explicit FileStore(std::string root) : root_(std::move(root)) {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  }

  std::string url() const override { return root_; }

  std::optional<Buffer> get(std::string_view key, ByteRange range) override {
    Buffer out;
    if (!get_into(key, range, out)) return std::nullopt;
    return out;
  }

  bool get_into(std::string_view key, ByteRange range, Buffer& out) override { return read(key, range, {}, out); }
  bool read_into(const ByteRequest& r, Buffer& out) override { return read(r.key, r.range, r.condition, out, r.max_bytes); }

  // Reads with their conditions checked on the opened file (see ReadCondition).
  void get_each(const std::vector<ByteRequest>& requests, const ByteSink& sink) override {
    for (std::size_t i = 0; i < requests.size(); ++i) {
      Buffer out;
      const ByteRequest& r = requests[i];
      if (read(r.key, r.range, r.condition, out, r.max_bytes)) sink(i, std::move(out));
      else sink(i, std::nullopt);
    }
  }

  std::optional<std::uint64_t> size(std::string_view key) override {
    struct stat st {};
    const std::string path = path_of(key);
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
      throw StoreError("cannot stat " + path + ": " + std::strerror(errno));
    }
    if (S_ISDIR(st.st_mode)) return std::nullopt;
    return static_cast<std::uint64_t>(st.st_size);
  }

  // The file's local ETag (inode, mtime, size): a file rewritten in place gets another.
  ObjectVersion version(std::string_view key) override {
    struct stat st {};
    const std::string path = path_of(key);
    if (::stat(path.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) {
      if (errno == ENOENT || errno == ENOTDIR || S_ISDIR(st.st_mode)) return ObjectVersion{.etag = "", .fresh_until = 0, .exists = false};
      throw StoreError("cannot stat " + path + ": " + std::strerror(errno));
    }
    return ObjectVersion{.etag = local_etag(st), .fresh_until = 0, .exists = true};
  }

  bool writable() const override { return true; }

  // Written to a temporary file beside the target, then renamed over it: a reader sees the old
  // file or the whole new one. (No fsync, as in zarr-python: surviving a power cut is not
  // promised.)
  void put(std::string_view key, ByteView bytes) override {
    const std::string path = path_of(key);
    if (path == root_) throw StoreError("invalid key '" + std::string(key) + "': empty");
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    if (ec) throw StoreError("cannot create the directory of " + path + ": " + ec.message());
    std::string tmp = path + std::string(kPartialPutMark) + "XXXXXX";
    Fd f{::mkstemp(tmp.data())};
    if (f.fd < 0) throw StoreError("cannot create " + tmp + ": " + std::strerror(errno));
    auto fail = [&](const char* what) {
      const std::string why = std::strerror(errno);
      ::unlink(tmp.c_str());
      throw StoreError(std::string("cannot ") + what + " " + path + ": " + why);
    };
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(f.fd, bytes.data() + done, bytes.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        fail("write");
      }
      done += static_cast<std::size_t>(n);
    }
    if (::fchmod(f.fd, 0644) != 0) fail("write");
    if (::close(f.fd) != 0) {
      f.fd = -1;
      fail("write");
    }
    f.fd = -1;
    if (::rename(tmp.c_str(), path.c_str()) != 0) fail("write");
  }

  void remove(std::string_view key) override {
    const std::string path = path_of(key);
    if (path == root_) throw StoreError("invalid key '" + std::string(key) + "': empty");
    if (::unlink(path.c_str()) != 0 && errno != ENOENT && errno != ENOTDIR)
      throw StoreError("cannot remove " + path + ": " + std::strerror(errno));
  }

  // Temporary files of puts a killed process left behind (a live put's too: call this only
  // when no put runs under `prefix`).
  std::size_t remove_partial_puts(std::string_view prefix) override {
    std::size_t removed = 0;
    for (const auto& key : list(prefix))
      if (is_partial_put_key(key)) {
        remove(key);
        ++removed;
      }
    return removed;
  }

  std::vector<std::string> list(std::string_view prefix) override {
    std::vector<std::string> keys;
    const fs::path base = path_of(prefix);
    std::error_code ec;
    if (!fs::is_directory(base, ec)) return keys;
    for (auto it = fs::recursive_directory_iterator(base, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file(ec))
        keys.push_back(fs::relative(it->path(), root_, ec).generic_string());
    }
    if (ec) throw StoreError("cannot list " + base.string() + ": " + ec.message());
    std::sort(keys.begin(), keys.end());
    return keys;
  }

  std::vector<std::string> list_dir(std::string_view prefix) override {
    std::vector<std::string> names;
    const fs::path base = path_of(prefix);
    std::error_code ec;
    if (!fs::is_directory(base, ec)) return names;
    for (auto it = fs::directory_iterator(base, ec); !ec && it != fs::directory_iterator();
         it.increment(ec))
      names.push_back(it->path().filename().string());
    if (ec) throw StoreError("cannot list " + base.string() + ": " + ec.message());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  // `key`'s bytes in `out`; false when it does not exist. More than `max_bytes` (0: no bound)
  // is refused from the file's size, before reading.
  bool read(std::string_view key, const ByteRange& range, const ReadCondition& condition, Buffer& out,
            std::uint64_t max_bytes = 0) {
    const std::string path = path_of(key);
    Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (f.fd < 0) {
      if (errno == ENOENT || errno == ENOTDIR) return false;
      throw StoreError("cannot open " + path + ": " + std::strerror(errno));
    }
    struct stat st {};
    if (::fstat(f.fd, &st) != 0)
      throw StoreError("cannot stat " + path + ": " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) return false;
    check_condition(st, condition, path);
    auto r = detail::resolve_range(range, static_cast<std::uint64_t>(st.st_size), path);
    detail::check_read_bound(r.length, max_bytes, path);
    out.resize(r.length);
    std::uint64_t done = 0;
    while (done < r.length) {
      ssize_t n = ::pread(f.fd, out.data() + done, r.length - done,
                          static_cast<off_t>(r.offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        throw StoreError("cannot read " + path + ": " + std::strerror(errno));
      }
      if (n == 0) throw StoreError("cannot read " + path + ": file shrank while reading");
      done += static_cast<std::uint64_t>(n);
    }
    return true;
  }

  // The file must be the one `condition` names: object_store's local ETag
  // ("{inode:x}-{mtime in microseconds:x}-{size:x}") and a whole-second mtime not after the date.
  static std::string local_etag(const struct stat& st) {
    char etag[64];
    const auto mtime_us = static_cast<std::uint64_t>(st.st_mtim.tv_sec) * 1000000u +
                          static_cast<std::uint64_t>(st.st_mtim.tv_nsec) / 1000u;
    std::snprintf(etag, sizeof etag, "%llx-%llx-%llx", static_cast<unsigned long long>(st.st_ino),
                  static_cast<unsigned long long>(mtime_us), static_cast<unsigned long long>(st.st_size));
    return etag;
  }
  static void check_condition(const struct stat& st, const ReadCondition& condition, const std::string& path) {
    if (condition.empty()) return;
    const std::string etag = local_etag(st);
    std::string_view want = condition.etag;
    if (want.size() >= 2 && want.front() == '"' && want.back() == '"') want = want.substr(1, want.size() - 2);
    const bool etag_ok = condition.etag.empty() || want == etag;
    const bool time_ok = condition.unmodified_since == 0 || st.st_mtim.tv_sec <= condition.unmodified_since;
    if (!etag_ok || !time_ok)
      throw StoreError(path + ": the file changed since it was referenced (expected " + condition.describe() +
                       "; its ETag is " + etag + ", its mtime " + std::to_string(st.st_mtim.tv_sec) + " s since the epoch)");
  }

  // Keys come from metadata we do not trust: refuse anything that could leave the root.
  std::string path_of(std::string_view key) const {
    std::string k(key);
    while (!k.empty() && k.back() == '/') k.pop_back();
    if (!k.empty() && k.front() == '/')
      throw StoreError("invalid key '" + k + "': absolute keys are not allowed");
    std::size_t start = 0;
    while (start <= k.size()) {
      std::size_t end = k.find('/', start);
      if (end == std::string::npos) end = k.size();
      std::string_view part(k.data() + start, end - start);
      if (part == "..")
        throw StoreError("invalid key '" + k + "': '..' components are not allowed");
      start = end + 1;
    }
    return k.empty() ? root_ : root_ + "/" + k;
  }

  std::string root_;
};

}  // namespace

std::shared_ptr<Store> make_file_store(const std::string& root) {
  return std::make_shared<FileStore>(root);
}

}  // namespace lazycube
