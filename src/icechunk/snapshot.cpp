#include "snapshot.hpp"

#include <cstring>

#include "lazycube/error.hpp"
#include "snapshot_generated.h"

namespace lazycube::icechunk {

namespace {

template <class Id>
Id copy_id(const std::uint8_t* bytes) {
  Id id{};
  std::memcpy(id.data(), bytes, id.size());
  return id;
}

}  // namespace

bool ManifestPointer::covers(const std::vector<std::uint32_t>& coords) const {
  if (coords.size() != extents.size()) return false;
  for (std::size_t d = 0; d < coords.size(); ++d)
    if (coords[d] < extents[d].first || coords[d] >= extents[d].second) return false;
  return true;
}

Snapshot::Snapshot(MetadataFile file) : file_(std::move(file)) {
  const auto* s = fb::GetSnapshotFile(file_.payload.data());
  id_ = encode_id(s->id()->bytes()->data(), 12);
  if (s->parent()) parent_ = encode_id(s->parent()->bytes()->data(), 12);
  message_ = s->message()->str();
  written_at_us_ = s->written_at_us();
  for (const auto* m : *s->manifests_v1()) manifest_sizes_[copy_id<Id12>(m->id().bytes()->data())] = m->size();
  if (s->manifests_v2())
    for (const auto* m : *s->manifests_v2())
      if (m->id()) manifest_sizes_[copy_id<Id12>(m->id()->bytes()->data())] = m->size();
  for (const auto* n : *s->nodes()) {
    const std::string_view path = n->path()->string_view();
    if (path.empty() || path.front() != '/')
      throw MetadataError(file_.name + ": node path '" + std::string(path) + "' does not start with '/'");
    NodeInfo info;
    info.path = std::string(path.substr(1));
    info.id = copy_id<Id8>(n->id()->bytes()->data());
    info.zarr_json = std::string_view(reinterpret_cast<const char*>(n->zarr_json()->data()), n->zarr_json()->size());
    if (const auto* a = n->kind_as_Array()) {
      info.is_array = true;
      for (const auto* m : *a->manifests()) {
        ManifestPointer p;
        p.manifest = copy_id<Id12>(m->manifest()->bytes()->data());
        for (const auto* e : *m->extents()) p.extents.emplace_back(e->begin(), e->end());
        info.manifests.push_back(std::move(p));
      }
    } else if (!n->kind_as_Group()) {
      throw MetadataError(file_.name + ": node '" + std::string(path) + "' is neither an array nor a group");
    }
    std::string key = info.path;
    if (!nodes_.emplace(std::move(key), std::move(info)).second)
      throw MetadataError(file_.name + ": node '" + std::string(path) + "' appears twice");
  }
}

std::shared_ptr<const Snapshot> read_snapshot(Store& store, const std::string& key, const Id12& id) {
  return std::make_shared<const Snapshot>(read_file(store, key, FileType::Snapshot, id));
}

}  // namespace lazycube::icechunk
