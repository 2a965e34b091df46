// Zarr's chunk_store (zarr-python's and xarray's zarr engine's `chunk_store=`): the metadata
// documents (.zarray, .zattrs, .zgroup, .zmetadata, zarr.json) from one store, every other key
// (chunks, shards) from another, under the same keys. Read-only.
#pragma once

#include <memory>

#include "lazycube/store/store.hpp"

namespace lazycube::zarr {

// The store that reads metadata from `metadata` and chunks from `chunks`.
std::shared_ptr<Store> split_chunk_store(std::shared_ptr<Store> metadata, std::shared_ptr<Store> chunks);

}  // namespace lazycube::zarr
