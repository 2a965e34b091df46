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

}  // namespace

Dataset open(std::string_view url, const OpenOptions& options) {
  check_engine(options.engine);
  const bool gdal = options.engine == "gdal" || (options.engine.empty() && netcdf::looks_like_gdal_file(url));
  if (gdal) {
    auto file = netcdf::open_gdal(url, options.storage_options);
    std::vector<Variable> variables;
    variables.reserve(file.arrays.size());
    for (auto& entry : file.arrays)
      variables.push_back(variable_from_array(std::move(entry.name), std::move(entry.array), options.decode_cf,
                                              /*zarr_format=*/0, options.mask_valid_range));
    return Dataset(std::move(variables), std::move(file.attrs));
  }
  Location location = open_location(url, options.storage_options);
  // An Icechunk repository opens at branch main, as the Zarr v3 hierarchy of that snapshot.
  if (auto repository = icechunk::open_location_if_repository(location)) location = std::move(*repository);
  return open(location, options);
}

Dataset open(const Location& location, const OpenOptions& options) {
  check_engine(options.engine);
  if (options.engine == "gdal")
    throw UsageError("engine 'gdal' opens URLs, not store locations: call open(url, options)");
  const auto hierarchy = zarr::Hierarchy::open(location, options.consolidated);
  std::vector<Variable> variables;
  if (hierarchy.is_array()) {
    std::string name = last_component(location.path);
    if (name.empty()) name = last_component(location.store->url());
    if (name.empty()) name = "data";
    variables.push_back(variable_from_array(name, hierarchy.array(hierarchy.array_names().front()),
                                            options.decode_cf, hierarchy.zarr_format(),
                                            options.mask_valid_range));
  } else {
    for (const auto& name : hierarchy.array_names())
      variables.push_back(variable_from_array(name, hierarchy.array(name), options.decode_cf,
                                              hierarchy.zarr_format(), options.mask_valid_range));
  }
  return Dataset(std::move(variables), hierarchy.attrs());
}

}  // namespace lazycube
