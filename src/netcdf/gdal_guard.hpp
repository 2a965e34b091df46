// Scoped GDAL call context for the calling thread: GDAL's messages are captured instead of
// printed, and the per-open settings are thread-local config options (never process-global).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace lazycube::netcdf {

// Registers GDAL's drivers once per process.
void ensure_gdal_registered();

// While a guard lives, GDAL's warnings and errors on this thread go to the guard, not to stderr.
// When the guard ends normally they become lazycube warnings (util/diagnostics.hpp), prefixed
// "GDAL: "; when it ends because an exception is thrown they are dropped (the exception carries
// last_error()).
class GdalCallGuard {
 public:
  GdalCallGuard();
  ~GdalCallGuard();
  GdalCallGuard(const GdalCallGuard&) = delete;
  GdalCallGuard& operator=(const GdalCallGuard&) = delete;

  // The last error GDAL reported on this thread since the guard was made ("" when none).
  std::string last_error() const;

  // Called by GDAL's error handler (for GDAL's C callback only).
  void record(std::string message) { messages_.push_back(std::move(message)); }

 private:
  std::vector<std::pair<std::string, std::string>> saved_;  // thread-local options to restore
  std::vector<std::string> messages_;                       // warnings and errors heard
  int uncaught_ = 0;                                        // std::uncaught_exceptions() at entry
};

}  // namespace lazycube::netcdf
