// A parsed snapshot file: its nodes by path (zarr.json bytes, array manifests with extents).
// The FlatBuffer stays in memory; nodes point into it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "file_format.hpp"
#include "object_id.hpp"

namespace lazycube::icechunk {

struct ManifestPointer {
  Id12 manifest{};
  std::vector<std::pair<std::uint32_t, std::uint32_t>> extents;  // [begin, end) per dimension
  bool covers(const std::vector<std::uint32_t>& coords) const;
};

struct NodeInfo {
  std::string path;         // "" for the root, "a/b" otherwise (store keys: no leading '/')
  Id8 id{};
  bool is_array = false;
  std::string_view zarr_json;  // into the snapshot's payload
  std::vector<ManifestPointer> manifests;
};

class Snapshot {
 public:
  Snapshot(MetadataFile file);
  const std::string& name() const { return file_.name; }
  std::uint64_t payload_bytes() const { return file_.payload.size(); }
  int spec_version() const { return file_.spec_version; }
  std::string id() const { return id_; }
  std::string parent_id() const { return parent_; }  // spec 1 files only; "" otherwise
  std::uint64_t written_at_us() const { return written_at_us_; }
  const std::string& message() const { return message_; }
  // Nodes by store path ("" = root).
  const std::map<std::string, NodeInfo, std::less<>>& nodes() const { return nodes_; }
  // The size in bytes the snapshot records for manifest file `id` (ManifestFileInfo
  // size_bytes, the stored file's size); 0 when it records none. Bounds the manifest's fetch.
  std::uint64_t manifest_size(const Id12& id) const {
    auto it = manifest_sizes_.find(id);
    return it == manifest_sizes_.end() ? 0 : it->second;
  }

 private:
  MetadataFile file_;
  std::string id_, parent_, message_;
  std::uint64_t written_at_us_ = 0;
  std::map<std::string, NodeInfo, std::less<>> nodes_;
  std::map<Id12, std::uint64_t> manifest_sizes_;
};

// snapshots/<id> of the repository at `root` (`key`), which must carry `id` (read_file).
std::shared_ptr<const Snapshot> read_snapshot(Store& store, const std::string& key, const Id12& id);

}  // namespace lazycube::icechunk
