// URL → the path GDAL opens (local path, /vsicurl/, /vsis3/, /vsigs/) plus our storage options
// mapped to GDAL options set for that path only (VSISetPathSpecificOption).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lazycube/store/store.hpp"

namespace lazycube::netcdf {

struct GdalLocation {
  std::string url;   // as given (messages, cache ids)
  std::string path;  // what GDAL opens
  bool remote = false;
  // GDAL options for `path` (already applied by gdal_location()).
  std::vector<std::pair<std::string, std::string>> options;
};

// Maps `url` and checks `options` as our own store for that scheme would (unknown option →
// StoreError naming it); credentials are found the way our S3/GCS stores find them. The
// options replace any set earlier for the same path.
GdalLocation gdal_location(std::string_view url, const StoreOptions& options);

}  // namespace lazycube::netcdf
