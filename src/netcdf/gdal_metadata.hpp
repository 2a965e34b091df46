// GDAL multidimensional metadata → lazycube's: element types, attributes as JSON, read units.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <gdal_priv.h>
#include <nlohmann/json.hpp>

#include "lazycube/dtype.hpp"
#include "lazycube/ndarray.hpp"

namespace lazycube::netcdf {

// The lazycube dtype of a GDAL element type; nullopt for compound types and complex integers
// (not representable).
std::optional<DataType> dtype_of(const GDALExtendedDataType& type);

// Attributes as JSON: numbers as numbers (integers as integers; NaN/±inf as the strings
// "NaN"/"Infinity"/"-Infinity", as zarr-python writes them), strings, lists for multi-valued
// attributes. Compound-typed attributes are left out. `show_all` asks the netCDF driver for
// the attributes it otherwise hides (_FillValue, scale_factor, add_offset, units, ...).
nlohmann::json attributes_json(const std::vector<std::shared_ptr<GDALAttribute>>& attributes);

// The read unit: the file's block (HDF5/netCDF-4 chunk) where GDAL knows it; otherwise 1
// along the outermost dim and the full extent of the inner dims, shrunk (outer dims first)
// to at most `target_bytes`.
Shape read_unit_shape(const Shape& shape, const std::vector<GUInt64>& block, std::size_t itemsize,
                      std::uint64_t target_bytes = std::uint64_t{16} << 20);

}  // namespace lazycube::netcdf
