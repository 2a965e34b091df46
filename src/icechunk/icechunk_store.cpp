// IcechunkStore: one snapshot of a repository as a read-only Zarr v3 store. Keys are node
// zarr.json documents (from the snapshot) and chunk keys (per the array's chunk_key_encoding),
// which the manifests map to inline bytes, byte ranges of chunks/<id>, or virtual locations.
#include <algorithm>
#include <limits>
#include <mutex>
#include <shared_mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "lazycube/error.hpp"
#include "lazycube/zarr/chunk_key_encoding.hpp"
#include "manifest.hpp"
#include "repository_state.hpp"
#include "snapshot.hpp"
#include "virtual_containers.hpp"

namespace lazycube::icechunk {

namespace {

// How an array names its chunks (its chunk_key_encoding), for Icechunk's 32-bit coordinates.
struct ChunkKeys {
  zarr::ChunkKeyEncoding encoding;
  std::size_t ndim = 0;

  std::string key(const std::vector<std::uint32_t>& coords) const {
    const std::vector<std::uint64_t> index(coords.begin(), coords.end());
    return encoding.key(index);
  }

  // The coordinates of chunk key `rest`; nullopt when it is not one of this array's keys.
  std::optional<std::vector<std::uint32_t>> parse(std::string_view rest) const {
    const auto index = encoding.index_of(rest, ndim);
    if (!index) return std::nullopt;
    std::vector<std::uint32_t> coords;
    for (const auto i : *index) {
      if (i > std::numeric_limits<std::uint32_t>::max()) return std::nullopt;
      coords.push_back(static_cast<std::uint32_t>(i));
    }
    return coords;
  }
};

ChunkKeys chunk_keys_of(const NodeInfo& node, const std::string& where) {
  const auto doc = nlohmann::json::parse(node.zarr_json, nullptr, false);
  if (!doc.is_object() || !doc.contains("shape") || !doc["shape"].is_array())
    throw MetadataError(where + ": the zarr.json of array '" + node.path + "' is not Zarr v3 array metadata");
  ChunkKeys keys;
  keys.ndim = doc["shape"].size();
  if (auto it = doc.find("chunk_key_encoding"); it != doc.end())
    keys.encoding = zarr::ChunkKeyEncoding::parse(*it, where + ": array '" + node.path + "'");
  return keys;
}

// Offset and length of `range` inside an object of `size` bytes (Store::get's clipping rules).
std::pair<std::uint64_t, std::uint64_t> slice(std::uint64_t size, const ByteRange& range, const std::string& what) {
  switch (range.kind) {
    case ByteRange::Kind::Full: return {0, size};
    case ByteRange::Kind::Suffix: {
      const std::uint64_t n = std::min(range.length, size);
      return {size - n, n};
    }
    case ByteRange::Kind::Range:
    case ByteRange::Kind::Offset:
      if (range.offset > size)
        throw StoreError(what + ": byte range " + range.describe() + " starts past its end (" + std::to_string(size) + " bytes)");
      return {range.offset, range.kind == ByteRange::Kind::Offset ? size - range.offset
                                                                  : std::min(range.length, size - range.offset)};
  }
  return {0, size};
}

class IcechunkStore final : public Store {
 public:
  IcechunkStore(std::shared_ptr<const Repository> repo, const IcechunkOptions& options)
      : repo_(std::move(repo)), virtual_(options.virtual_chunk_containers, state_of(*repo_).containers) {
    snapshot_id_ = repo_->resolve(options.version);
    snapshot_ = state_of(*repo_).files->snapshot(snapshot_id_);
    for (const auto& [path, node] : snapshot_->nodes())
      if (node.is_array) keys_.emplace(path, chunk_keys_of(node, snapshot_->name()));
  }

  std::string url() const override {
    const Location& root = repo_->root();
    return root.path.empty() ? root.store->url() : root.store->describe(root.path);
  }

  std::optional<Buffer> get(std::string_view key, ByteRange range) override {
    Resolved r = resolve(key);
    if (r.kind == Resolved::Missing) return std::nullopt;
    const auto [off, len] = slice(r.size(), range, describe(key));
    if (r.kind == Resolved::Bytes) return Buffer::copy_of(r.bytes.subspan(off, len));
    // Through get_many: the request says more than a key and range (a read condition, that the
    // object is immutable, a virtual chunk's redirect check, a native chunk's bound).
    auto got = std::move(r.store->get_many({read_request(r, key, off, len)})[0]);
    trim(got, len);
    check_read(r, key, got, len);
    return got;
  }

