// lazycube convert SRC DST [--chunks DIM=N,...] [--shards DIM=N,...] [--codec TEXT]
//   [--variables V1,V2] [--isel DIM=...]... [--format 2|3] [--resume] [--overwrite]
//   [--dst-option KEY=VALUE]... [open flags for SRC] [--progress|--no-progress]
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "lazycube/dataset/zarr_output.hpp"
#include "lazycube/error.hpp"
#include "util/text.hpp"
#include "progress.hpp"

namespace lazycube::cli {

namespace {

// The source as the conversion sees it: the variables asked for (with the coordinates of their
// dims) and the --isel selection. Opened decoded: ZarrOutput copies the values as stored, and
// the decoding tells it which fill value acts as _FillValue.
Dataset source_of(const ConvertArgs& args) {
  OpenOptions options = open_options_of(args.open);
  std::vector<std::string> wanted;
  // Node paths ("group1/array") open their group, as read's VARIABLE and bench's --variables do.
  if (!args.variables.empty())
    wanted = node_path_variables(args.src, parse_name_list(args.variables, "--variables"), options);
  Dataset ds = open(args.src, options);
  if (!wanted.empty()) ds = ds.subset(wanted);
  Indexers indexers;
  for (const auto& text : args.isel) {
    auto [dim, indexer] = parse_isel(text);
    if (indexers.count(dim) != 0) throw UsageProblem("--isel given twice for dim '" + dim + "'");
    indexers.emplace(std::move(dim), indexer);
  }
  return indexers.empty() ? ds : ds.isel(indexers);
}

nlohmann::json indexer_json(const Indexer& indexer) {
  if (const auto* i = std::get_if<std::int64_t>(&indexer)) return *i;
  const Slice& s = std::get<Slice>(indexer);
  return nlohmann::json::array({s.start ? nlohmann::json(*s.start) : nlohmann::json(),
                                s.stop ? nlohmann::json(*s.stop) : nlohmann::json(), s.step});
}

// {dim: length or [edge lengths]}, as lazycube.convert's chunks/shards take them.
nlohmann::json dim_lengths_json(const std::map<std::string, std::uint64_t>& lengths,
                                const std::map<std::string, std::vector<std::uint64_t>>& edges) {
  nlohmann::json out = lengths;
  for (const auto& [dim, list] : edges) out[dim] = list;
  return out;
}

// The conversion as lazycube.writing's command line takes it: every flag parsed here, once.
nlohmann::json dask_request(const ConvertArgs& args, const ZarrOutputOptions& options) {
  const OpenOptions open = open_options_of(args.open);
  const nlohmann::json& formats = open.format_options;
  auto format_option = [&](const char* key) { return formats.contains(key) ? formats[key] : nlohmann::json(); };
  nlohmann::json isel = nlohmann::json::object();
  for (const auto& text : args.isel) {
    auto [dim, indexer] = parse_isel(text);
    if (isel.contains(dim)) throw UsageProblem("--isel given twice for dim '" + dim + "'");
    isel[dim] = indexer_json(indexer);
  }
  auto or_null = [](const std::string& s) { return s.empty() ? nlohmann::json() : nlohmann::json(s); };
  return {{"scheduler", args.dask},
          {"src", args.src},
          {"dst", args.dst},
          {"storage_options", open.storage_options},
          {"engine", or_null(open.engine)},
          {"mask_valid_range", open.mask_valid_range},
          {"branch", format_option("branch")},
          {"tag", format_option("tag")},
          {"snapshot", format_option("snapshot")},
          {"virtual_chunk_containers", format_option("virtual_chunk_containers")},
          {"variables", args.variables.empty() ? nlohmann::json() : nlohmann::json(parse_name_list(args.variables, "--variables"))},
          {"isel", isel},
          {"chunks", dim_lengths_json(options.chunks, options.chunk_edges)},
          {"shards", dim_lengths_json(options.shards, options.shard_edges)},
          {"codec", options.codec},
          {"format", options.zarr_format},
          {"resume", options.resume},
          {"overwrite", options.overwrite},
          {"dst_storage_options", options.storage_options},
          {"progress", args.progress == ProgressMode::On ||
                           (args.progress == ProgressMode::Auto && ::isatty(STDERR_FILENO) == 1)}};
}

// --dask: the conversion runs in Python (lazycube.writing, dask.distributed's client), on the
// interpreter the package was built for ($LAZYCUBE_PYTHON overrides), the build tree's staged
// package first. Its exit status is ours.
int run_on_dask(const nlohmann::json& request) {
#ifdef LAZYCUBE_PYTHON
  std::string python = LAZYCUBE_PYTHON;
#else
  std::string python = "python3";
#endif
  if (const char* env = std::getenv("LAZYCUBE_PYTHON"); env && *env) python = env;
#ifdef LAZYCUBE_PYTHON_STAGE
  if (std::filesystem::exists(std::filesystem::path(LAZYCUBE_PYTHON_STAGE) / "lazycube")) {
    const char* old = std::getenv("PYTHONPATH");
    const std::string path = std::string(LAZYCUBE_PYTHON_STAGE) + (old && *old ? ":" + std::string(old) : "");
    ::setenv("PYTHONPATH", path.c_str(), 1);
  }
#endif
  const std::string text = request.dump();
  std::cout.flush();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error("cannot start " + python + " for --dask");
  if (pid == 0) {
    ::execlp(python.c_str(), python.c_str(), "-m", "lazycube.writing", text.c_str(), static_cast<char*>(nullptr));
    std::cerr << "lazycube: cannot run " << python << " for --dask: " << std::strerror(errno) << "\n";
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 1;
}

}  // namespace

int run_convert(const ConvertArgs& args) {
  ZarrOutputOptions options;
  options.zarr_format = args.format;
  DimLengths chunks = parse_dim_lengths(args.chunks, "--chunks"), shards = parse_dim_lengths(args.shards, "--shards");
  options.chunks = std::move(chunks.lengths);
  options.chunk_edges = std::move(chunks.edges);
  options.shards = std::move(shards.lengths);
  options.shard_edges = std::move(shards.edges);
  options.codec = args.codec;
  options.storage_options = parse_storage_options(args.dst_options);
  options.overwrite = args.overwrite;
  options.resume = args.resume;
  if (!args.dask.empty()) return run_on_dask(dask_request(args, options));
  ZarrOutput output(source_of(args), args.dst, options);
  std::uint64_t total = 0;
  for (std::uint64_t r = 0; r < output.region_count(); ++r) total += output.region_bytes(r);
  ProgressBar progress(args.progress, total, "MB", 1e6);
  output.run([&](std::uint64_t done, std::uint64_t) { progress.update(done); });
  progress.finish();
  return 0;
}

}  // namespace lazycube::cli
