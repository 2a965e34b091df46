#include "gdal_location.hpp"

#include <cpl_vsi.h>

namespace lazycube::netcdf {

GdalLocation gdal_location(std::string_view url, const StoreOptions& options) {
  GdalLocation loc = vsi_location(url, options);
  if (!loc.remote) return loc;
  // Existing GDAL readers of other datasets keep working: only this path's options change.
  // What GDAL cached about the path (existence, size, blocks) was fetched with the previous
  // options: drop it, so that these credentials are the ones checked.
  VSIClearPathSpecificOptions(loc.options_path.c_str());
  for (const auto& [k, v] : loc.options) VSISetPathSpecificOption(loc.options_path.c_str(), k.c_str(), v.c_str());
  VSICurlPartialClearCache(loc.path.c_str());
  return loc;
}

}  // namespace lazycube::netcdf
