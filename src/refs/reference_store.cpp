#include "reference_store.hpp"

#include <algorithm>
#include <filesystem>
#include <future>
#include <mutex>
#include <set>
#include <unordered_map>

#include "lazycube/error.hpp"
#include "lazycube/store/byte_range.hpp"
#include "lazycube/store/reference_access.hpp"
#include "lazycube/store/vsi_location.hpp"
#include "reference_spec.hpp"

namespace lazycube::refs {

namespace {

// A plain path that is not absolute (it resolves against the reference file's directory).
bool is_relative_path(std::string_view url) {
  if (url.empty()) return true;
  return local_path_of(url) && !url.starts_with("file:") && url.front() != '/';
}

// Where one reference target is read: a store and the key inside it.
struct OpenTarget {
  std::shared_ptr<Store> store;
  std::string key;
};

std::string join_path(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "/") + p;
  return out;
}

class ReferenceStore final : public Store {
 public:
  ReferenceStore(ReferenceSet set, std::string url, const TargetUrl& base_dir, AccessPolicy policy,
                 StoreOptions target_options)
      : set_(std::move(set)),
        url_(std::move(url)),
        base_dir_(base_dir),
        policy_(std::move(policy)),
        target_options_(std::move(target_options)),
        resolved_(set_.targets.size()) {
    // Network targets (remote URLs, or relative ones beside a remote reference file) make
    // batched reads worthwhile.
    for (const auto& t : set_.targets)
      remote_ = remote_ || !local_path_of(t) || (!base_dir_.is_local() && is_relative_path(t));
  }

  std::string url() const override { return "reference://" + url_; }

  std::optional<Buffer> get(std::string_view key, ByteRange range) override {
    auto out = get_many({{std::string(key), range}});
    return std::move(out[0]);
  }

