// The `lazycube` executable: subcommand parsing and error reporting. Errors print
// "lazycube: <message>" on stderr; exit status 2 for usage mistakes, 1 for data errors.
#include <CLI/CLI.hpp>

#include <iostream>

#include "commands.hpp"
#include "lazycube/batch/sampler.hpp"
#include "lazycube/error.hpp"
#include "lazycube/format/registry.hpp"

namespace {

int fail(const std::string& message, int status) {
  lazycube::cli::print_warnings();  // what the libraries said before it failed
  std::cerr << "lazycube: " << message << "\n";
  return status;
}

// --option and --branch / --tag / --snapshot (info, read, bench, log): where the store is and,
// for an Icechunk repository, which version of it.
void add_repository_flags(CLI::App* cmd, lazycube::cli::OpenArgs& open) {
  cmd->add_option("--option", open.options, "Storage option KEY=VALUE (repeatable), e.g. max_concurrency=16")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  const CLI::Validator named([](std::string& v) { return v.empty() ? std::string("needs a name, got ''") : ""; },
                             "NAME");
  auto* branch = cmd->add_option("--branch", open.version.branch, "Icechunk repository: read this branch (default: main)")
                     ->check(named);
  auto* tag = cmd->add_option("--tag", open.version.tag, "Icechunk repository: read this tag")->check(named);
  auto* snapshot =
      cmd->add_option("--snapshot", open.version.snapshot, "Icechunk repository: read this snapshot id")->check(named);
  branch->excludes(tag)->excludes(snapshot);
  tag->excludes(snapshot);
}

// The repository flags plus --engine, --mask-valid-range, --virtual, --virtual-option (info,
// read, bench): how the URL is opened (OpenArgs).
void add_open_flags(CLI::App* cmd, lazycube::cli::OpenArgs& open) {
  // The engines are the format registry's (a format added there is an engine here too).
  std::vector<std::string> engines;
  std::string listed;
  for (const auto& f : lazycube::format::registry().formats()) {
    engines.push_back(f.engine);
    listed += (listed.empty() ? "" : ", ") + f.engine;
  }
  cmd->add_option("--engine", open.engine,
                  "the format that reads the URL: " + listed + " (default: recognised from the URL or the store)")
      ->check(CLI::IsMember(engines));
  add_repository_flags(cmd, open);
  // Spelled as the storage option it sets, so that the option table stays the one definition.
  cmd->add_option_function<std::string>(
      "--cache-dir", [&open](const std::string& dir) { open.options.push_back("cache_dir=" + dir); },
      "Keep the bytes read from network stores in this local directory (storage option cache_dir; "
      "default: LAZYCUBE_CACHE_DIR)");
  cmd->add_option("--missing-chunks", open.missing_chunks,
                  "Zarr chunks absent from the store: fill (read as the fill value, the default) or error (fail "
                  "naming the chunk)")
      ->check(CLI::IsMember({"fill", "error"}));
  cmd->add_flag("--struct-fields", open.struct_fields,
                "Arrays of records (Zarr v3 struct): one variable per field, named ARRAY.FIELD (ARRAY.A.B nested), "
                "instead of one variable of records");
  cmd->add_flag("--mask-valid-range", open.mask_valid_range,
                "Mask stored values outside valid_range / valid_min / valid_max to NaN (CF, as netCDF4-python)");
  cmd->add_option("--virtual", open.virtual_prefixes,
                  "Icechunk repository: authorise reading virtual chunks under this URL prefix, e.g. s3://bucket/ "
                  "(repeatable)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--virtual-option", open.virtual_options,
                  "Storage option of a --virtual container: PREFIX:KEY=VALUE (repeatable), e.g. "
                  "s3://bucket/:endpoint_url=http://127.0.0.1:9000")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

// --progress / --no-progress (ProgressMode::Auto when neither is given).
void add_progress_flags(CLI::App* cmd, lazycube::cli::ProgressMode& mode) {
  using lazycube::cli::ProgressMode;
  auto* on = cmd->add_flag_callback(
      "--progress", [&mode] { mode = ProgressMode::On; },
      "Show a progress bar on stderr even when it is not a terminal (default: on a terminal, for operations "
      "longer than a second)");
  auto* off = cmd->add_flag_callback("--no-progress", [&mode] { mode = ProgressMode::Off; }, "Never show a progress bar");
  on->excludes(off);
}

// The registered window orders, for --shuffle.
std::vector<std::string> shuffle_orders() {
  std::vector<std::string> names;
  for (const lazycube::batch::Shuffle s : lazycube::batch::registered_shuffles()) names.emplace_back(s.name());
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace lazycube::cli;
  CLI::App app{"lazycube: read Zarr data cubes lazily", "lazycube"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("lazycube ") + LAZYCUBE_VERSION, "Print the version and exit");

  InfoArgs info;
  auto* info_cmd = app.add_subcommand("info", "Show dims, coordinates, variables and attributes");
  info_cmd->add_option("URL", info.url, "Zarr group or array, or NetCDF/HDF5/GRIB file (path or URL)")->required();
  add_open_flags(info_cmd, info.open);
  info_cmd->add_flag("--json", info.json, "Print JSON instead of text");
  info_cmd->add_flag("--stats", info.stats, "Print the store's request/retry/latency counters afterwards");

  ReadArgs read;
  std::vector<std::string> isel;
  auto* read_cmd = app.add_subcommand("read", "Write a (selected) variable as a NumPy .npy file");
  read_cmd->add_option("URL", read.url, "Zarr group or array, or NetCDF/HDF5/GRIB file (path or URL)")->required();
  add_open_flags(read_cmd, read.open);
  read_cmd->add_option("VARIABLE", read.variable,
                       "Variable name, or the path of an array inside the hierarchy (group1/array); omit for a "
                       "single array");
  read_cmd->add_option("--isel", isel, "DIM=INDEX or DIM=START:STOP[:STEP] (repeatable)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  read_cmd->add_flag("--raw", read.raw, "Skip CF decoding: stored values and dtype");
  read_cmd->add_option("-o,--output", read.output, "Output .npy path")->required();
  add_progress_flags(read_cmd, read.progress);

  BenchArgs bench;
  auto* bench_cmd = app.add_subcommand(
      "bench", "Iterate training batches (N windows x variables as channels) and report throughput");
  bench_cmd->add_option("URL", bench.url, "Zarr group, or NetCDF/HDF5/GRIB file (path or URL)")->required();
  add_open_flags(bench_cmd, bench.open);
  bench_cmd->add_option("--variables", bench.variables,
                        "Variables stacked as channels, in order: V1,V2,... (required without --forecast)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  bench_cmd->add_option("--input-dims", bench.input_dims,
                        "Window length per dim: DIM=N,DIM=N,... (required without --forecast)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  bench_cmd->add_option("--input-overlap", bench.input_overlap, "Overlap of consecutive windows: DIM=N,... (default 0)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  bench_cmd->add_option("--batch-size", bench.batch_size, "Windows per batch (stacked on a leading sample dim)")
      ->capture_default_str();
  bench_cmd->add_option("--shuffle", bench.shuffle, "Window order: none, random or chunk (chunk-grouped random)")
      ->check(CLI::IsMember(shuffle_orders()))
      ->capture_default_str();
  bench_cmd->add_option("--seed", bench.seed, "Shuffle seed (each epoch derives its own order from it)")
      ->capture_default_str();
  bench_cmd->add_option("--epochs", bench.epochs, "Epochs to run (set_epoch(0..E-1))")->capture_default_str();
  bench_cmd->add_option("--max-batches", bench.max_batches, "Stop after M batches in total, across epochs (0: no limit)")
      ->capture_default_str();
  bench_cmd->add_option("--cache-mb", bench.cache_mb, "Chunk cache budget in MiB (0: off)")->capture_default_str();
  bench_cmd->add_option("--prefetch", bench.prefetch, "Batches assembled ahead of the consumer")->capture_default_str();
  bench_cmd->add_option("--fetch-ahead-mb", bench.fetch_ahead_mb,
                        "Decoded chunks fetched ahead along the epoch's order, in MiB (0: off; default: starts at "
                        "the cache budget less the room batches re-read chunks from, at most 256, and grows "
                        "within that room to 8 s of the batches' reading; --forecast: half the cache, at most 256)");
  bench_cmd->add_option("--forecast", bench.forecast,
                        "Forecast samples instead of windows: a JSON file of the sample specification "
                        "(docs/forecast.md; the keys of lazycube.ForecastSamples) over URL");
  bench_cmd->add_option("--rollout", bench.rollout, "With --forecast: lead times read per sample (0: all)")
      ->capture_default_str();
  bench_cmd->add_flag("--json", bench.json, "Print one JSON object instead of text");
  add_progress_flags(bench_cmd, bench.progress);

  LogArgs log;
  auto* log_cmd = app.add_subcommand("log", "Show an Icechunk repository's history (newest first): id, time, message");
  log_cmd->add_option("URL", log.url, "Icechunk repository (path or URL)")->required();
  add_repository_flags(log_cmd, log.open);
  log_cmd->add_flag("--json", log.json, "Print a JSON list of {id, written_at, message} instead of text");

  ConvertArgs convert;
  auto* convert_cmd = app.add_subcommand(
      "convert", "Copy a dataset (any source lazycube reads) into a new Zarr v3 (default) or v2 store, rechunked");
  convert_cmd->add_option("SRC", convert.src, "Source: Zarr, Icechunk, NetCDF/HDF5/GRIB, kerchunk refs (path or URL)")
      ->required();
  convert_cmd->add_option("DST", convert.dst, "Destination Zarr store (path or URL: s3://, gs://, az://, ...)")->required();
  add_open_flags(convert_cmd, convert.open);
  convert_cmd->add_option("--chunks", convert.chunks, "Output chunk length per dim: DIM=N,...; DIM=[N,N,...] gives a Zarr v3 rectilinear grid's edge lengths "
                          "(default: the source's)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  convert_cmd->add_option("--shards", convert.shards,
                          "Zarr v3 shard length per dim, a multiple of the chunk length: DIM=N,...; DIM=[N,N,...] for "
                          "rectilinear shards (default: no sharding; dims not listed hold one chunk per shard)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  convert_cmd->add_option("--codec", convert.codec,
                          "Compressor: zstd:LEVEL, blosc:CNAME:LEVEL:shuffle|noshuffle|bitshuffle, gzip:LEVEL, "
                          "zlib:LEVEL, lz4, none, joined by +; v3 also bitround:KEEPBITS first, lossy "
                          "(default: zstd:3 for v3, blosc:lz4:5:shuffle for v2)");
  convert_cmd->add_option("--variables", convert.variables, "Variables to copy (with their coordinates): V1,V2,...")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  convert_cmd->add_option("--isel", convert.isel, "DIM=INDEX or DIM=START:STOP[:STEP] (repeatable)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  convert_cmd->add_option("--format", convert.format, "Zarr format of the output: 2 or 3")
      ->check(CLI::IsMember({2, 3}))
      ->capture_default_str();
  auto* resume_flag = convert_cmd->add_flag(
      "--resume", convert.resume, "Continue an interrupted conversion: regions already written and verified are kept");
  auto* overwrite_flag =
      convert_cmd->add_flag("--overwrite", convert.overwrite, "Replace an existing store at DST");
  resume_flag->excludes(overwrite_flag);
  convert_cmd->add_option("--dst-option", convert.dst_options,
                          "Storage option of DST: KEY=VALUE (repeatable), e.g. endpoint_url=http://127.0.0.1:9000")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  convert_cmd->add_option("--dask", convert.dask,
                          "Run the regions as tasks on this Dask distributed scheduler (tcp://HOST:8786): each "
                          "worker writes its own shards; the metadata is written here at the end");
  add_progress_flags(convert_cmd, convert.progress);

  StatsArgs stats;
  auto* stats_cmd = app.add_subcommand(
      "stats", "Normalisation statistics (count, mean, std with ddof 0, min, max, NaN count) per variable, in one "
               "parallel pass, as JSON (what normalize= reads)");
  stats_cmd->add_option("URL", stats.url, "Zarr group, or NetCDF/HDF5/GRIB file (path or URL)")->required();
  add_open_flags(stats_cmd, stats.open);
  stats_cmd->add_option("--variables", stats.variables, "Variables: V1,V2,... (default: every numeric data variable)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  auto* keep_opt = stats_cmd->add_option("--keep", stats.keep,
                                         "A dim not reduced: one value per element of it, e.g. --keep level "
                                         "(repeatable; default: reduce over every dim)")
                       ->allow_extra_args(false)
                       ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  stats_cmd->add_option("--dims", stats.dims, "The dims reduced: DIM,... (the others are kept)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->excludes(keep_opt);
  stats_cmd->add_option("-o,--output", stats.output, "Write the JSON here (default: stdout)");
  auto* nc_opt = stats_cmd->add_option("--netcdf", stats.netcdf,
                                       "Also write the statistics as a NetCDF-4 file (V_mean, V_std, ... over the "
                                       "kept dims; replaced if it exists)");
  stats_cmd->add_option("--zarr", stats.zarr,
                        "Also write the statistics as a Zarr v2 store (V_mean, V_std, ... over the kept dims; "
                        "replaced if it exists)")
      ->excludes(nc_opt);
  add_progress_flags(stats_cmd, stats.progress);

  RefsArgs refs;
  auto* refs_cmd = app.add_subcommand(
      "refs", "Write kerchunk references (JSON) for a NetCDF4/HDF5 file: read it as Zarr with no conversion");
  refs_cmd->add_option("FILE", refs.file, "NetCDF4/HDF5 file")->required();
  refs_cmd->add_option("-o,--output", refs.output, "Output .json path")->required();
  refs_cmd->add_option("--target", refs.target,
                       "Path or URL of FILE written into the references (default: FILE relative to the output's "
                       "directory, or absolute when it lies elsewhere)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(e.what(), 2);
  }

  try {
    int status = 0;
    if (*info_cmd) {
      status = run_info(info);
    } else if (*bench_cmd) {
      status = run_bench(bench);
    } else if (*log_cmd) {
      status = run_log(log);
    } else if (*refs_cmd) {
      status = run_refs(refs);
    } else if (*stats_cmd) {
      status = run_stats(stats);
    } else if (*convert_cmd) {
      status = run_convert(convert);
    } else {
      read.isel = isel;
      status = run_read(read);
    }
    print_warnings();
    return status;
  } catch (const UsageProblem& e) {
    return fail(e.what(), 2);
  } catch (const lazycube::Error& e) {
    return fail(e.what(), 1);
  } catch (const std::exception& e) {
    return fail(e.what(), 1);
  } catch (...) {
    return fail("unexpected error", 1);
  }
}
