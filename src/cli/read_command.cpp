// lazycube read URL [VARIABLE] [--isel DIM=...]... [--raw] -o OUT.npy
#include <iostream>

#include "commands.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/util/npy.hpp"
#include "lazycube/util/text.hpp"

namespace lazycube::cli {

int run_read(const ReadArgs& args) {
  Indexers indexers;
  for (const auto& text : args.isel) {
    auto [dim, indexer] = parse_isel(text);
    if (indexers.count(dim) != 0) throw UsageProblem("--isel given twice for dim '" + dim + "'");
    indexers.emplace(std::move(dim), indexer);
  }
  OpenOptions options;
  options.decode_cf = !args.raw;
  options.storage_options = parse_storage_options(args.options);
  options.engine = args.engine;
  const Dataset ds = open(args.url, options);
  std::string name = args.variable;
  if (name.empty()) {
    const auto names = ds.variable_names();
    if (names.size() != 1)
      throw UsageProblem("'" + args.url + "' holds several variables; name one of: " +
                         join_names(names));
    name = names.front();
  }
  const Variable variable = ds.variable(name).isel(indexers);
  const NDArray values = variable.read();
  npy::write_file(args.output, values);
  return 0;
}

}  // namespace lazycube::cli
