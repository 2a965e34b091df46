// A GDAL dataset handle with its root group and the arrays opened through it; owned by one
// thread at a time (see GdalSource).
#pragma once

#include <map>
#include <memory>
#include <string>

#include <gdal_priv.h>

namespace lazycube::netcdf {

struct GdalHandle {
  GDALDataset* dataset = nullptr;
  std::shared_ptr<GDALGroup> root;
  std::map<std::string, std::shared_ptr<GDALMDArray>> arrays;

  GdalHandle() = default;
  GdalHandle(const GdalHandle&) = delete;
  GdalHandle& operator=(const GdalHandle&) = delete;
  ~GdalHandle() {
    arrays.clear();  // GDAL objects before the dataset that owns them
    root.reset();
    if (dataset) GDALClose(GDALDataset::ToHandle(dataset));
  }
};

}  // namespace lazycube::netcdf
