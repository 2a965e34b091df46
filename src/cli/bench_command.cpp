// lazycube bench URL --variables V1,V2 --input-dims DIM=N,... [...]: iterates training batches
// (stacked mode: batch_size windows x variables as channels) and reports the throughput, time
// to first batch, cache behaviour and peak RSS.
//
// Clocks: `time_to_first_batch_s` runs from before opening the dataset to the first next()
// returning (open + generator construction + first batch). `seconds`, and the rates derived
// from it, run from the start of the generator's construction to the last batch returned (the
// open is excluded: it is metadata only and reported as `open_s`).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "progress.hpp"
#include "lazycube/batch/batch_generator.hpp"
#include "lazycube/cache/chunk_cache.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "util/diagnostics.hpp"
#include "util/text.hpp"

namespace lazycube::cli {

namespace {

using Clock = std::chrono::steady_clock;
using ordered_json = nlohmann::ordered_json;

double since(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double>(t1 - t0).count();
}

std::string dims_text(const batch::DimSizes& dims) {
  std::string out;
  for (const auto& [dim, n] : dims) out += (out.empty() ? "" : ", ") + dim + "=" + std::to_string(n);
  return out;
}

// Checks what the command line names against the dataset, so that the error names the option:
// unknown variables (NotFound, listing the available ones), unknown dims (SelectionError) and
// windows longer than their dim (UsageError).
void check_against(const Dataset& ds, const std::string& url, const std::vector<std::string>& variables,
                   const batch::DimSizes& input_dims) {
  for (const auto& name : variables) {
    if (!ds.contains(name))
      throw NotFound("--variables: no variable '" + name + "' in '" + url + "' (variables: " +
                     join_names(ds.data_var_names()) + ")");
  }
  for (const auto& [dim, length] : input_dims) {
    const auto size = ds.dim_size(dim);
    std::vector<std::string> dims;
    for (const auto& d : ds.dims()) dims.push_back(d.first);
    if (!size)
      throw SelectionError("--input-dims: no dim '" + dim + "' in '" + url + "' (dims: " + join_names(dims) + ")");
    if (length > *size)
      throw UsageError("--input-dims " + dim + "=" + std::to_string(length) + ": window longer than dim '" +
                       dim + "' (size " + std::to_string(*size) + ")");
  }
}

}  // namespace

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

int run_bench(const BenchArgs& args) {
  if (!args.forecast.empty()) return run_forecast_bench(args);
  if (args.variables.empty()) throw UsageProblem("--variables is required (or give --forecast)");
  if (args.input_dims.empty()) throw UsageProblem("--input-dims is required (or give --forecast)");
  if (args.rollout != 0) throw UsageProblem("--rollout applies to --forecast");
  // Everything that can be checked without the data first (usage errors, exit status 2).
  // The flags as the generator's one document (BatchOptions::from_json, the names Python's
  // BatchGenerator takes); the flag -> field mapping is the bench command's only part.
  ordered_json document = ordered_json::object();
  document["variables"] = parse_name_list(args.variables, "--variables");
  ordered_json input_dims = ordered_json::object();
  for (auto& [dim, n] : parse_dim_values(args.input_dims, "--input-dims", 1)) input_dims[dim] = n;
  if (input_dims.empty()) throw UsageProblem("--input-dims names no dim");
  ordered_json input_overlap = ordered_json::object();
  for (auto& [dim, n] : parse_dim_values(args.input_overlap, "--input-overlap", std::nullopt)) {
    if (!input_dims.contains(dim)) throw UsageProblem("--input-overlap: dim '" + dim + "' is not in --input-dims");
    input_overlap[dim] = n;
  }
  document["input_dims"] = std::move(input_dims);
  document["input_overlap"] = std::move(input_overlap);
  if (args.batch_size == 0) throw UsageProblem("--batch-size must be at least 1");
  if (args.epochs == 0) throw UsageProblem("--epochs must be at least 1");
  document["batch_size"] = args.batch_size;
  document["shuffle"] = args.shuffle;
  document["seed"] = args.seed;
  document["prefetch"] = args.prefetch;
  document["cache_bytes"] = args.cache_mb * std::uint64_t{1024 * 1024};
  if (args.fetch_ahead_mb) document["fetch_ahead_bytes"] = *args.fetch_ahead_mb * std::uint64_t{1024 * 1024};
  batch::BatchOptions options;
  try {
    options = batch::BatchOptions::from_json(document);
  } catch (const UsageError& e) {
    throw UsageProblem(std::string("--") + e.what());  // e.g. "--shuffle: unknown value ..."
  }
  OpenOptions open_options = open_options_of(args.open);
  options.variables = node_path_variables(args.url, options.variables, open_options);

  const auto t_start = Clock::now();
  Dataset ds = open(args.url, open_options);
  check_against(ds, args.url, options.variables, options.input_dims);
  const auto t_construct = Clock::now();
  batch::BatchGenerator generator(std::move(ds), options);
  const auto t_constructed = Clock::now();
  // The generator's own warnings (e.g. random shuffle's read amplification) are reported like
  // the libraries': on stderr, or under "warnings" with --json.
  for (const auto& w : generator.warnings()) diagnostics::warn(w);

  const std::uint64_t per_epoch = generator.size();
  std::uint64_t total = per_epoch * args.epochs;
  if (args.max_batches > 0 && args.max_batches < total) total = args.max_batches;
  ProgressBar progress(args.progress, total, "batches");

  std::uint64_t batches = 0, windows = 0, bytes = 0, epochs_run = 0;
  Shape x_shape;
  std::string x_dtype;
  std::vector<std::string> x_dims;
  std::optional<Clock::time_point> t_first;
  std::uint64_t first_windows = 0;
  auto t_last = t_constructed;
  std::vector<double> epoch_seconds;  // wall time of each epoch: the first pays the cold cache
  for (std::uint64_t e = 0; e < args.epochs && (args.max_batches == 0 || batches < args.max_batches); ++e) {
    generator.set_epoch(e);
    ++epochs_run;
    const auto t_epoch = Clock::now();
    while (args.max_batches == 0 || batches < args.max_batches) {
      std::optional<batch::Batch> b = generator.next();
      if (!b) break;
      t_last = Clock::now();
      ++batches;
      windows += b->windows.size();
      bytes += b->nbytes();
      if (!t_first) {
        t_first = t_last;
        first_windows = b->windows.size();
        if (!b->arrays.empty()) {
          x_shape = b->arrays.front().shape;
          x_dtype = b->arrays.front().dtype.numpy_str();
          x_dims = b->arrays.front().dims;
        }
      }
      progress.update(batches);
    }
    epoch_seconds.push_back(since(t_epoch, Clock::now()));
  }
  progress.finish();

  const CacheStats cs = generator.cache()->stats();
  // The budget at the end (one left unset grows over an epoch: docs/batching.md "Fetch-ahead").
  const std::uint64_t fetch_ahead_bytes = generator.fetch_ahead_bytes();
  const double seconds = since(t_construct, t_last);
  auto rate = [&](double amount) { return seconds > 0 ? amount / seconds : 0.0; };
  const double first_s = t_first ? since(t_start, *t_first) : 0.0;
  const double steady_s = t_first ? since(*t_first, t_last) : 0.0;
  const double steady_windows_per_s = steady_s > 0 ? double(windows - first_windows) / steady_s : 0.0;
  const double rss = peak_rss_mib();

  ordered_json j;
  // The keys the issue fixes, in this order; more follow.
  j["batches"] = batches;
  j["windows"] = windows;
  j["seconds"] = seconds;
  j["batches_per_s"] = rate(double(batches));
  j["windows_per_s"] = rate(double(windows));
  j["mb_per_s"] = rate(double(bytes) / 1e6);
  j["time_to_first_batch_s"] = first_s;
  j["cache_hit_rate"] = cs.hit_rate();
  j["read_amplification"] = cs.read_amplification();
  j["peak_rss_mb"] = rss;
  j["bytes_delivered"] = bytes;
  j["open_s"] = since(t_start, t_construct);
  j["construct_s"] = since(t_construct, t_constructed);
  j["steady_windows_per_s"] = steady_windows_per_s;
  j["epochs"] = epochs_run;
  j["epoch_seconds"] = epoch_seconds;
  j["windows_per_epoch"] = generator.total_windows();
  j["batches_per_epoch"] = per_epoch;
  j["batch_size"] = args.batch_size;
  j["shuffle"] = batch::shuffle_name(options.shuffle);
  j["seed"] = args.seed;
  j["prefetch"] = args.prefetch;
  j["fetch_ahead_mb"] = static_cast<double>(fetch_ahead_bytes) / double(1 << 20);
  j["variables"] = generator.options().variables;
  j["input_dims"] = ordered_json::object();
  for (const auto& [dim, n] : options.input_dims) j["input_dims"][dim] = n;
  j["input_overlap"] = ordered_json::object();
  for (const auto& [dim, n] : options.input_overlap) j["input_overlap"][dim] = n;
  j["x_dims"] = x_dims;
  j["x_shape"] = x_shape;
  j["x_dtype"] = x_dtype;
  // the generator's resolved configuration, as Python's generator.options reports it
  j["config"] = ordered_json::parse(generator.state()["config"].dump());
  j["cache"] = {{"budget_mb", args.cache_mb},   {"hits", cs.hits},
                {"misses", cs.misses},          {"evictions", cs.evictions},
                {"bytes_fetched", cs.bytes_fetched}, {"bytes_delivered", cs.bytes_delivered},
                {"bytes_unique", cs.bytes_unique},   {"peak_bytes_cached", cs.peak_bytes_cached},
                {"fetched_ahead", cs.fetched_ahead}, {"fetched_ahead_unused", cs.fetched_ahead_unused}};
  j["fetched"] = fetched_json(cs);

  if (args.json) {
    add_warnings(j);
    std::cout << j.dump() << "\n";
    return 0;
  }
  char line[256];
  auto& out = std::cout;
  out << "lazycube bench " << args.url << "\n";
  out << "  variables      " << join_names(generator.options().variables) << " (channels)\n";
  std::string overlap;
  for (const auto& [dim, n] : options.input_overlap)
    overlap += (overlap.empty() ? ", overlap " : ", ") + dim + "=" + std::to_string(n);
  out << "  windows        " << dims_text(options.input_dims) << overlap << ": "
      << generator.total_windows() << " per epoch\n";
  out << "  batches        " << batches << " of " << args.batch_size << " windows (" << windows << " windows, "
      << epochs_run << (epochs_run == 1 ? " epoch" : " epochs") << ", " << per_epoch << " batches per epoch), "
      << "shuffle " << batch::shuffle_name(options.shuffle) << " (seed " << args.seed << "), prefetch "
      << args.prefetch << "\n";
  if (!x_shape.empty())
    out << "  x              " << x_dtype << " " << shape_text(x_shape) << " (" << join_names(x_dims) << ")\n";
  std::snprintf(line, sizeof line, "  time           %.3f s (open %.3f s, construct %.6f s)\n", seconds,
                since(t_start, t_construct), since(t_construct, t_constructed));
  out << line;
  std::snprintf(line, sizeof line, "  throughput     %.1f batches/s, %.1f windows/s, %.1f MB/s\n",
                rate(double(batches)), rate(double(windows)), rate(double(bytes) / 1e6));
  out << line;
  std::snprintf(line, sizeof line, "  first batch    %.3f s after start\n", first_s);
  out << line;
  if (args.cache_mb == 0)
    std::snprintf(line, sizeof line, "  cache          off (reads bypass it: no hit rate or read amplification)\n");
  else
    std::snprintf(line, sizeof line,
                  "  cache          %llu MiB: hit rate %.1f %%, read amplification %.2f (%llu hits, %llu misses, "
                  "%llu evictions)\n",
                  static_cast<unsigned long long>(args.cache_mb), 100.0 * cs.hit_rate(), cs.read_amplification(),
                  static_cast<unsigned long long>(cs.hits), static_cast<unsigned long long>(cs.misses),
                  static_cast<unsigned long long>(cs.evictions));
  out << line;
  if (fetch_ahead_bytes > 0) {
    std::snprintf(line, sizeof line, "  fetch-ahead    %.0f MiB: %llu chunks fetched ahead, %llu never used\n",
                  static_cast<double>(fetch_ahead_bytes) / double(1 << 20),
                  static_cast<unsigned long long>(cs.fetched_ahead),
                  static_cast<unsigned long long>(cs.fetched_ahead_unused));
    out << line;
  }
  if (args.cache_mb > 0) out << fetched_line(cs);
  std::snprintf(line, sizeof line, "  peak RSS       %.0f MiB\n", rss);
  out << line;
  return 0;
}

}  // namespace lazycube::cli
