// Snapshot and manifest files of one repository, fetched once and shared by every store and
// reader of that Repository (they are immutable: each file is named by its id). A load of one
// file does not block loads of others; concurrent askers of the same file wait for its one load.
// Files stay cached while in use, and the most recently loaded ones up to a byte budget after.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "lazycube/store/store.hpp"
#include "manifest.hpp"
#include "object_id.hpp"
#include "snapshot.hpp"

namespace lazycube::icechunk {

class FileCache {
 public:
  // `budget_bytes`: decompressed bytes kept after their last user lets go.
  explicit FileCache(Location root, std::uint64_t budget_bytes = std::uint64_t{1} << 30);

  // snapshots/<id> and manifests/<id>: NotFound naming the file when missing, MetadataError /
  // CodecError when malformed (a failed load is retried by the next caller).
  std::shared_ptr<const Snapshot> snapshot(const std::string& id);
  // A manifest is fetched bounded by `size_bytes`, the size its snapshot records (0: none).
  std::shared_ptr<const Manifest> manifest(const Id12& id, std::uint64_t size_bytes = 0);

 private:
  struct Slot {
    std::mutex loading;
    std::weak_ptr<const void> file;
  };
  template <class T, class Load>
  std::shared_ptr<const T> get(const std::string& key, Load&& load);
  void keep(std::shared_ptr<const void> file, std::uint64_t bytes);

  Location root_;
  std::uint64_t budget_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Slot>> slots_;  // by file key
  std::list<std::pair<std::shared_ptr<const void>, std::uint64_t>> kept_;  // newest first
  std::uint64_t kept_bytes_ = 0;
};

}  // namespace lazycube::icechunk
