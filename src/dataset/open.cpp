// lazycube::open: URL -> store -> Zarr hierarchy -> Dataset, or URL -> GDAL (src/netcdf) ->
// Dataset. The formats hand over named arrays and attributes; the Variables (CF decoding) are
// made here, so the format layer never depends on this one.
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/icechunk/repository.hpp"
#include "lazycube/netcdf/gdal_open.hpp"
#include "lazycube/zarr/hierarchy.hpp"

namespace lazycube {

namespace {

// Last non-empty '/'-separated component of `path`.
std::string last_component(std::string_view path) {
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  const auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

const char* const kEngines = "'zarr', 'gdal' (or empty for auto-detection)";

void check_engine(const std::string& engine) {
  if (!engine.empty() && engine != "zarr" && engine != "gdal")
    throw UsageError("unknown engine '" + engine + "' (known: " + kEngines + ")");
}

// What the options choose inside a hierarchy (group, Icechunk version or containers), for the
// message refusing them with the gdal engine; empty when nothing is chosen.
std::string hierarchy_choices(const OpenOptions& options) {
  std::vector<std::string> given;
  if (!options.group.empty()) given.push_back("group '" + options.group + "'");
  if (!options.icechunk.version.empty()) given.push_back(options.icechunk.version.describe());
  if (!options.icechunk.virtual_chunk_containers.empty()) given.emplace_back("virtual chunk containers");
  std::string out;
  for (const auto& g : given) out += (out.empty() ? "" : ", ") + g;
  return out;
}

// `path` + the group's components ("/a//b/" -> "a/b"); UsageError for "." or "..".
std::string node_path(const std::string& path, const std::string& group) {
  std::string out = path;
  while (!out.empty() && out.back() == '/') out.pop_back();
  std::size_t begin = 0;
  while (begin <= group.size()) {
    const auto end = std::min(group.find('/', begin), group.size());
    const std::string part = group.substr(begin, end - begin);
    if (part == "." || part == "..")
      throw UsageError("group '" + group + "': '" + part + "' is not a node name (give the path from the root)");
    if (!part.empty()) out += (out.empty() ? "" : "/") + part;
    begin = end + 1;
  }
  return out;
}

// The node `options` choose at `location`: an Icechunk repository becomes the Zarr v3 store of
// the chosen snapshot; then the group's path. Choosing a version or containers for a store that
// is no repository is a UsageError naming the choice.
Location chosen_node(const Location& location, const OpenOptions& options) {
  Location node = location;
  if (auto snapshot = icechunk::open_location_if_repository(location, options.icechunk)) {
    node = std::move(*snapshot);
  } else if (!options.icechunk.empty()) {
    const std::string what = options.icechunk.version.empty() ? std::string("virtual chunk containers")
                                                              : options.icechunk.version.describe();
    const std::string url = location.path.empty() ? location.store->url() : location.store->describe(location.path);
    throw UsageError(what + " applies to Icechunk repositories only; " + url + " is not one");
  }
  node.path = node_path(node.path, options.group);
  return node;
}

}  // namespace

bool opens_with_gdal(std::string_view url, const OpenOptions& options) {
  check_engine(options.engine);
  return options.engine == "gdal" || (options.engine.empty() && netcdf::looks_like_gdal_file(url));
}

Dataset open(std::string_view url, const OpenOptions& options) {
  if (opens_with_gdal(url, options)) {
    if (const auto chosen = hierarchy_choices(options); !chosen.empty())
      throw UsageError(chosen + ": only for Zarr stores and Icechunk repositories, not with the gdal engine (" +
                       std::string(url) + ")");
    auto file = netcdf::open_gdal(url, options.storage_options);
    std::vector<std::pair<std::string, ArrayPtr>> arrays;
    arrays.reserve(file.arrays.size());
    for (auto& entry : file.arrays) arrays.emplace_back(std::move(entry.name), std::move(entry.array));
    return decode_dataset(arrays, std::move(file.attrs), /*zarr_format=*/0, options);
  }
  return open(open_location(url, options.storage_options), options);
}

Dataset open(const Location& location, const OpenOptions& options) {
  check_engine(options.engine);
  if (options.engine == "gdal")
    throw UsageError("engine 'gdal' opens URLs, not store locations: call open(url, options)");
  const Location node = chosen_node(location, options);
  const auto hierarchy = zarr::Hierarchy::open(node, options.consolidated);
  std::vector<std::pair<std::string, ArrayPtr>> arrays;
  if (hierarchy.is_array()) {
    std::string name = last_component(node.path);
    if (name.empty()) name = last_component(node.store->url());
    if (name.empty()) name = "data";
    arrays.emplace_back(name, hierarchy.array(hierarchy.array_names().front()));
  } else {
    for (const auto& name : hierarchy.array_names()) arrays.emplace_back(name, hierarchy.array(name));
  }
  return decode_dataset(arrays, hierarchy.attrs(), hierarchy.zarr_format(), options);
}

}  // namespace lazycube
