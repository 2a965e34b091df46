// lazycube read URL [VARIABLE | GROUP/ARRAY] [--isel DIM=...]... [--raw] [--mask-valid-range] [--progress|--no-progress] -o OUT.npy
#include <algorithm>
#include <iostream>

#include "commands.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "util/npy.hpp"
#include "util/text.hpp"
#include "progress.hpp"

namespace lazycube::cli {

namespace {

// At most this many progress steps: slabs along the first dim, each whole chunks of it.
constexpr std::uint64_t kMaxSlabs = 100;

// Reads `variable` slab by slab along its first dim, advancing `progress` after each slab.
// The same values as Variable::read(): a slab is a selection of the selection.
NDArray read_with_progress(const Variable& variable, ProgressBar& progress) {
  NDArray out;
  out.dtype = variable.dtype();
  out.shape = variable.shape();
  const std::uint64_t row_bytes = (out.size() / out.shape[0]) * out.dtype.itemsize;
  out.data.resize(out.size() * out.dtype.itemsize);
  const std::uint64_t n0 = out.shape[0];
  const std::uint64_t chunk0 = std::max<std::uint64_t>(1, variable.chunks().empty() ? 1 : variable.chunks()[0]);
  const std::uint64_t min_rows = (n0 + kMaxSlabs - 1) / kMaxSlabs;
  const std::uint64_t slab = (std::max(min_rows, chunk0) + chunk0 - 1) / chunk0 * chunk0;
  const std::string& dim = variable.dims()[0];
  for (std::uint64_t begin = 0; begin < n0; begin += slab) {
    const std::uint64_t end = std::min(n0, begin + slab);
    const Variable part = variable.isel({{dim, Slice{static_cast<std::int64_t>(begin), static_cast<std::int64_t>(end)}}});
    part.read_into(out.data.span().subspan(begin * row_bytes, (end - begin) * row_bytes));
    progress.update(end * row_bytes);
  }
  return out;
}

}  // namespace

int run_read(const ReadArgs& args) {
  Indexers indexers;
  for (const auto& text : args.isel) {
    auto [dim, indexer] = parse_isel(text);
    if (indexers.count(dim) != 0) throw UsageProblem("--isel given twice for dim '" + dim + "'");
    indexers.emplace(std::move(dim), indexer);
  }
  OpenOptions options = open_options_of(args.open);
  options.decode_cf = !args.raw;
  std::string name = args.variable;
  if (!name.empty()) name = node_path_variables(args.url, {name}, options).front();
  const Dataset ds = open(args.url, options);
  if (name.empty()) {
    const auto names = ds.variable_names();
    if (names.size() != 1)
      throw UsageProblem("'" + args.url + "' holds several variables; name one of: " +
                         join_names(names));
    name = names.front();
  }
  const Variable variable = ds.variable(name).isel(indexers);
  const std::uint64_t nbytes = variable.size() * variable.dtype().itemsize;
  ProgressBar progress(args.progress, nbytes, "MB", 1e6);
  // Slab by slab only when a bar may be drawn (and there is something to split): one read
  // otherwise, as the library does it.
  const bool slabs = progress.enabled() && variable.ndim() > 0 && nbytes > 0 &&
                     !variable.dtype().is_variable_length();
  const NDArray values = slabs ? read_with_progress(variable, progress) : variable.read();
  progress.finish();
  npy::write_file(args.output, values);
  return 0;
}

}  // namespace lazycube::cli
