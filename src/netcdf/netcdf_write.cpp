#include "lazycube/netcdf/netcdf_write.hpp"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include <gdal_priv.h>
#include <nlohmann/json.hpp>

#include "gdal_guard.hpp"
#include "lazycube/error.hpp"

namespace lazycube::netcdf {

namespace {

GDALDataType gdal_type_of(const DataType& t, const std::string& name) {
  switch (t.kind) {
    case DTypeKind::Float:  // (int8: GDAL 3.7)
      if (t.itemsize == 4) return GDT_Float32;
      if (t.itemsize == 8) return GDT_Float64;
      break;
    case DTypeKind::Int:
      if (t.itemsize == 2) return GDT_Int16;
      if (t.itemsize == 4) return GDT_Int32;
      if (t.itemsize == 8) return GDT_Int64;
      break;
    case DTypeKind::UInt:
      if (t.itemsize == 1) return GDT_Byte;
      if (t.itemsize == 2) return GDT_UInt16;
      if (t.itemsize == 4) return GDT_UInt32;
      if (t.itemsize == 8) return GDT_UInt64;
      break;
    default: break;
  }
  throw UsageError("NetCDF output: array '" + name + "' has dtype " + t.name() + ", which it does not write");
}

[[noreturn]] void gdal_failed(const GdalCallGuard& guard, const std::string& what) {
  const std::string why = guard.last_error();
  throw Error("NetCDF output: " + what + (why.empty() ? std::string() : ": " + why));
}

void write_attrs(GDALIHasAttribute& target, const nlohmann::json& attrs, const GdalCallGuard& guard) {
  for (const auto& [key, value] : attrs.items()) {
    std::shared_ptr<GDALAttribute> a;
    if (value.is_string()) {
      a = target.CreateAttribute(key, {}, GDALExtendedDataType::CreateString());
      if (a && a->Write(value.get_ref<const std::string&>().c_str())) continue;
    } else if (value.is_number_integer()) {
      a = target.CreateAttribute(key, {}, GDALExtendedDataType::Create(GDT_Int32));
      if (a && a->Write(value.get<int>())) continue;
    } else if (value.is_number()) {
      a = target.CreateAttribute(key, {}, GDALExtendedDataType::Create(GDT_Float64));
      if (a && a->Write(value.get<double>())) continue;
    } else {
      continue;  // lists and objects: not written
    }
    gdal_failed(guard, "attribute '" + key + "'");
  }
}

// HDF5 does not recover from a full disk: netCDF-C leaves the file half-closed and HDF5's exit
// handler then crashed the process closing it again. So a file system without room for the data
// and some headroom is refused before anything is written (a disk that fills during the write
// is still reported by write_netcdf, but may still crash at exit).
void check_room(const std::string& path, const std::vector<NetcdfArray>& arrays) {
  std::uint64_t need = 256 * 1024;  // the NetCDF-4/HDF5 structure, with a wide margin
  for (const auto& a : arrays) need += a.data.size() + 4096;
  std::string dir = std::filesystem::path(path).parent_path().string();
  struct statvfs st {};
  if (::statvfs(dir.empty() ? "." : dir.c_str(), &st) != 0) return;  // not a local path: GDAL says
  const std::uint64_t free = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
  if (free < need)
    throw StoreError("NetCDF output: cannot write '" + path + "': " + std::strerror(ENOSPC) + " (" +
                     std::to_string(free) + " bytes free, about " + std::to_string(need) + " needed)");
}

}  // namespace

void write_netcdf(const std::string& path, const std::vector<NetcdfArray>& arrays, const nlohmann::json& attrs) {
  check_room(path, arrays);
  ensure_gdal_registered();
  GdalCallGuard guard;
  GDALDriver* driver = GetGDALDriverManager()->GetDriverByName("netCDF");
  if (driver == nullptr) throw UsageError("NetCDF output: GDAL has no netCDF driver");
  const char* options[] = {"FORMAT=NC4", nullptr};
  std::unique_ptr<GDALDataset> ds(driver->CreateMultiDimensional(path.c_str(), nullptr, options));
  if (!ds) gdal_failed(guard, "cannot create '" + path + "'");
  auto root = ds->GetRootGroup();
  write_attrs(*root, attrs, guard);
  std::map<std::string, std::shared_ptr<GDALDimension>> dims;
  for (const auto& a : arrays) {
    std::vector<std::shared_ptr<GDALDimension>> adims;
    for (std::size_t d = 0; d < a.dims.size(); ++d) {
      auto it = dims.find(a.dims[d]);
      if (it == dims.end()) {
        auto dim = root->CreateDimension(a.dims[d], "", "", a.shape[d]);
        if (!dim) gdal_failed(guard, "dim '" + a.dims[d] + "'");
        it = dims.emplace(a.dims[d], dim).first;
      } else if (it->second->GetSize() != a.shape[d]) {
        throw UsageError("NetCDF output: dim '" + a.dims[d] + "' has sizes " + std::to_string(it->second->GetSize()) +
                         " and " + std::to_string(a.shape[d]));
      }
      adims.push_back(it->second);
    }
    const auto type = GDALExtendedDataType::Create(gdal_type_of(a.dtype, a.name));
    auto array = root->CreateMDArray(a.name, adims, type);
    if (!array) gdal_failed(guard, "array '" + a.name + "'");
    write_attrs(*array, a.attrs, guard);
    std::vector<GUInt64> start(a.dims.size(), 0);
    std::vector<size_t> count(a.shape.begin(), a.shape.end());
    if (shape_size(a.shape) * a.dtype.itemsize != a.data.size())
      throw UsageError("NetCDF output: array '" + a.name + "' holds " + std::to_string(a.data.size()) +
                       " bytes for its shape");
    if (shape_size(a.shape) > 0 && !array->Write(start.data(), count.data(), nullptr, nullptr, type, a.data.data()))
      gdal_failed(guard, "writing '" + a.name + "'");
  }
  root.reset();
  // Closing writes the file: a failure there (a full disk) comes only as a GDAL error, since a
  // destructor cannot return one. Reported, and the unusable file removed.
  CPLErrorReset();
  ds.reset();
  if (CPLGetLastErrorType() >= CE_Failure) {
    const std::string why = guard.last_error();
    VSIUnlink(path.c_str());
    throw StoreError("NetCDF output: cannot write '" + path + "'" + (why.empty() ? std::string() : ": " + why));
  }
}

}  // namespace lazycube::netcdf
