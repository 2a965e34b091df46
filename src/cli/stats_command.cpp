// lazycube stats URL [--variables V1,V2] [--keep DIM]... | [--dims DIM,...] [-o stats.json]
//   [--netcdf out.nc | --zarr out.zarr] [open flags] [--progress|--no-progress]
// Prints the stats JSON (dataset/stats.hpp) on stdout unless -o names a file.
#include <iostream>

#include "commands.hpp"
#include "lazycube/dataset/stats.hpp"
#include "lazycube/dataset/zarr_output.hpp"
#include "lazycube/error.hpp"
#include "lazycube/netcdf/netcdf_write.hpp"
#include "util/local_file.hpp"
#include "progress.hpp"

namespace lazycube::cli {

int run_stats(const StatsArgs& args) {
  OpenOptions options = open_options_of(args.open);
  StatsOptions stats_options;
  if (!args.variables.empty())
    stats_options.variables = node_path_variables(args.url, parse_name_list(args.variables, "--variables"), options);
  const Dataset ds = open(args.url, options);
  if (!args.keep.empty()) stats_options.keep = parse_name_list(args.keep, "--keep");
  if (!args.dims.empty()) stats_options.keep = kept_dims(ds, parse_name_list(args.dims, "--dims"));
  std::uint64_t total = 0;
  for (const auto& name : stats_options.variables.empty() ? ds.data_var_names() : stats_options.variables) {
    const Variable& v = ds.variable(name);
    total += v.size() * v.dtype().itemsize;
  }
  ProgressBar progress(args.progress, total, "MB", 1e6);
  if (progress.enabled()) stats_options.progress = [&](std::uint64_t done, std::uint64_t) { progress.update(done); };
  const auto stats = compute_stats(ds, stats_options);
  progress.finish();
  const std::string text = stats_to_json(stats).dump(1) + "\n";
  if (args.output.empty()) {
    std::cout << text;
  } else {
    write_local_file(args.output, text);
  }
  if (!args.netcdf.empty()) {
    const Dataset out = stats_dataset(stats);
    std::vector<netcdf::NetcdfArray> arrays;
    for (const auto& name : out.variable_names()) {
      const Variable& v = out.variable(name);
      const NDArray values = v.read();
      const auto bytes = values.data.span();
      arrays.push_back({name, v.dims(), v.shape(), v.dtype(), std::vector<std::byte>(bytes.begin(), bytes.end()), v.attrs()});
    }
    netcdf::write_netcdf(args.netcdf, arrays, out.attrs());
  }
  if (!args.zarr.empty()) {
    ZarrOutputOptions zarr;
    zarr.zarr_format = 2;  // what every xarray / zarr-python reads
    zarr.overwrite = true;
    ZarrOutput(stats_dataset(stats), args.zarr, zarr).run();
  }
  return 0;
}

}  // namespace lazycube::cli
