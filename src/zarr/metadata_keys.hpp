// Which keys of a Zarr store are metadata documents (v2 .zarray, .zattrs, .zgroup, .zmetadata;
// v3 zarr.json) rather than chunks: the writer puts them last, chunk_store reads them from the
// metadata store.
#pragma once

#include <string_view>

namespace lazycube::zarr {

inline bool is_metadata_key(std::string_view key) {
  const auto slash = key.rfind('/');
  const std::string_view leaf = slash == std::string_view::npos ? key : key.substr(slash + 1);
  return leaf == "zarr.json" || leaf == ".zarray" || leaf == ".zgroup" || leaf == ".zattrs" || leaf == ".zmetadata";
}

}  // namespace lazycube::zarr
