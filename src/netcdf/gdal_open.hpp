// The GDAL engine of lazycube::open: NetCDF, HDF5 and GRIB files as Datasets.
#pragma once

#include <string_view>

#include "lazycube/dataset/dataset.hpp"

namespace lazycube::netcdf {

// Whether auto-detection picks the gdal engine for `url`: a NetCDF/HDF5/GRIB file suffix
// (.nc .nc4 .cdf .h5 .hdf5 .he5 .grib .grib2 .grb .grb2, any case), or a local regular file
// starting with a NetCDF classic, HDF5 or GRIB signature.
bool looks_like_gdal_file(std::string_view url);

// Whether `url` is certainly a NetCDF or HDF5 file (one of those suffixes, or a local file with
// their signature), so not a GRIB file whose driver prints on stdout (stdout_capture.hpp).
bool known_netcdf_or_hdf5(std::string_view url);

// Opens the file at `url` (local path, file://, http(s)://, s3://, gs://) through GDAL's
// multidimensional API: every array of the root group and its subgroups ("group/var") becomes
// a variable, decoded with the same CF rules as Zarr.
Dataset open_gdal(std::string_view url, const OpenOptions& options);

}  // namespace lazycube::netcdf
