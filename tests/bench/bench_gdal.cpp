// `gdal` mode: the same store through GDAL's multidimensional API (Zarr driver), whole-array
// GDALMDArray::Read into one preallocated float32 buffer, GDAL_NUM_THREADS=ALL_CPUS.
#include "bench_modes.hpp"

#include <gdal_priv.h>

#include <memory>
#include <stdexcept>
#include <nlohmann/json.hpp>

#include "lazycube/util/buffer.hpp"

namespace lazycube::bench {

nlohmann::json run_gdal(const std::string& store, int runs) {
  CPLSetConfigOption("GDAL_NUM_THREADS", "ALL_CPUS");
  GDALAllRegister();
  std::unique_ptr<GDALDataset> ds(
      GDALDataset::Open(store.c_str(), GDAL_OF_MULTIDIM_RASTER | GDAL_OF_VERBOSE_ERROR));
  if (!ds) throw std::runtime_error("GDAL cannot open " + store + " as a multidim dataset");
  auto root = ds->GetRootGroup();
  const auto names = root ? root->GetMDArrayNames() : std::vector<std::string>{};
  if (names.size() != 1)
    throw std::runtime_error("expected exactly one array in the root group of " + store);
  auto array = root->OpenMDArray(names[0]);
  if (!array || array->GetDataType() != GDALExtendedDataType::Create(GDT_Float32))
    throw std::runtime_error("cannot open " + names[0] + " of " + store + " as float32");

  std::vector<GUInt64> start;
  std::vector<size_t> count;
  std::uint64_t elements = 1;
  for (const auto& dim : array->GetDimensions()) {
    start.push_back(0);
    count.push_back(static_cast<size_t>(dim->GetSize()));
    elements *= dim->GetSize();
  }
  const std::uint64_t bytes = elements * sizeof(float);
  Buffer out(bytes);  // allocated once, untouched until the first Read
  const auto float32 = GDALExtendedDataType::Create(GDT_Float32);
  const Timings t = time_runs(runs, [&] {
    if (!array->Read(start.data(), count.data(), nullptr, nullptr, float32, out.data(),
                     out.data(), out.size()))
      throw std::runtime_error("GDALMDArray::Read failed on " + store);
  });
  return result_json("gdal", store, t, bytes, checksum(out.view()));
}

}  // namespace lazycube::bench
