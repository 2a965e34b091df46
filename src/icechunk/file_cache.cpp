#include "file_cache.hpp"

#include "lazycube/error.hpp"
#include "repository_state.hpp"

namespace lazycube::icechunk {

FileCache::FileCache(Location root, std::uint64_t budget_bytes) : root_(std::move(root)), budget_(budget_bytes) {}

template <class T, class Load>
std::shared_ptr<const T> FileCache::get(const std::string& key, Load&& load) {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard lock(mutex_);
    auto& s = slots_[key];
    if (!s) s = std::make_shared<Slot>();
    slot = s;
  }
  std::lock_guard loading(slot->loading);
  if (auto file = slot->file.lock()) return std::static_pointer_cast<const T>(file);
  std::shared_ptr<const T> file = load(key);
  slot->file = file;
  keep(file, file->payload_bytes());
  return file;
}

void FileCache::keep(std::shared_ptr<const void> file, std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  kept_.emplace_front(std::move(file), bytes);
  kept_bytes_ += bytes;
  while (kept_bytes_ > budget_ && kept_.size() > 1) {
    kept_bytes_ -= kept_.back().second;
    kept_.pop_back();
  }
}

// Each file is checked against the id it is fetched as (read_file): a snapshot or manifest renamed
// over another's name is a MetadataError, never data.
std::shared_ptr<const Snapshot> FileCache::snapshot(const std::string& id) {
  const std::string key = key_in(root_, "snapshots/" + id);
  const auto bytes = decode_id12(id);
  if (!bytes) throw MetadataError(root_.store->describe(key) + ": '" + id + "' is not an Icechunk snapshot id");
  return get<Snapshot>(key, [&](const std::string& k) { return read_snapshot(*root_.store, k, *bytes); });
}

std::shared_ptr<const Manifest> FileCache::manifest(const Id12& id, std::uint64_t size_bytes) {
  return get<Manifest>(key_in(root_, "manifests/" + encode_id(id)), [&](const std::string& key) {
    return std::make_shared<const Manifest>(read_file(*root_.store, key, FileType::Manifest, id, size_bytes));
  });
}

}  // namespace lazycube::icechunk
