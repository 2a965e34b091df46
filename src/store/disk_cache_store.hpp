// The persistent chunk cache (storage option cache_dir, env LAZYCUBE_CACHE_DIR): a Store that
// wraps a remote store and keeps the bytes it reads in files of a local directory that many
// processes may share. Policy and file format: docs/disk_cache.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "lazycube/store/store.hpp"
#include "storage_options.hpp"

namespace lazycube {

struct DiskCacheOptions {
  std::string dir;                                  // "" : no cache
  std::uint64_t max_bytes = 10ULL * 1024 * 1024 * 1024;  // byte budget of the directory
};

// The cache options of parsed storage options: cache_dir, else the environment variable
// LAZYCUBE_CACHE_DIR (cache_dir="" turns it off); cache_size the budget. dir "": no cache.
DiskCacheOptions disk_cache_options(const StorageOptions& options);

// `inner` read through a cache in `options.dir` (created when missing). StoreError naming the
// directory when it cannot be created or written; `inner` itself, with a warning, when a full
// disk (ENOSPC, EDQUOT) leaves no room to create it.
std::shared_ptr<Store> make_disk_cache_store(std::shared_ptr<Store> inner, const DiskCacheOptions& options);

}  // namespace lazycube
