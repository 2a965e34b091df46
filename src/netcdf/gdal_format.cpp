// The GDAL format in the format registry: NetCDF, HDF5 and GRIB files through GDAL's
// multidimensional API, recognised from the URL alone (a suffix, or a local file's signature,
// format_sniff.cpp). GDAL reads through its own network layer: our store layers (the persistent
// cache) do not apply, and a cache_dir given for it is a UsageError (vsi_location.cpp).
#include "lazycube/format/registry.hpp"
#include "lazycube/netcdf/gdal_open.hpp"

namespace lazycube::netcdf {

namespace {

format::Opened open_file(std::string_view url, const format::Request& request) {
  GdalFile file = open_gdal(url, request.storage_options);
  format::Contents out;
  out.arrays.reserve(file.arrays.size());
  for (auto& entry : file.arrays) out.arrays.emplace_back(std::move(entry.name), std::move(entry.array));
  out.attrs = std::move(file.attrs);
  return {std::move(out), std::nullopt};
}

}  // namespace

}  // namespace lazycube::netcdf

LAZYCUBE_REGISTER_FORMAT(gdal) {
  using namespace lazycube;
  registry.add({.engine = "gdal",
                .describe = "NetCDF/HDF5/GRIB files (GDAL)",
                .order = 200,
                .claims_url = &netcdf::looks_like_gdal_file,
                .open_url = &netcdf::open_file});
}
