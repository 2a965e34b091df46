// Pieces the backends' GDAL mappings (Backend::vsi) share; the public entry is
// lazycube/store/vsi_location.hpp.
#pragma once

#include <string>
#include <utility>

#include "url_scheme.hpp"

namespace lazycube {

// "http://host:port/x/" → ("host:port/x", false); https (or no scheme) → (..., true): GDAL's
// endpoint options take a host and a separate HTTPS switch.
std::pair<std::string, bool> vsi_endpoint(const std::string& endpoint);

// "BUCKET/KEY" of s3://BUCKET/KEY (gs:// likewise); StoreError when either is missing (GDAL
// opens files, not buckets).
std::string vsi_bucket_and_key(const ParsedUrl& url);

}  // namespace lazycube
