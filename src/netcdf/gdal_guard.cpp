#include "gdal_guard.hpp"

#include <exception>
#include <mutex>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <gdal.h>

#include "util/hdf5_quiet.hpp"
#include "util/diagnostics.hpp"

namespace lazycube::netcdf {

namespace {

// Options every open and read runs with, on the calling thread only.
//  GRIB_NORMALIZE_UNITS=NO: GDAL 3.6 labels GRIB temperatures "C" by default although the
//  values it returns are Kelvin; with NO the unit says "K", matching the values.
const std::pair<const char*, const char*> kThreadOptions[] = {
    {"GRIB_NORMALIZE_UNITS", "NO"},
};

void CPL_STDCALL record_message(CPLErr level, CPLErrorNum, const char* message) {
  if (level == CE_Debug || level == CE_None || !message) return;  // CPL_DEBUG chatter is not a warning
  auto* guard = static_cast<GdalCallGuard*>(CPLGetErrorHandlerUserData());
  if (!guard) return;
  try {
    guard->record(message);
  } catch (...) {
    // out of memory: the message is lost (GDAL's C code must not see an exception)
  }
}

}  // namespace

void ensure_gdal_registered() {
  static std::once_flag once;
  std::call_once(once, [] { GDALAllRegister(); });
}

GdalCallGuard::GdalCallGuard() : uncaught_(std::uncaught_exceptions()) {
  ensure_gdal_registered();
  quiet_hdf5_on_this_thread();  // GDAL's netCDF and HDF5 drivers call HDF5 on this thread
  CPLPushErrorHandlerEx(record_message, this);
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
  if (std::uncaught_exceptions() > uncaught_) return;  // the exception says what went wrong
  try {
    for (auto& message : messages_) diagnostics::warn("GDAL: " + std::move(message));
  } catch (...) {
    // out of memory while reporting a warning: the warning is lost, the read is not
  }
}

std::string GdalCallGuard::last_error() const {
  const char* msg = CPLGetLastErrorMsg();
  return msg ? std::string(msg) : std::string();
}

}  // namespace lazycube::netcdf
