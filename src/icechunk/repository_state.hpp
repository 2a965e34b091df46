// What lazycube reads of a repository's refs: branches, tags, deleted tags and (spec 2) the
// snapshot list with parent links, from the `repo` file (spec 2) or refs/*/ref.json (spec 1).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "lazycube/icechunk/repository.hpp"
#include "file_cache.hpp"
#include "repo_config.hpp"

namespace lazycube::icechunk {

class RepositoryState {
 public:
  struct Entry {
    std::string parent;  // "" for the first snapshot
    std::uint64_t written_at_us = 0;
    std::string message;
  };

  int spec_version = 0;
  std::map<std::string, std::string> branches;  // name -> snapshot id (spec 1: read on demand)
  std::map<std::string, std::string> tags;
  std::set<std::string> deleted_tags;
  // False for spec 1 on a store that cannot list refs/ (HTTP): branches and tags are then read
  // by name only, and the maps above hold none.
  bool refs_listed = true;
  // Spec 2: every snapshot by id. Spec 1 keeps the links in the snapshot files.
  std::map<std::string, Entry> snapshots;
  bool has_snapshot_list = false;
  // Spec 2: the status, the feature flags set, and from the ops log (as far as the repo file
  // holds it) the amended commits (new snapshot -> the one it replaced) and detached snapshots.
  RepositoryStatus status;
  std::vector<std::uint16_t> flags_on, flags_off;
  std::map<std::string, std::string> amended;
  std::set<std::string> detached;
  // The virtual chunk containers the repository's configuration declares.
  std::vector<DeclaredContainer> containers;
  // Snapshot and manifest files, shared by every store of the repository.
  std::unique_ptr<FileCache> files;
};

// The repository's internal state (its parsed refs and configuration, the file caches).
RepositoryState& state_of(const Repository& repository);

// 2: a spec 2 repository (a `repo` file starting with the Icechunk magic) at `root`; 1: spec 1 (refs/branch.main/ref.json, the
// branch every repository has); 0: none.
int repository_layout(const Location& root);

// Reads the refs of the repository at `root`; NotFound when it holds none.
std::unique_ptr<RepositoryState> read_repository_state(const Location& root);

// `key` under the location's path.
std::string key_in(const Location& root, std::string_view key);

}  // namespace lazycube::icechunk
