// URL → the path GDAL opens (local path, /vsicurl/, /vsis3/, /vsigs/, /vsiaz/): the store
// layer's mapping (lazycube/store/vsi_location.hpp), with its options set for that path only
// (VSISetPathSpecificOption).
#pragma once

#include <string_view>

#include "lazycube/store/store.hpp"
#include "lazycube/store/vsi_location.hpp"

namespace lazycube::netcdf {

using GdalLocation = VsiLocation;

// Maps `url` and checks `options` as our own store for that scheme would (unknown option →
// StoreError naming it); credentials are found the way our stores find them. The options
// replace any set earlier for the same path, and what GDAL cached about the path is dropped.
GdalLocation gdal_location(std::string_view url, const StoreOptions& options);

}  // namespace lazycube::netcdf