  // The Zarr reader's per-thread buffer path: native chunks read straight into `out`.
  bool read_into(const ByteRequest& request, Buffer& out) override {
    const std::string_view key = request.key;
    const ByteRange range = request.range;
    Resolved r = resolve(key);
    if (r.kind != Resolved::Read || !r.condition.empty() || r.store->prefers_batches())
      return Store::read_into(request, out);
    const auto [off, len] = slice(r.size(), range, describe(key));
    check_bound(key, len, request.max_bytes);
    const bool found = r.store->read_into(read_request(r, key, off, len), out);
    if (found) trim(out, len);
    check_read(r, key, found ? std::optional<std::uint64_t>(out.size()) : std::nullopt, len);
    return true;
  }

  void get_each(const std::vector<ByteRequest>& requests, const ByteSink& sink) override {
    // Inline and metadata bytes at once; reads grouped per underlying store (one get_each each,
    // so the fetch engine overlaps and coalesces them).
    std::map<Store*, std::vector<std::size_t>> groups;
    std::vector<Resolved> resolved(requests.size());
    std::vector<std::uint64_t> lengths(requests.size());
    std::vector<ByteRequest> reads(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      resolved[i] = resolve(requests[i].key);
      Resolved& r = resolved[i];
      if (r.kind == Resolved::Missing) {
        sink(i, std::nullopt);
        continue;
      }
      const auto [off, len] = slice(r.size(), requests[i].range, describe(requests[i].key));
      check_bound(requests[i].key, len, requests[i].max_bytes);
      if (r.kind == Resolved::Bytes) {
        sink(i, Buffer::copy_of(r.bytes.subspan(off, len)));
        continue;
      }
      lengths[i] = len;
      reads[i] = read_request(r, requests[i].key, off, len);
      groups[r.store.get()].push_back(i);
    }
    for (auto& [store, group] : groups) {
      const auto& indexes = group;  // a lambda may not capture a structured binding in clang 14
      std::vector<ByteRequest> sub;
      sub.reserve(indexes.size());
      for (std::size_t i : indexes) sub.push_back(std::move(reads[i]));
      store->get_each(sub, [&](std::size_t j, std::optional<Buffer>&& got) {
        const std::size_t i = indexes[j];
        trim(got, lengths[i]);
        check_read(resolved[i], requests[i].key, got, lengths[i]);
        sink(i, std::move(got));
      });
    }
  }

  std::optional<std::uint64_t> size(std::string_view key) override {
    Resolved r = resolve(key);
    if (r.kind == Resolved::Missing) return std::nullopt;
    return r.size();
  }

  // Every key of a snapshot is fixed for good: its version is the snapshot's id.
  ObjectVersion version(std::string_view key) override {
    const bool exists = resolve(key).kind != Resolved::Missing;
    return ObjectVersion{.etag = exists ? "snapshot-" + snapshot_id_ : std::string(),
                         .fresh_until = std::numeric_limits<std::int64_t>::max(),
                         .exists = exists};
  }

