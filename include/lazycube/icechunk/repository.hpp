// Icechunk repositories (spec versions 1 and 2): refs, history, and a read-only Store that
// presents one snapshot as a Zarr v3 hierarchy (docs/icechunk.md).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "lazycube/store/store.hpp"

namespace lazycube::icechunk {

// Which version of the repository to read: at most one of the three; none means branch "main".
struct VersionRef {
  std::string branch;
  std::string tag;
  std::string snapshot;  // 20-character Crockford base32 snapshot id
  // True when none of the three is given (branch "main").
  bool empty() const { return branch.empty() && tag.empty() && snapshot.empty(); }
  // "branch 'main'", "tag 'it works!'", "snapshot 'ID'" for messages.
  std::string describe() const;
};

// One commit of the history.
struct SnapshotInfo {
  std::string id;                 // Crockford base32
  std::uint64_t written_at_us = 0;  // microseconds since the Unix epoch (UTC)
  std::string message;
  // Spec 2, from the repository's ops log: the snapshot this commit replaced (`commit(...,
  // amend=True)`), "" when none; and whether it was written as an anonymous (detached) snapshot,
  // on no branch.
  std::string amends;
  bool detached = false;
};

// A spec 2 repository's availability ("online", "read_only" or "offline"), since when, and why.
// An offline repository refuses reads (StoreError naming the reason); a read-only one reads.
struct RepositoryStatus {
  std::string availability = "online";
  std::uint64_t since_us = 0;
  std::string reason;
};

struct IcechunkOptions {
  VersionRef version;
  // Virtual chunk containers the user authorises: URL prefix ("s3://bucket/", "https://host/dir/")
  // -> storage options for the store that reads from it (endpoint_url, region_name, key, secret,
  // anon, ...). A virtual chunk whose URL lies under none of them is refused.
  std::map<std::string, StoreOptions> virtual_chunk_containers;
  // True when nothing is chosen: branch main, no container authorised.
  bool empty() const { return version.empty() && virtual_chunk_containers.empty(); }
  // From the format options document (docs/formats.md): "branch", "tag", "snapshot" (strings)
  // and "virtual_chunk_containers" ({prefix: {option: value}}); UsageError naming a key of the
  // wrong type. Other keys are other formats'.
  static IcechunkOptions from_document(const nlohmann::json& document);
};

class RepositoryState;  // src/icechunk: parsed refs and the snapshot list

// A repository opened at its root (any Store: local directory, HTTP, S3, GCS).
class Repository {
 public:
  // Reads the refs (spec 2: the `repo` file; spec 1: refs/ and the snapshots' parent links).
  // NotFound when `root` holds no Icechunk repository; MetadataError/CodecError naming the file
  // when a metadata file is malformed.
  static std::shared_ptr<Repository> open(const Location& root);
  ~Repository();

  int spec_version() const;
  std::vector<std::string> branches() const;  // sorted
  std::vector<std::string> tags() const;      // sorted, deleted tags excluded
  // False when branches() and tags() could not be listed (spec 1 on a store that cannot list,
  // such as HTTP): refs are then found by name only.
  bool refs_listed() const;
  // The snapshot id `version` points to; NotFound "ref not found" naming an unknown or deleted
  // branch or tag, or a snapshot the repository does not hold.
  std::string resolve(const VersionRef& version) const;
  // The ancestry of `snapshot_id`, newest first (itself included).
  std::vector<SnapshotInfo> history(const std::string& snapshot_id) const;
  // Spec 2's status (spec 1: always online) and the feature flags the user set explicitly
  // (ids, sorted; flags in neither list are at their default).
  RepositoryStatus status() const;
  std::vector<std::uint16_t> enabled_feature_flags() const;
  std::vector<std::uint16_t> disabled_feature_flags() const;
  const Location& root() const { return root_; }

  explicit Repository(Location root, std::unique_ptr<RepositoryState> state);

 private:
  friend RepositoryState& state_of(const Repository& repository);  // src/icechunk: caches, config
  Location root_;
  std::unique_ptr<RepositoryState> state_;
};

// A read-only Store over one snapshot: "zarr.json" of each node from the snapshot, chunk keys
// (per the array's chunk_key_encoding) resolved through its manifests (inline bytes, native
// chunk files, virtual locations of authorised containers). A chunk without a reference is
// absent (the reader then uses the fill value); a virtual chunk that cannot be read is an error.
std::shared_ptr<Store> make_icechunk_store(std::shared_ptr<const Repository> repository,
                                           const IcechunkOptions& options = {});

// True when `location` holds an Icechunk repository (a `repo` file, or `refs/` and
// `config.yaml` of spec 1) at its path.
bool is_repository(const Location& location);

// `location` opened as an Icechunk store (make_icechunk_store with `options`: branch main by
// default) when it is a repository; nullopt otherwise (lazycube::open calls this).
std::optional<Location> open_location_if_repository(const Location& location, const IcechunkOptions& options = {});

}  // namespace lazycube::icechunk
