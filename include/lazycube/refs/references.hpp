// Kerchunk reference sets as stores: Zarr keys served as inline bytes or byte ranges of target
// files (docs/formats.md, "kerchunk references"). lazycube::open reads them through the format
// registry (src/refs/kerchunk_format.cpp); this is their store, for callers that want the bytes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "lazycube/store/store.hpp"

namespace lazycube::refs {

// The reference set `url` names: reference://PATH_OR_URL, or a PATH_OR_URL of a JSON file
// holding one. Storage option allowed_prefixes widens the targets it may read; the others go
// to the stores of the reference file and the targets. NotFound when there is no such file or
// it is not a reference set; StoreError for kerchunk's parquet layout (no reader in this build).
Location open_references(std::string_view url, const StoreOptions& options = {});

// The JSON text of `url` (a local file or a remote object), nullopt when it does not exist.
std::optional<std::string> read_json_object(std::string_view url, const StoreOptions& options);

}  // namespace lazycube::refs
