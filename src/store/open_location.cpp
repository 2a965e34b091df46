// URL → (store, node path). Local paths, file:// and http(s)://; the cloud schemes plug in here.
#include <sys/stat.h>

#include "lazycube/error.hpp"
#include "lazycube/store/store.hpp"

namespace lazycube {

Location open_location(std::string_view url, const StoreOptions& options) {
  std::string path(url);
  if (path.rfind("http://", 0) == 0 || path.rfind("https://", 0) == 0) {
    while (path.size() > 8 && path.back() == '/') path.pop_back();
    return {make_http_store(path, options), ""};
  }
  // Local paths take no storage options; they are ignored (like fsspec's local filesystem).
  if (path.rfind("file://", 0) == 0) path = path.substr(7);
  auto scheme_end = path.find("://");
  if (scheme_end != std::string::npos)
    throw StoreError("unsupported URL scheme '" + path.substr(0, scheme_end) + "' in '" +
                     std::string(url) + "' (this build reads local paths, file://, http:// and https:// URLs)");
  if (path.empty()) throw NotFound("empty path");
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw NotFound("no such file or directory: " + path);
  if (!S_ISDIR(st.st_mode))
    throw NotFound(path + " is a file, not a Zarr store directory");
  return {make_file_store(path), ""};
}

}  // namespace lazycube
