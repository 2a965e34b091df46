#include <algorithm>

#include "lazycube/store/byte_range.hpp"
#include "lazycube/store/store.hpp"

namespace lazycube {

std::shared_ptr<MemoryStore> make_memory_store() { return std::make_shared<MemoryStore>(); }

std::optional<Buffer> MemoryStore::get(std::string_view key, ByteRange range) {
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  auto r = detail::resolve_range(range, it->second.size(), describe(key));
  return Buffer::copy_of(it->second.view().subspan(r.offset, r.length));
}

std::optional<std::uint64_t> MemoryStore::size(std::string_view key) {
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  return it->second.size();
}

std::vector<std::string> MemoryStore::list(std::string_view prefix) {
  std::string p(prefix);
  if (!p.empty() && p.back() != '/') p += '/';
  std::vector<std::string> keys;
  for (auto it = objects_.lower_bound(p); it != objects_.end() && it->first.starts_with(p); ++it)
    keys.push_back(it->first);
  return keys;
}

std::vector<std::string> MemoryStore::list_dir(std::string_view prefix) {
  std::string p(prefix);
  if (!p.empty() && p.back() != '/') p += '/';
  std::vector<std::string> names;
  for (auto it = objects_.lower_bound(p); it != objects_.end() && it->first.starts_with(p); ++it) {
    std::string rest = it->first.substr(p.size());
    std::string name = rest.substr(0, rest.find('/'));
    if (names.empty() || names.back() != name) names.push_back(name);
  }
  return names;
}

void MemoryStore::set(const std::string& key, ByteView value) {
  objects_[key] = Buffer::copy_of(value);
}

void MemoryStore::set(const std::string& key, std::string_view value) {
  set(key, ByteView(reinterpret_cast<const std::byte*>(value.data()), value.size()));
}

void MemoryStore::erase(const std::string& key) {
  auto it = objects_.find(key);
  if (it != objects_.end()) objects_.erase(it);
}

}  // namespace lazycube
