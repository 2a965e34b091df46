// Kerchunk references for NetCDF4/HDF5 files: lists each variable's chunk offsets and sizes
// through the HDF5 library and writes a version-1 reference set (.zgroup, .zattrs, per
// variable .zarray/.zattrs with _ARRAY_DIMENSIONS, and [target, offset, length] chunk refs).
#pragma once

#include <string>
#include <vector>

namespace lazycube::refs {

struct Hdf5RefsResult {
  std::string json;                   // the reference set (kerchunk version 1)
  std::vector<std::string> warnings;  // variables left out, with the reason
};

// References for the NetCDF4/HDF5 file at `path`; every chunk ref names `target` (the path or
// URL readers will use for the file). Compact datasets are inlined as base64. MetadataError for
// a file that is not HDF5 (classic netCDF: "not supported by refs yet") or for a variable whose
// filters have no Zarr codec (naming the variable and the filter).
Hdf5RefsResult make_hdf5_references(const std::string& path, const std::string& target);

}  // namespace lazycube::refs