  void get_each(const std::vector<ByteRequest>& requests, const ByteSink& sink) override {
    // Requests for target data, grouped by target store so each store batches (and, over
    // HTTP, coalesces) its own requests.
    struct Group {
      std::shared_ptr<Store> store;
      std::vector<ByteRequest> requests;
      std::vector<std::size_t> slots;
      std::vector<std::uint64_t> expected;  // bytes each request must return (UINT64_MAX: unknown)
    };
    std::vector<Group> groups;
    std::unordered_map<const Store*, std::size_t> group_of;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const auto& req = requests[i];
      auto it = set_.entries.find(req.key);
      if (it == set_.entries.end()) {  // missing key: nullopt (Zarr reads fill values)
        sink(i, std::nullopt);
        continue;
      }
      const ReferenceEntry& e = it->second;
      if (e.is_inline()) {
        const auto r = detail::resolve_range(req.range, e.data.size(), describe(req.key));
        sink(i, Buffer::copy_of(ByteView(reinterpret_cast<const std::byte*>(e.data.data()) + r.offset, r.length)));
        continue;
      }
      const OpenTarget& t = target(e.target, req.key);
      ByteRange range = req.range;
      std::uint64_t expected = ReferenceEntry::kWholeObject;
      if (e.length != ReferenceEntry::kWholeObject) {
        const auto r = detail::resolve_range(req.range, e.length, describe(req.key));
        range = ByteRange::range(e.offset + r.offset, r.length);
        expected = r.length;
      }
      auto [g, fresh] = group_of.emplace(t.store.get(), groups.size());
      if (fresh) groups.push_back({t.store, {}, {}, {}});
      ByteRequest forwarded{t.key, range};
      forwarded.max_bytes = req.max_bytes;
      // A redirect is checked as the reference's own URL was (an open redirect on an allowed
      // host must not reach other services).
      forwarded.check_redirect = [this, key = req.key](const std::string& target) {
        policy_.check(parse_absolute(target, "redirect of key '" + key + "'"), key);
      };
      groups[g->second].requests.push_back(std::move(forwarded));
      groups[g->second].slots.push_back(i);
      groups[g->second].expected.push_back(expected);
    }
    // Several target stores (several hosts or buckets) are read at the same time; their
    // results reach `sink` one at a time.
    std::mutex sink_mutex;
    auto read_group = [&](std::size_t g) {
      const Group& group = groups[g];
      group.store->get_each(group.requests, [&](std::size_t k, std::optional<Buffer>&& bytes) {
        const std::size_t slot = group.slots[k];
        const std::string& key = requests[slot].key;
        if (!bytes)
          throw StoreError("kerchunk reference key '" + key + "': target " +
                           group.store->describe(group.requests[k].key) + " does not exist");
        const std::uint64_t want = group.expected[k];
        if (want != ReferenceEntry::kWholeObject && bytes->size() != want)
          throw StoreError("kerchunk reference key '" + key + "': target " +
                           group.store->describe(group.requests[k].key) + " returned " +
                           std::to_string(bytes->size()) + " bytes for " + group.requests[k].range.describe() +
                           " (the file is shorter than the reference says)");
        std::lock_guard lock(sink_mutex);
        sink(slot, std::move(bytes));
      });
    };
    std::vector<std::future<void>> pending;
    for (std::size_t g = 1; g < groups.size(); ++g) pending.push_back(std::async(std::launch::async, read_group, g));
    std::exception_ptr error;
    try {
      if (!groups.empty()) read_group(0);
    } catch (...) {
      error = std::current_exception();
    }
    for (auto& p : pending) {
      try {
        p.get();
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
  }

  std::optional<std::uint64_t> size(std::string_view key) override {
    auto it = set_.entries.find(key);
    if (it == set_.entries.end()) return std::nullopt;
    const ReferenceEntry& e = it->second;
    if (e.is_inline()) return e.data.size();
    if (e.length != ReferenceEntry::kWholeObject) return e.length;
    const OpenTarget& t = target(e.target, key);
    auto n = t.store->size(t.key);
    if (!n) throw StoreError("kerchunk reference key '" + std::string(key) + "': target " + t.store->describe(t.key) +
                             " does not exist");
    return n;
  }

  std::vector<std::string> list(std::string_view prefix) override {
    std::string p(prefix);
    if (!p.empty() && p.back() != '/') p += '/';
    std::vector<std::string> keys;
    for (auto it = set_.entries.lower_bound(p); it != set_.entries.end() && it->first.starts_with(p); ++it)
      keys.push_back(it->first);
    return keys;
  }

  std::vector<std::string> list_dir(std::string_view prefix) override {
    std::string p(prefix);
    if (!p.empty() && p.back() != '/') p += '/';
    std::set<std::string> names;
    for (auto it = set_.entries.lower_bound(p); it != set_.entries.end() && it->first.starts_with(p); ++it) {
      const std::string rest = it->first.substr(p.size());
      names.insert(rest.substr(0, rest.find('/')));
    }
    return {names.begin(), names.end()};
  }

  bool prefers_batches() const override { return remote_; }

  StoreStats stats() const override {
    StoreStats total;
    std::lock_guard lock(mutex_);
    for (const auto& [root, store] : stores_) {
      const StoreStats s = store->stats();
      total.requests += s.requests;
      total.bytes += s.bytes;
      total.retries += s.retries;
      total.errors += s.errors;
      for (const auto& [cause, n] : s.retries_by_cause) total.retries_by_cause[cause] += n;
      // Percentiles cannot be merged exactly: report the worst target's.
      total.latency_ms_p50 = std::max(total.latency_ms_p50, s.latency_ms_p50);
      total.latency_ms_p90 = std::max(total.latency_ms_p90, s.latency_ms_p90);
      total.latency_ms_p99 = std::max(total.latency_ms_p99, s.latency_ms_p99);
      total.latency_ms_max = std::max(total.latency_ms_max, s.latency_ms_max);
    }
    return total;
  }

 private:
  // The store and key of target `index`, checked against the access policy on first use.
  const OpenTarget& target(std::uint32_t index, std::string_view key) {
    std::lock_guard lock(mutex_);
    if (resolved_[index]) return *resolved_[index];
    const std::string what = "key '" + std::string(key) + "'";
    const TargetUrl t = policy_.check(resolve_target(set_.targets[index], base_dir_, what), key);
    std::string root, object;
    if (t.is_local()) {  // one file store per directory
      root = t.parent().str();
      object = t.path.empty() ? "" : t.path.back();
    } else {  // one store per host or bucket: keys are whole paths
      root = t.scheme + "://" + t.authority;
      object = join_path(t.path);
    }
    if (object.empty()) throw StoreError("kerchunk reference " + what + ": target '" + t.str() + "' names no file");
    auto& store = stores_[root];
    if (!store) {
      if (t.is_local()) store = make_file_store(root);
      else store = open_location(root, target_options_).store;
    }
    resolved_[index] = std::make_unique<OpenTarget>(OpenTarget{store, object});
    return *resolved_[index];
  }

  const ReferenceSet set_;
  const std::string url_;
  const TargetUrl base_dir_;
  const AccessPolicy policy_;
  const StoreOptions target_options_;
  bool remote_ = false;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<OpenTarget>> resolved_;
  std::map<std::string, std::shared_ptr<Store>> stores_;
};

}  // namespace

std::shared_ptr<Store> make_reference_store_from_json(std::string_view json, const std::string& url,
                                                      const StoreOptions& options) {
  const std::string what = "file '" + url + "'";
  TargetUrl location = is_relative_path(url) ? parse_absolute(std::filesystem::absolute(url).string(), what)
                           : parse_absolute(url, what);
  std::string allowed;
  if (auto it = options.find(std::string(kAllowedPrefixesOption)); it != options.end()) allowed = it->second;
  AccessPolicy policy(location.parent(), allowed);
  return std::make_shared<ReferenceStore>(parse_reference_set(json, url), url, location.parent(), std::move(policy),
                                          without_reference_options(options));
}

}  // namespace lazycube::refs
