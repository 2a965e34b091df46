// URL → (store, node path): every URL opens through its backend in the registry
// (backend_registry.hpp), with the store layers (the persistent cache) over it. The local "file"
// and the "reference" backends register here; reference sets themselves are a format
// (src/refs/kerchunk_format.cpp), which lazycube::open reads.
#include <sys/stat.h>

#include <filesystem>

#include "lazycube/error.hpp"
#include "lazycube/store/reference_access.hpp"
#include "lazycube/store/store.hpp"
#include "lazycube/store/vsi_location.hpp"
#include "backend_registry.hpp"
#include "url_scheme.hpp"

namespace lazycube {

Location open_location(std::string_view url, const StoreOptions& options) {
  const ParsedUrl parsed = parse_url_scheme(url);
  // allowed_prefixes only matters to reference sets; other stores ignore it.
  return open_registered(parsed, refs::without_reference_options(options));
}

Location open_writable_location(std::string_view url, const StoreOptions& options) {
  if (auto local = local_path_of(url)) {
    std::error_code ec;
    std::filesystem::create_directories(*local, ec);
    if (ec) throw StoreError("cannot create the directory " + *local + ": " + ec.message());
  }
  Location location = open_location(url, options);
  if (!location.store->writable())
    throw StoreError(location.store->describe(location.path) +
                     " cannot be written: this store is read-only (write to a local path, s3://, gs:// or az://)");
  return location;
}

namespace {

// Local paths take no storage options; they are ignored (like fsspec's local filesystem).
Location open_local(const ParsedUrl& parsed, const StoreOptions&) {
  std::string path = parsed.rest;
  if (path.empty()) throw NotFound("empty path");
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw NotFound("no such file or directory: " + path);
  if (!S_ISDIR(st.st_mode))
    throw NotFound(path + " is a file, not a Zarr store directory");
  return {make_file_store(path), ""};
}

}  // namespace

}  // namespace lazycube

LAZYCUBE_REGISTER_BACKEND(file) {
  using namespace lazycube;
  registry.add({.role = BackendRole::Local, .schemes = {"file"}, .open = &open_local, .describe = "local paths, file://",
                .listing_order = 10});
}

LAZYCUBE_REGISTER_BACKEND(reference) {
  using namespace lazycube;
  registry.add({.role = BackendRole::References,
                .schemes = {"reference"},
                .open = [](const ParsedUrl& url, const StoreOptions&) -> Location {
                  throw UsageError("reference://" + url.rest +
                                   " names a kerchunk reference set, a format rather than a store: open it with "
                                   "lazycube::open, or refs::open_references for its store");
                },
                .describe = "reference://",
                .listing_order = 90});
}