  std::vector<std::string> list(std::string_view prefix) override {
    std::string p(prefix);
    while (!p.empty() && p.back() == '/') p.pop_back();
    std::vector<std::string> out;
    for (const auto& [path, node] : snapshot_->nodes()) {
      const std::string base = path.empty() ? "" : path + "/";
      auto add = [&](const std::string& key) {
        if (p.empty() || key.starts_with(p + "/")) out.push_back(key);
      };
      add(base + "zarr.json");
      const bool overlaps = p.empty() || base.starts_with(p + "/") || (p + "/").starts_with(base);
      if (node.is_array && overlaps)
        for_each_chunk_key(node, [&](const std::string& k) { add(base + k); });
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  std::vector<std::string> list_dir(std::string_view prefix) override {
    std::string p(prefix);
    while (!p.empty() && p.back() == '/') p.pop_back();
    const std::string base = p.empty() ? "" : p + "/";
    std::set<std::string> names;
    auto add_child = [&](const std::string& key) {
      if (!key.starts_with(base)) return;
      const std::string rest = key.substr(base.size());
      names.insert(rest.substr(0, rest.find('/')));
    };
    for (const auto& [path, node] : snapshot_->nodes()) {
      add_child((path.empty() ? "" : path + "/") + "zarr.json");
      if (!path.empty()) add_child(path);
    }
    if (const NodeInfo* a = array_containing(p))  // chunk keys of the array at or above `prefix`
      for_each_chunk_key(*a, [&](const std::string& k) { add_child((a->path.empty() ? "" : a->path + "/") + k); });
    return {names.begin(), names.end()};
  }

  bool prefers_batches() const override { return repo_->root().store->prefers_batches(); }
  StoreStats stats() const override { return repo_->root().store->stats(); }

 private:
  struct Resolved {
    enum Kind { Missing, Bytes, Read } kind = Missing;
    ByteView bytes;                                // Bytes
    std::shared_ptr<const Manifest> manifest;      // keeps inline bytes alive
    std::shared_ptr<Store> store;                  // Read
    std::string key;                               // Read: the key in `store`
    std::string url;                               // Read, virtual: its URL (native: store->describe(key))
    std::uint64_t offset = 0, length = 0;          // Read
    bool is_virtual = false;
    bool immutable = false;                        // Read, native: chunks/<id> never changes
    ReadCondition condition;                       // Read, virtual: the recorded ETag / last-modified
    std::uint64_t size() const { return kind == Bytes ? bytes.size() : length; }
  };

  // The array node whose chunk keys `path` lies among (the array itself or below), or nullptr.
  const NodeInfo* array_containing(std::string_view path) const {
    const auto& nodes = snapshot_->nodes();
    std::string_view p = path;
    while (true) {
      if (auto it = nodes.find(p); it != nodes.end()) return it->second.is_array ? &it->second : nullptr;
      const auto slash = p.rfind('/');
      if (slash == std::string_view::npos) {
        if (p.empty()) return nullptr;
        p = "";
      } else {
        p = p.substr(0, slash);
      }
    }
  }

  void for_each_chunk_key(const NodeInfo& node, const std::function<void(const std::string&)>& f) {
    const ChunkKeys& keys = keys_.at(node.path);
    for (const auto& m : node.manifests)
      manifest(m.manifest)->for_each_coords(node.id, [&](const std::vector<std::uint32_t>& c) {
        if (m.covers(c)) f(keys.key(c));
      });
  }

  // The manifest (loaded once per repository: FileCache), held by this store once used.
  std::shared_ptr<const Manifest> manifest(const Id12& id) {
    {
      std::shared_lock lock(mutex_);
      if (auto it = manifests_.find(id); it != manifests_.end()) return it->second;
    }
    auto m = state_of(*repo_).files->manifest(id, snapshot_->manifest_size(id));
    std::unique_lock lock(mutex_);
    return manifests_.emplace(id, std::move(m)).first->second;
  }

  Resolved resolve(std::string_view key) {
    Resolved r;
    const auto& nodes = snapshot_->nodes();
    if (key == "zarr.json" || key.ends_with("/zarr.json")) {
      const std::string_view path = key.substr(0, key.size() - std::min<std::size_t>(key.size(), 10));
      if (auto it = nodes.find(path); it != nodes.end()) {
        r.kind = Resolved::Bytes;
        r.bytes = ByteView(reinterpret_cast<const std::byte*>(it->second.zarr_json.data()), it->second.zarr_json.size());
        return r;
      }
    }
    const NodeInfo* array = array_containing(key);
    if (!array || array->path == key) return r;
    const std::string_view rest = key.substr(array->path.empty() ? 0 : array->path.size() + 1);
    const auto coords = keys_.at(array->path).parse(rest);
    if (!coords) return r;
    for (const auto& m : array->manifests) {
      if (!m.covers(*coords)) continue;
      auto man = manifest(m.manifest);
      auto loc = man->find(array->id, *coords);
      if (!loc) return r;
      // Icechunk 2.2 refuses a zero-length chunk as corruption: no Zarr chunk encodes to no
      // bytes, and reading it as absent would give fill values for lost data.
      if (loc->kind == ChunkLocation::Kind::Inline ? loc->inline_bytes.empty() : loc->length == 0)
        throw MetadataError("chunk '" + std::string(key) + "' of Icechunk repository " + url() +
                            ": its manifest reference has length 0 (a zero-length chunk is corruption)");
      switch (loc->kind) {
        case ChunkLocation::Kind::Inline:
          r.kind = Resolved::Bytes;
          r.bytes = loc->inline_bytes;
          r.manifest = std::move(man);
          return r;
        case ChunkLocation::Kind::Native: {
          const Location& root = repo_->root();
          r.kind = Resolved::Read;
          r.store = root.store;
          r.key = key_in(root, "chunks/" + loc->chunk_id);
          r.immutable = true;
          break;
        }
        case ChunkLocation::Kind::Virtual: {
          auto target = virtual_.open(loc->url, "chunk '" + std::string(key) + "' of Icechunk repository " + url());
          r.kind = Resolved::Read;
          r.store = std::move(target.store);
          r.key = std::move(target.key);
          r.url = std::move(loc->url);
          r.is_virtual = true;
          r.condition = {loc->etag, loc->last_modified_s};
          break;
        }
      }
      r.offset = loc->offset;
      r.length = loc->length;
      return r;
    }
    return r;
  }

  // A referenced chunk must be there in full: a missing object or a short read is an error,
  // never a fill value.
  // What to ask the chunk's store for. A whole native chunk starting its object is asked for as
  // the whole object: Icechunk writes one object per native chunk, and a plain GET is cheaper
  // for the server than a range (over HTTP: no 206). trim() then keeps the chunk's bytes should
  // the object hold more (chunks packed into one object, which the format allows).
  // The request reading bytes [off, off + len) of resolved chunk `r`: a conditional read by
  // its recorded version, or its range; a virtual chunk's redirects checked against the
  // authorised containers.
  ByteRequest read_request(const Resolved& r, std::string_view key, std::uint64_t off, std::uint64_t len) {
    ByteRequest out{r.key, r.condition.empty() ? read_range(r, off, len) : ByteRange::range(r.offset + off, len),
                    r.condition, r.immutable};
    // A native chunk asked for as its whole object: the object may hold its recorded length.
    if (out.range.kind == ByteRange::Kind::Full) out.max_bytes = len;
    if (r.is_virtual)
      out.check_redirect = [this, what = "chunk '" + std::string(key) + "' of Icechunk repository " + url()](
                               const std::string& target) { virtual_.check_redirect(target, what); };
    return out;
  }

  // The reader's bound (ByteRequest::max_bytes) against the chunk's recorded length, before
  // any read: the manifest says how many bytes the read returns.
  void check_bound(std::string_view key, std::uint64_t len, std::uint64_t max_bytes) const {
    if (max_bytes != 0 && len > max_bytes)
      throw StoreError("chunk '" + std::string(key) + "' of Icechunk repository " + url() + ": its manifest records " +
                       std::to_string(len) + " bytes, more than the " + std::to_string(max_bytes) +
                       " bytes the chunk may hold by its array metadata");
  }

  static ByteRange read_range(const Resolved& r, std::uint64_t off, std::uint64_t len) {
    if (!r.is_virtual && r.offset == 0 && off == 0 && len == r.length && len > 0) return ByteRange::full();
    return ByteRange::range(r.offset + off, len);
  }
  static void trim(Buffer& b, std::uint64_t want) {
    if (b.size() > want) b.resize(want);
  }
  static void trim(std::optional<Buffer>& b, std::uint64_t want) {
    if (b) trim(*b, want);
  }

  void check_read(const Resolved& r, std::string_view key, const std::optional<Buffer>& got, std::uint64_t want) const {
    check_read(r, key, got ? std::optional<std::uint64_t>(got->size()) : std::nullopt, want);
  }
  void check_read(const Resolved& r, std::string_view key, std::optional<std::uint64_t> got, std::uint64_t want) const {
    if (got && *got == want) return;
    const std::string kind = r.is_virtual ? "virtual" : "native";
    const std::string object = r.is_virtual ? r.url : r.store->describe(r.key);
    if (!got)
      throw StoreError("chunk '" + std::string(key) + "' of Icechunk repository " + url() + ": its " + kind +
                       " chunk object " + object + " does not exist");
    throw StoreError("chunk '" + std::string(key) + "' of Icechunk repository " + url() + ": the reference (offset " +
                     std::to_string(r.offset) + ", length " + std::to_string(r.length) + ") reaches past the end of " +
                     object + " (read " + std::to_string(*got) + " of " + std::to_string(want) + " bytes)");
  }

  std::shared_ptr<const Repository> repo_;
  std::string snapshot_id_;
  std::shared_ptr<const Snapshot> snapshot_;
  std::map<std::string, ChunkKeys, std::less<>> keys_;
  VirtualContainers virtual_;
  std::shared_mutex mutex_;
  std::map<Id12, std::shared_ptr<const Manifest>> manifests_;
};

}  // namespace

std::shared_ptr<Store> make_icechunk_store(std::shared_ptr<const Repository> repository, const IcechunkOptions& options) {
  if (!repository) throw UsageError("make_icechunk_store: no repository");
  // The repository's own availability is respected: offline (being migrated, or taken down by
  // its owner) refuses reads; read-only reads.
  if (const auto status = repository->status(); status.availability != "online" && status.availability != "read_only")
    throw StoreError("Icechunk repository " + repository->root().store->describe(repository->root().path) + " is " +
                     status.availability + (status.reason.empty() ? std::string() : " (" + status.reason + ")") +
                     ": it cannot be read now");
  return std::make_shared<IcechunkStore>(std::move(repository), options);
}

bool is_repository(const Location& location) { return repository_layout(location) != 0; }

std::optional<Location> open_location_if_repository(const Location& location, const IcechunkOptions& options) {
  if (!location.store || !is_repository(location)) return std::nullopt;
  return Location{make_icechunk_store(Repository::open(location), options), ""};
}

}  // namespace lazycube::icechunk
