#include "gdal_source.hpp"

#include <unistd.h>

#include <filesystem>
#include <vector>

#include <cpl_vsi.h>
#include <cpl_vsi_error.h>

#include "gdal_guard.hpp"
#include "gdal_handle.hpp"
#include "format_sniff.hpp"
#include "lazycube/error.hpp"
#include "util/diagnostics.hpp"
#include "stdout_capture.hpp"

namespace lazycube::netcdf {

namespace {

GdalSource::ThreadKey this_thread_key() { return {::getpid(), std::this_thread::get_id()}; }

// The sources this thread holds a handle of; their handles are closed when the thread ends.
struct ThreadHandles {
  std::vector<std::weak_ptr<GdalSource>> sources;
  ~ThreadHandles() {
    const auto key = this_thread_key();
    for (auto& weak : sources)
      if (auto source = weak.lock()) source->release(key);
  }
  void add(const std::shared_ptr<GdalSource>& source) {
    std::erase_if(sources, [](const std::weak_ptr<GdalSource>& w) { return w.expired(); });
    sources.push_back(source);
  }
};

thread_local ThreadHandles thread_handles;

}  // namespace

GdalSource::GdalSource(GdalLocation location) : location_(std::move(location)) {}

GdalSource::~GdalSource() {
  GdalCallGuard guard;
  handles_.clear();
}

// Opens a handle with stdout captured when the driver may print there: GRIB's degrib prints
// warnings with printf (stdout_capture.hpp). Before the first open, every file that is not
// certainly NetCDF/HDF5 (by suffix or signature) is captured; later opens only when it turned out
// to be GRIB. Opens of other formats stay concurrent and leave stdout alone.
std::unique_ptr<GdalHandle> GdalSource::open_handle_captured() {
  std::string driver;
  {
    std::lock_guard lock(mutex_);
    driver = first_driver_;
  }
  const bool may_print = driver.empty() ? !known_netcdf_or_hdf5(location_.url) : driver == "GRIB";
  if (!may_print) return open_handle();
  std::unique_ptr<GdalHandle> handle;
  std::string printed;
  {
    StdoutCapture capture;
    handle = open_handle();  // on an exception the capture ends and its text is dropped
    printed = capture.take();
  }
  GDALDriver* gdal_driver = handle->dataset->GetDriver();
  {
    std::lock_guard lock(mutex_);
    if (first_driver_.empty()) first_driver_ = gdal_driver ? gdal_driver->GetDescription() : "?";
  }
  // One warning per capture: degrib's lines belong together ("Warning: Inside GRIB2Inventory,
  // Message # 745" / "ERROR: Ran out of file reading SECT0").
  std::string text;
  for (std::size_t begin = 0; begin < printed.size();) {
    std::size_t end = printed.find('\n', begin);
    if (end == std::string::npos) end = printed.size();
    std::string line = printed.substr(begin, end - begin);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) text += (text.empty() ? "" : "; ") + line;
    begin = end + 1;
  }
  if (!text.empty()) diagnostics::warn("GDAL: " + text + " (" + location_.url + ")");
  return handle;
}

std::unique_ptr<GdalHandle> GdalSource::open_handle() {
  GdalCallGuard guard;
  const std::string& url = location_.url;
  auto handle = std::make_unique<GdalHandle>();
  handle->dataset = GDALDataset::FromHandle(
      GDALOpenEx(location_.path.c_str(), GDAL_OF_MULTIDIM_RASTER | GDAL_OF_READONLY, nullptr, nullptr, nullptr));
  if (!handle->dataset) {
    const std::string why = guard.last_error();
    const std::string where = (location_.remote ? " (" + location_.path + ")" : std::string()) +
                              (location_.caveat.empty() ? std::string() : " [" + location_.caveat + "]");
    VSIErrorReset();
    VSIStatBufL st;
    if (VSIStatExL(location_.path.c_str(), &st, VSI_STAT_EXISTS_FLAG) != 0) {
      const int vsi_error = VSIGetLastErrorNo();
      const char* vsi_msg = VSIGetLastErrorMsg();
      const std::string detail = vsi_msg && *vsi_msg ? std::string(": ") + vsi_msg : std::string();
      if (vsi_error == VSIE_AWSAccessDenied || vsi_error == VSIE_AWSInvalidCredentials ||
          vsi_error == VSIE_AWSSignatureDoesNotMatch)
        throw AuthError("access to " + url + " refused" + where + detail);
      if (vsi_error == VSIE_AWSBucketNotFound) throw NotFound("no such bucket for " + url + where + detail);
      throw NotFound("no such file: " + url + where + detail);
    }
    if (!location_.remote && std::filesystem::is_directory(location_.path))
      throw MetadataError(url + " is a directory, not a NetCDF/HDF5/GRIB file (engine 'gdal')");
    throw MetadataError("GDAL cannot open " + url + " as a multidimensional NetCDF/HDF5/GRIB file" +
                        (why.empty() ? std::string() : ": " + why));
  }
  handle->root = handle->dataset->GetRootGroup();
  if (!handle->root) throw MetadataError("GDAL found no root group in " + url + ": " + guard.last_error());
  return handle;
}

GdalHandle& GdalSource::handle() {
  const auto key = this_thread_key();
  {
    std::lock_guard lock(mutex_);
    auto it = handles_.find(key);
    if (it != handles_.end()) return *it->second;
  }
  auto fresh = open_handle_captured();  // outside the lock: opening a remote file takes a while
  GdalHandle* raw = fresh.get();
  {
    std::lock_guard lock(mutex_);
    handles_[key] = std::move(fresh);
  }
  thread_handles.add(shared_from_this());
  return *raw;
}

std::shared_ptr<GDALMDArray> GdalSource::array(const std::string& name) {
  GdalHandle& h = handle();
  auto it = h.arrays.find(name);
  if (it != h.arrays.end()) return it->second;
  GdalCallGuard guard;
  std::shared_ptr<GDALGroup> group = h.root;
  std::string rest = name;
  for (auto slash = rest.find('/'); slash != std::string::npos; slash = rest.find('/')) {
    group = group->OpenGroup(rest.substr(0, slash));
    if (!group) throw NotFound("no group '" + name.substr(0, name.size() - rest.size() + slash) + "' in " + url());
    rest = rest.substr(slash + 1);
  }
  auto array = group->OpenMDArray(rest);
  if (!array) throw NotFound("no variable '" + name + "' in " + url());
  h.arrays.emplace(name, array);
  return array;
}

std::string GdalSource::driver_name() {
  GDALDriver* driver = handle().dataset->GetDriver();
  return driver ? driver->GetDescription() : "";
}

void GdalSource::release(const ThreadKey& key) {
  std::unique_ptr<GdalHandle> gone;
  {
    std::lock_guard lock(mutex_);
    auto it = handles_.find(key);
    if (it == handles_.end()) return;
    gone = std::move(it->second);
    handles_.erase(it);
  }
  GdalCallGuard guard;
  gone.reset();
}

}  // namespace lazycube::netcdf
