// The GDAL engine of lazycube::open: NetCDF, HDF5 and GRIB files as named arrays. The dataset
// layer turns them into Variables with the same CF rules as Zarr (src/dataset/open.cpp); this
// layer knows nothing of datasets.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lazycube/array.hpp"
#include "lazycube/store/store.hpp"

namespace lazycube::netcdf {

// Whether auto-detection picks the gdal engine for `url`: a NetCDF/HDF5/GRIB file suffix
// (.nc .nc4 .cdf .h5 .hdf5 .he5 .grib .grib2 .grb .grb2, any case), or a local regular file
// starting with a NetCDF classic, HDF5 or GRIB signature.
bool looks_like_gdal_file(std::string_view url);

struct GdalArrayEntry {
  std::string name;  // "var" in the root group, "group/var" in subgroups
  ArrayPtr array;
};

// A file opened through GDAL's multidimensional API: every array of the root group and its
// subgroups, in GDAL's order, and the root group's attributes (plus
// "lazycube:skipped_variables" listing arrays of types lazycube cannot read).
struct GdalFile {
  std::vector<GdalArrayEntry> arrays;
  nlohmann::json attrs;
};

// Opens the file at `url` (local path, file://, http(s)://, s3://, gs://) with our storage
// options mapped to GDAL's (an unknown option is a StoreError naming it).
GdalFile open_gdal(std::string_view url, const StoreOptions& storage_options);

}  // namespace lazycube::netcdf
