// open_gdal: walks the file's groups and opens one GdalArray per GDAL multidimensional array.
#include "lazycube/netcdf/gdal_open.hpp"

#include <cmath>
#include <cstring>

#include <cpl_vsi.h>
#include <gdal_priv.h>
#include <nlohmann/json.hpp>

#include "gdal_array.hpp"
#include "gdal_guard.hpp"
#include "gdal_handle.hpp"
#include "gdal_metadata.hpp"
#include "lazycube/error.hpp"

namespace lazycube::netcdf {

namespace {

const char* const kShowAll[] = {"SHOW_ALL=YES", nullptr};
// Every variable, as netCDF4-python lists them: the netCDF driver hides 0-d variables (CF
// grid_mapping and formula-term scalars, for instance) unless asked; other drivers ignore it.
const char* const kAllArrays[] = {"SHOW_ZERO_DIM=YES", nullptr};

// The CF view of what some drivers keep outside the attributes (units, scale, offset, nodata).
void add_driver_metadata(const GDALMDArray& array, const std::string& driver, GdalArrayInfo& info) {
  auto& attrs = info.attrs;
  const std::string unit = array.GetUnit();
  if (!unit.empty() && !attrs.contains("units")) {
    // GRIB's TIME coordinate: seconds since the Unix epoch.
    attrs["units"] = unit == "sec UTC" ? std::string("seconds since 1970-01-01 00:00:00") : unit;
  }
  bool has = false;
  const double scale = array.GetScale(&has);
  if (has && !attrs.contains("scale_factor")) attrs["scale_factor"] = scale;
  const double offset = array.GetOffset(&has);
  if (has && !attrs.contains("add_offset")) attrs["add_offset"] = offset;

  info.fill_bytes = Buffer(info.dtype.itemsize);
  std::memset(info.fill_bytes.data(), 0, info.fill_bytes.size());
  if (info.dtype.is_variable_length()) return;
  const void* nodata = array.GetRawNoDataValue();
  if (nodata) std::memcpy(info.fill_bytes.data(), nodata, info.dtype.itemsize);
  // The netCDF driver shows the file's _FillValue as it is (SHOW_ALL); its no-data value is
  // that fill cast to the variable's type, which can be wrong (NaN → 0 for int16): ignore it.
  if (driver != "netCDF" && nodata && !attrs.contains("_FillValue")) {
    double value = 0;
    GDALExtendedDataType::CopyValue(nodata, array.GetDataType(), &value,
                                    GDALExtendedDataType::Create(GDT_Float64));
    attrs["_FillValue"] = std::isnan(value) ? nlohmann::json("NaN") : nlohmann::json(value);
  }
  info.has_fill = attrs.contains("_FillValue");
}

struct Walker {
  std::shared_ptr<GdalSource> source;
  std::string driver;
  std::vector<GdalArrayEntry> arrays;
  std::vector<std::string> skipped;

  void walk(const std::shared_ptr<GDALGroup>& group, const std::string& prefix) {
    for (const auto& name : group->GetMDArrayNames(kAllArrays)) {
      const std::string full = prefix + name;
      auto array = group->OpenMDArray(name);
      if (!array) throw MetadataError("GDAL cannot open variable '" + full + "' of " + source->url());
      add(*array, full);
    }
    for (const auto& name : group->GetGroupNames()) {
      auto sub = group->OpenGroup(name);
      if (sub) walk(sub, prefix + name + "/");
    }
  }

  void add(const GDALMDArray& array, const std::string& name) {
    const auto dtype = dtype_of(array.GetDataType());
    if (!dtype) {
      skipped.push_back(name + " (compound or complex-integer type)");
      return;
    }
    GdalArrayInfo info;
    info.name = name;
    info.driver = driver;
    info.dtype = *dtype;
    info.gdal_type = array.GetDataType().GetClass() == GEDTC_NUMERIC ? array.GetDataType().GetNumericDataType() : 0;
    for (const auto& dim : array.GetDimensions()) {
      info.shape.push_back(dim->GetSize());
      info.dims.push_back(dim->GetName());
    }
    info.block = read_unit_shape(info.shape, array.GetBlockSize(), info.dtype.itemsize);
    info.attrs = attributes_json(array.GetAttributes(kShowAll));
    add_driver_metadata(array, driver, info);
    arrays.push_back({name, std::make_shared<GdalArray>(source, std::move(info))});
  }
};

// NetCDF classic files (CDF-1/2/5) read through netCDF-C come back zero-filled past the end of
// a truncated file. Every variable's data lies after the header, so a file shorter than all
// variables together is certainly truncated (a cut of a few bytes may go unnoticed).
void check_classic_size(const GdalSource& source, const std::vector<GdalArrayEntry>& arrays) {
  VSILFILE* f = VSIFOpenL(source.gdal_path().c_str(), "rb");
  if (!f) return;
  char magic[4] = {};
  const bool classic = VSIFReadL(magic, 1, 4, f) == 4 && std::memcmp(magic, "CDF", 3) == 0;
  VSIFSeekL(f, 0, SEEK_END);
  const std::uint64_t size = VSIFTellL(f);
  VSIFCloseL(f);
  if (!classic) return;
  std::uint64_t need = 0;
  for (const auto& entry : arrays) {
    const auto& a = *entry.array;
    need += (shape_size(a.shape()) * a.dtype().itemsize + 3) / 4 * 4;  // padded to 4 bytes
  }
  if (size < need)
    throw CodecError(source.url() + " is truncated: " + std::to_string(size) + " bytes, its variables need at least " +
                     std::to_string(need));
}

}  // namespace

GdalFile open_gdal(std::string_view url, const StoreOptions& storage_options) {
  auto source = std::make_shared<GdalSource>(gdal_location(url, storage_options));
  // Metadata through this thread's handle (kept for this thread's reads).
  GdalHandle& handle = source->handle();
  GdalCallGuard guard;
  Walker walker{source, source->driver_name(), {}, {}};
  walker.walk(handle.root, "");
  if (walker.driver == "netCDF") check_classic_size(*source, walker.arrays);
  nlohmann::json attrs = attributes_json(handle.root->GetAttributes(kShowAll));
  if (!walker.skipped.empty()) attrs["lazycube:skipped_variables"] = walker.skipped;
  return GdalFile{std::move(walker.arrays), std::move(attrs)};
}

}  // namespace lazycube::netcdf
