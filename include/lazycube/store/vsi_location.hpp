// How GDAL's virtual file systems reach a URL lazycube opens (the gdal engine's NetCDF, HDF5 and
// GRIB reads): the store layer's backends map each URL and its storage options to GDAL's path
// and configuration options, so that both engines read the same URL with the same credentials.
// Plain strings: no GDAL here (src/netcdf applies them).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lazycube/store/store.hpp"

namespace lazycube {

struct VsiLocation {
  std::string url;   // as given
  std::string path;  // a local path, or "/vsicurl/URL", "/vsis3/BUCKET/KEY", "/vsigs/...", "/vsiaz/..."
  // The path prefix GDAL looks this URL's options up under (GDAL 3.6 reads /vsiaz/ options
  // per container: "/vsiaz/CONTAINER"); `path` itself for the other file systems.
  std::string options_path;
  // GDAL configuration options for `options_path` (credentials, endpoint, HTTP settings);
  // they may hold secrets: never print them.
  std::vector<std::pair<std::string, std::string>> options;
  bool remote = false;
  // Why GDAL may be refused where our own store is not (credentials GDAL cannot send), for the
  // message of a failed open; "" when nothing is known.
  std::string caveat;
};

// Maps `url` (a local path, file://, or any registered remote URL) with `options` (the same
// storage options the native engine takes; local paths ignore them). StoreError naming an
// unsupported scheme, an option the backend does not take, or a URL GDAL cannot read (a bucket
// without an object key); NotFound for an empty path.
VsiLocation vsi_location(std::string_view url, const StoreOptions& options = {});

// The local path of a plain path or file:// URL; nullopt for every other URL.
std::optional<std::string> local_path_of(std::string_view url);

}  // namespace lazycube
