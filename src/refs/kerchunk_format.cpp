// The kerchunk format in the format registry: a reference set (reference://URL, or a URL
// ending in .json whose content is one) is a layer over the stores of its targets; the Zarr
// hierarchy it describes is handed on to the next format.
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "lazycube/error.hpp"
#include "lazycube/format/registry.hpp"
#include "lazycube/refs/references.hpp"
#include "lazycube/store/reference_access.hpp"
#include "lazycube/store/vsi_location.hpp"
#include "reference_spec.hpp"
#include "reference_store.hpp"

namespace lazycube::refs {

namespace {

constexpr std::string_view kScheme = "reference://";

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_json_name(std::string_view url) { return url.size() > 5 && url.ends_with(".json"); }

// kerchunk's parquet layout: a directory with .zmetadata holding "record_size".
bool is_parquet_references(const std::string& url, const StoreOptions& options) {
  std::optional<std::string> meta;
  try {
    meta = read_json_object(url + "/.zmetadata", options);
  } catch (const StoreError&) {
  }
  return meta && meta->find("\"record_size\"") != std::string::npos;
}

bool claims(std::string_view url) {
  if (url.starts_with(kScheme)) return true;
  if (!is_json_name(url)) return false;
  // A local .json path that is no regular file (a directory named x.json) is a store.
  const auto local = local_path_of(url);
  return !local || is_regular_file(*local);
}

// A remote .json object that is no reference set is read as a store, as before the registry.
format::Opened open_url(std::string_view url, const format::Request& request) {
  if (!url.starts_with(kScheme) && !local_path_of(url)) {
    std::optional<std::string> json;
    try {
      json = read_json_object(url, without_reference_options(request.storage_options));
    } catch (const NotFound&) {
    }
    if (!json || !is_reference_set(*json)) return {std::nullopt, open_location(url, request.storage_options)};
    return {std::nullopt, Location{make_reference_store_from_json(*json, std::string(url), request.storage_options), ""}};
  }
  return {std::nullopt, open_references(url, request.storage_options)};
}

}  // namespace

std::optional<std::string> read_json_object(std::string_view url, const StoreOptions& options) {
  if (auto local = local_path_of(url)) {
    if (!is_regular_file(*local)) return std::nullopt;
    std::ifstream in(*local, std::ios::binary);
    if (!in) throw StoreError("cannot read " + *local);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // The object through its parent's store (the store's layers, the persistent cache, apply).
  const std::string u(url);
  const auto slash = u.rfind('/');
  if (slash == std::string::npos || slash < u.find("://") + 3) return std::nullopt;
  const Location parent = open_location(u.substr(0, slash), options);
  auto bytes = parent.store->get(u.substr(slash + 1));
  if (!bytes) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(bytes->data()), bytes->size());
}

Location open_references(std::string_view url, const StoreOptions& options) {
  const bool by_scheme = url.starts_with(kScheme);
  const std::string target(by_scheme ? url.substr(kScheme.size()) : url);
  if (target.empty()) throw NotFound("reference:// needs the path or URL of a kerchunk JSON file");
  const StoreOptions plain = without_reference_options(options);
  const std::optional<std::string> json = read_json_object(target, plain);
  if (!json) {
    if (is_parquet_references(target, plain))
      throw StoreError("parquet references are not supported in this build ('" + target +
                       "'; Debian 12 has no parquet reader library for C++): write the references as JSON instead");
    throw NotFound("no kerchunk reference file at '" + target + "'");
  }
  if (!by_scheme && !is_reference_set(*json))
    throw NotFound(target + " is a JSON file, not a kerchunk reference set or a Zarr store directory");
  return {make_reference_store_from_json(*json, target, options), ""};
}

}  // namespace lazycube::refs

LAZYCUBE_REGISTER_FORMAT(kerchunk) {
  using namespace lazycube;
  registry.add({.engine = "kerchunk",
                .describe = "kerchunk reference sets",
                .order = 50,
                .has_nodes = true,
                .claims_url = &refs::claims,
                .open_url = &refs::open_url});
}
