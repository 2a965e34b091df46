// Scoped GDAL call context for the calling thread: GDAL's messages are captured instead of
// printed, and the per-open settings are thread-local config options (never process-global).
#pragma once

#include <string>
#include <vector>

namespace lazycube::netcdf {

// Registers GDAL's drivers once per process.
void ensure_gdal_registered();

class GdalCallGuard {
 public:
  GdalCallGuard();
  ~GdalCallGuard();
  GdalCallGuard(const GdalCallGuard&) = delete;
  GdalCallGuard& operator=(const GdalCallGuard&) = delete;

  // The last error GDAL reported on this thread since the guard was made ("" when none).
  std::string last_error() const;

 private:
  std::vector<std::pair<std::string, std::string>> saved_;  // thread-local options to restore
};

}  // namespace lazycube::netcdf
