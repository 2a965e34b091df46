// One file opened through GDAL's multidimensional API, with one GDAL handle per thread: GDAL
// objects are not thread-safe, so no handle is ever used by two threads. A thread's handle is
// closed when the thread ends or when the source (the Dataset's arrays) goes away.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include <sys/types.h>

#include "gdal_location.hpp"

class GDALMDArray;

namespace lazycube::netcdf {

struct GdalHandle;

class GdalSource : public std::enable_shared_from_this<GdalSource> {
 public:
  explicit GdalSource(GdalLocation location);
  ~GdalSource();
  GdalSource(const GdalSource&) = delete;
  GdalSource& operator=(const GdalSource&) = delete;

  const std::string& url() const { return location_.url; }
  const std::string& gdal_path() const { return location_.path; }
  // A file on this machine (gdal_path() is its path), not a /vsi… URL.
  bool local() const { return !location_.remote; }
  // The name of the GDAL driver that opened the file ("netCDF", "HDF5", "GRIB", ...).
  std::string driver_name();

  // The array `name` ("var" or "group/var") through the calling thread's handle, opened on
  // first use. Only the calling thread may use what it returns. Typed errors naming the URL.
  std::shared_ptr<GDALMDArray> array(const std::string& name);
  // The calling thread's handle (opening the file on first use).
  GdalHandle& handle();

  // Closes the handle of thread `key` (thread exit).
  using ThreadKey = std::pair<pid_t, std::thread::id>;
  void release(const ThreadKey& key);

 private:
  std::unique_ptr<GdalHandle> open_handle();
  std::unique_ptr<GdalHandle> open_handle_captured();

  GdalLocation location_;
  std::mutex mutex_;
  // The driver that opened the file first ("" before); later opens by other threads capture
  // stdout only for drivers known to print there (GRIB).
  std::string first_driver_;
  std::map<ThreadKey, std::unique_ptr<GdalHandle>> handles_;
};

}  // namespace lazycube::netcdf
