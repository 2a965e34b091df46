// Writing small in-memory arrays as a NetCDF-4 file through GDAL's multidimensional API (what
// `lazycube stats --netcdf` writes). Not a general NetCDF writer: every array is written whole.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>  // NetcdfArray holds attrs by value

#include "lazycube/array.hpp"
#include "lazycube/dtype.hpp"

namespace lazycube::netcdf {

struct NetcdfArray {
  std::string name;
  std::vector<std::string> dims;  // empty: a scalar
  Shape shape;
  DataType dtype;                 // float32/64, int16..64, uint8..64
  std::vector<std::byte> data;    // C order, native byte order
  nlohmann::json attrs = nlohmann::json::object();  // strings and numbers
};

// Creates (replaces) the file at `path`: dims shared by name (sizes must agree), the arrays and
// their attributes, and the global `attrs`. UsageError for an unsupported dtype or disagreeing
// dim sizes; lazycube::Error naming GDAL's message when GDAL fails.
void write_netcdf(const std::string& path, const std::vector<NetcdfArray>& arrays, const nlohmann::json& attrs);

}  // namespace lazycube::netcdf
