// Captures what is written to the process's standard output (file descriptor 1) while it lives.
// GDAL's GRIB driver (degrib) prints its warnings with printf ("Warning: Inside GRIB2Inventory,
// Message # 745 / ERROR: Ran out of file reading SECT0"), which no GDAL error handler sees and
// which would otherwise end up in the middle of a command's output (`lazycube info --json`).
//
// File descriptors are process-wide: captures are serialized by a process-wide mutex, and
// anything another thread writes to stdout meanwhile is captured too (it is then reported as a
// warning rather than lost). When descriptor 1 cannot be redirected (closed, no temporary file),
// nothing is captured and nothing fails.
#pragma once

#include <mutex>
#include <string>

namespace lazycube::netcdf {

class StdoutCapture {
 public:
  StdoutCapture();
  ~StdoutCapture();  // restores stdout (what was captured and not taken is dropped)
  StdoutCapture(const StdoutCapture&) = delete;
  StdoutCapture& operator=(const StdoutCapture&) = delete;

  // Restores stdout and returns what was written to it since construction.
  std::string take();

 private:
  void restore();

  std::unique_lock<std::mutex> lock_;
  int saved_fd_ = -1;  // the real stdout while capturing; -1 when not capturing
  int file_fd_ = -1;   // the temporary file that receives the output
};

}  // namespace lazycube::netcdf
