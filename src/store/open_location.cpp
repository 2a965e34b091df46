// URL → (store, node path). Local paths, file:// and http(s)://; the cloud schemes plug in here.
#include <sys/stat.h>

#include "lazycube/error.hpp"
#include "lazycube/store/store.hpp"
#include "object_store.hpp"

namespace lazycube {

namespace {

// s3://bucket/prefix and gs://bucket/prefix: the prefix becomes the store root.
Location open_object_store_url(std::string_view url, const StoreOptions& options) {
  const std::string scheme(url.substr(0, 2));
  std::string rest(url.substr(5));
  const auto slash = rest.find('/');
  const std::string bucket = rest.substr(0, slash);
  std::string prefix = slash == std::string::npos ? std::string() : rest.substr(slash + 1);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  while (!prefix.empty() && prefix.front() == '/') prefix.erase(0, 1);
  if (bucket.empty()) throw StoreError("no bucket in '" + std::string(url) + "'");
  if (scheme == "s3") return {cloud::make_s3_store(bucket, prefix, options), ""};
  return {cloud::make_gcs_store(bucket, prefix, options), ""};
}

}  // namespace

Location open_location(std::string_view url, const StoreOptions& options) {
  std::string path(url);
  if (path.rfind("s3://", 0) == 0 || path.rfind("gs://", 0) == 0) return open_object_store_url(url, options);
  if (path.rfind("http://", 0) == 0 || path.rfind("https://", 0) == 0) {
    while (path.size() > 8 && path.back() == '/') path.pop_back();
    return {make_http_store(path, options), ""};
  }
  // Local paths take no storage options; they are ignored (like fsspec's local filesystem).
  if (path.rfind("file://", 0) == 0) path = path.substr(7);
  auto scheme_end = path.find("://");
  if (scheme_end != std::string::npos)
    throw StoreError("unsupported URL scheme '" + path.substr(0, scheme_end) + "' in '" +
                     std::string(url) + "' (this build reads local paths, file://, http(s)://, s3:// and gs:// URLs)");
  if (path.empty()) throw NotFound("empty path");
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw NotFound("no such file or directory: " + path);
  if (!S_ISDIR(st.st_mode))
    throw NotFound(path + " is a file, not a Zarr store directory");
  return {make_file_store(path), ""};
}

}  // namespace lazycube
