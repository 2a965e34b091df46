// What a file is, from its suffix or its first bytes (format_sniff.cpp); the engine choice
// itself, looks_like_gdal_file(), is in lazycube/netcdf/gdal_open.hpp.
#pragma once

#include <string_view>

namespace lazycube::netcdf {

// Whether `url` is certainly a NetCDF or HDF5 file (one of those suffixes, or a local file with
// their signature), so not a GRIB file whose driver prints on stdout (stdout_capture.hpp).
bool known_netcdf_or_hdf5(std::string_view url);

}  // namespace lazycube::netcdf
