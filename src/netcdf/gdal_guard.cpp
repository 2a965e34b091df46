#include "gdal_guard.hpp"

#include <mutex>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <gdal.h>

namespace lazycube::netcdf {

namespace {

// Options every open and read runs with, on the calling thread only.
//  GRIB_NORMALIZE_UNITS=NO: GDAL 3.6 labels GRIB temperatures "C" by default although the
//  values it returns are Kelvin; with NO the unit says "K", matching the values.
const std::pair<const char*, const char*> kThreadOptions[] = {
    {"GRIB_NORMALIZE_UNITS", "NO"},
};

}  // namespace

void ensure_gdal_registered() {
  static std::once_flag once;
  std::call_once(once, [] { GDALAllRegister(); });
}

GdalCallGuard::GdalCallGuard() {
  ensure_gdal_registered();
  CPLPushErrorHandler(CPLQuietErrorHandler);
  CPLErrorReset();
  for (const auto& [key, value] : kThreadOptions) {
    const char* old = CPLGetThreadLocalConfigOption(key, nullptr);
    saved_.emplace_back(key, old ? old : std::string("\x01"));  // \x01: was unset
    CPLSetThreadLocalConfigOption(key, value);
  }
}

GdalCallGuard::~GdalCallGuard() {
  for (const auto& [key, old] : saved_)
    CPLSetThreadLocalConfigOption(key.c_str(), old == "\x01" ? nullptr : old.c_str());
  CPLPopErrorHandler();
}

std::string GdalCallGuard::last_error() const {
  const char* msg = CPLGetLastErrorMsg();
  return msg ? std::string(msg) : std::string();
}

}  // namespace lazycube::netcdf
