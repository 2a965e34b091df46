// lazycube convert SRC DST [--chunks DIM=N,...] [--shards DIM=N,...] [--codec TEXT]
//   [--variables V1,V2] [--isel DIM=...]... [--format 2|3] [--resume] [--overwrite]
//   [--dst-option KEY=VALUE]... [open flags for SRC] [--progress|--no-progress]
#include <iostream>

#include "commands.hpp"
#include "lazycube/dataset/zarr_output.hpp"
#include "lazycube/util/text.hpp"
#include "progress.hpp"

namespace lazycube::cli {

namespace {

std::map<std::string, std::uint64_t> dim_lengths(const std::vector<std::string>& texts, const std::string& option) {
  std::map<std::string, std::uint64_t> out;
  for (const auto& [dim, n] : parse_dim_values(texts, option, 1)) out.emplace(dim, static_cast<std::uint64_t>(n));
  return out;
}

// The source as the conversion sees it: the variables asked for (with the coordinates of their
// dims) and the --isel selection, opened raw so values are copied as stored.
Dataset source_of(const ConvertArgs& args) {
  OpenOptions options = open_options_of(args.open);
  options.decode_cf = false;
  Dataset ds = open(args.src, options);
  if (!args.variables.empty()) {
    const auto wanted = parse_name_list(args.variables, "--variables");
    ds = ds.subset(wanted);
  }
  Indexers indexers;
  for (const auto& text : args.isel) {
    auto [dim, indexer] = parse_isel(text);
    if (indexers.count(dim) != 0) throw UsageProblem("--isel given twice for dim '" + dim + "'");
    indexers.emplace(std::move(dim), indexer);
  }
  return indexers.empty() ? ds : ds.isel(indexers);
}

}  // namespace

int run_convert(const ConvertArgs& args) {
  ZarrOutputOptions options;
  options.zarr_format = args.format;
  options.chunks = dim_lengths(args.chunks, "--chunks");
  options.shards = dim_lengths(args.shards, "--shards");
  options.codec = args.codec;
  options.storage_options = parse_storage_options(args.dst_options);
  options.overwrite = args.overwrite;
  options.resume = args.resume;
  ZarrOutput output(source_of(args), args.dst, options);
  std::uint64_t total = 0;
  for (std::uint64_t r = 0; r < output.region_count(); ++r) total += output.region_bytes(r);
  ProgressBar progress(args.progress, total, "MB", 1e6);
  output.run([&](std::uint64_t done, std::uint64_t) { progress.update(done); });
  progress.finish();
  return 0;
}

}  // namespace lazycube::cli
