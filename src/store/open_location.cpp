// URL → (store, node path). Kerchunk reference sets (reference://URL, or a .json file whose
// content is one) are recognised here; every other URL opens through its backend in the
// registry (backend_registry.hpp). The local "file" and the "reference" backends register here.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "lazycube/error.hpp"
#include "lazycube/store/store.hpp"
#include "lazycube/store/vsi_location.hpp"
#include "backend_registry.hpp"
#include "reference_spec.hpp"
#include "reference_store.hpp"
#include "url_scheme.hpp"

namespace lazycube {

namespace {

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string read_local_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw StoreError("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The whole object at a remote `url` (its parent opened as a store); nullopt when missing.
std::optional<std::string> read_remote_object(const std::string& url, const StoreOptions& options) {
  const auto slash = url.rfind('/');
  if (slash == std::string::npos || slash < url.find("://") + 3) return std::nullopt;
  const Location parent = open_location(url.substr(0, slash), options);
  auto bytes = parent.store->get(url.substr(slash + 1));
  if (!bytes) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

// kerchunk's parquet layout: a directory with .zmetadata holding "record_size".
bool is_parquet_references(const std::string& url, const StoreOptions& options) {
  std::optional<std::string> meta;
  if (auto local = local_path_of(url)) {
    if (is_regular_file(*local + "/.zmetadata")) meta = read_local_file(*local + "/.zmetadata");
  } else {
    try {
      meta = read_remote_object(url + "/.zmetadata", options);
    } catch (const StoreError&) {
    }
  }
  return meta && meta->find("\"record_size\"") != std::string::npos;
}

Location open_reference_url(const std::string& target, const StoreOptions& options) {
  if (target.empty()) throw NotFound("reference:// needs the path or URL of a kerchunk JSON file");
  const StoreOptions plain = refs::without_reference_options(options);
  std::optional<std::string> json;
  if (auto local = local_path_of(target)) {
    if (is_regular_file(*local)) json = read_local_file(*local);
  } else {
    json = read_remote_object(target, plain);
  }
  if (!json) {
    if (is_parquet_references(target, plain))
      throw StoreError("parquet references are not supported in this build ('" + target +
                       "'; Debian 12 has no parquet reader library for C++): write the references as JSON instead");
    throw NotFound("no kerchunk reference file at '" + target + "'");
  }
  return {refs::make_reference_store_from_json(*json, target, options), ""};
}

}  // namespace

Location open_location(std::string_view url, const StoreOptions& options) {
  std::string path(url);
  const ParsedUrl parsed = parse_url_scheme(url);
  if (parsed.is_reference()) return open_reference_url(parsed.rest, options);
  // A .json file or object holding a kerchunk reference set opens as a reference store.
  if (path.size() > 5 && path.ends_with(".json")) {
    if (auto local = local_path_of(path); local && is_regular_file(*local)) {
      std::string json = read_local_file(*local);
      if (!refs::is_reference_set(json))
        throw NotFound(*local + " is a JSON file, not a kerchunk reference set or a Zarr store directory");
      return {refs::make_reference_store_from_json(json, path, options), ""};
    }
    if (!local_path_of(path)) {
      std::optional<std::string> json;
      try {
        json = read_remote_object(path, refs::without_reference_options(options));
      } catch (const NotFound&) {
      }
      if (json && refs::is_reference_set(*json)) return {refs::make_reference_store_from_json(*json, path, options), ""};
    }
  }
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
                .open = [](const ParsedUrl& url, const StoreOptions& options) { return open_reference_url(url.rest, options); },
                .describe = "reference://",
                .listing_order = 90});
}
