// lazycube bench URL --forecast spec.json [--batch-size N --shuffle S --seed K --rollout R ...]:
// batches of forecast samples (docs/forecast.md) over URL, the specification read from the JSON
// file (the keys of lazycube.ForecastSamples); reports samples/s, the bytes read, the time to the
// first batch (from before opening: open, the validity index, the first batch) and peak RSS.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "progress.hpp"
#include "lazycube/batch/forecast.hpp"
#include "lazycube/cache/chunk_cache.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "util/diagnostics.hpp"

namespace lazycube::cli {

namespace {
namespace forecast_bench {

using Clock = std::chrono::steady_clock;
using ordered_json = nlohmann::ordered_json;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

ordered_json read_spec(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageProblem("--forecast: cannot read '" + path + "'");
  try {
    return ordered_json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw UsageProblem("--forecast: '" + path + "' is not JSON: " + e.what());
  }
}

}  // namespace forecast_bench
}  // namespace

int run_forecast_bench(const BenchArgs& args) {
  using namespace forecast_bench;
  if (!args.variables.empty() || !args.input_dims.empty() || !args.input_overlap.empty())
    throw UsageProblem("--forecast takes its variables and offsets from the specification: drop --variables, "
                       "--input-dims and --input-overlap");
  if (args.batch_size == 0) throw UsageProblem("--batch-size must be at least 1");
  if (args.epochs == 0) throw UsageProblem("--epochs must be at least 1");
  const ordered_json document = read_spec(args.forecast);
  batch::ForecastSpec spec;
  try {
    spec = batch::ForecastSpec::from_json(document, {""});
  } catch (const UsageError& e) {
    throw UsageProblem(std::string("--forecast ") + args.forecast + ": " + e.what());
  }
  const batch::Shuffle shuffle = batch::parse_shuffle(args.shuffle);
  if (args.rollout > spec.target_offsets.size())
    throw UsageProblem("--rollout " + std::to_string(args.rollout) + " exceeds the " +
                       std::to_string(spec.target_offsets.size()) + " lead times of target_offsets");
  const OpenOptions open_options = open_options_of(args.open);

  const auto t_start = Clock::now();
  Dataset ds = open(args.url, open_options);
  const auto t_opened = Clock::now();
  batch::ForecastRuntime runtime;
  runtime.cache = std::make_shared<ChunkCache>(args.cache_mb * std::uint64_t{1024 * 1024});
  std::vector<std::pair<std::string, Dataset>> streams;
  streams.emplace_back("", std::move(ds));
  batch::ForecastSampler sampler(std::move(streams), spec, runtime);
  const auto t_constructed = Clock::now();

  std::uint64_t batches = 0, samples = 0, bytes = 0, epochs_run = 0;
  std::optional<Clock::time_point> t_first;
  auto t_last = t_constructed;
  std::uint64_t first_samples = 0;
  std::vector<std::uint64_t> total_per_epoch;
  const batch::OrderPlanning planning = sampler.planning();
  auto epoch_batches = [&](std::uint64_t e) {
    return batch::EpochBatches(sampler.size(), shuffle, args.seed, e, {}, args.batch_size, false, planning);
  };
  for (std::uint64_t e = 0; e < args.epochs; ++e) total_per_epoch.push_back(epoch_batches(e).rank_batches());
  std::uint64_t total = 0;
  for (auto n : total_per_epoch) total += n;
  if (args.max_batches > 0 && args.max_batches < total) total = args.max_batches;
  ProgressBar progress(args.progress, total, "batches");
  batch::BlockPlan blocks;
  std::uint64_t fetch_ahead_bytes = 0;
  batch::ForecastEpochOptions epoch_options;
  epoch_options.rollout = args.rollout;
  epoch_options.prefetch = args.prefetch;
  if (args.fetch_ahead_mb) epoch_options.fetch_ahead_bytes = *args.fetch_ahead_mb * std::uint64_t{1024 * 1024};
  for (std::uint64_t e = 0; e < args.epochs && batches < total; ++e) {
    ++epochs_run;
    batch::ForecastEpoch epoch(sampler, epoch_batches(e), epoch_options);
    blocks = epoch.batches().blocks();
    fetch_ahead_bytes = epoch.fetch_ahead_bytes();
    if (e == 0)
      for (const auto& w : epoch.batches().warnings()) diagnostics::warn(w);
    while (batches < total) {
      std::optional<batch::ForecastBatch> b = epoch.next();
      if (!b) break;
      t_last = Clock::now();
      ++batches;
      samples += b->samples.size();
      for (const auto& s : b->streams) {
        bytes += s.inputs.nbytes + s.targets.nbytes + (s.forcings ? s.forcings->nbytes : 0);
      }
      if (!t_first) {
        t_first = t_last;
        first_samples = b->samples.size();
      }
      progress.update(batches);
    }
  }
  progress.finish();

  const CacheStats cs = sampler.cache()->stats();
  const double seconds = seconds_between(t_constructed, t_last);
  const double first_s = t_first ? seconds_between(t_start, *t_first) : 0.0;
  const double steady_s = t_first ? seconds_between(*t_first, t_last) : 0.0;
  ordered_json j;
  j["batches"] = batches;
  j["samples"] = samples;
  j["seconds"] = seconds;
  j["samples_per_s"] = seconds > 0 ? double(samples) / seconds : 0.0;
  j["steady_samples_per_s"] = steady_s > 0 ? double(samples - first_samples) / steady_s : 0.0;
  j["bytes_read"] = cs.bytes_fetched;
  j["bytes_delivered"] = bytes;
  j["time_to_first_batch_s"] = first_s;
  j["open_s"] = seconds_between(t_start, t_opened);
  j["construct_s"] = seconds_between(t_opened, t_constructed);
  j["index_loaded"] = sampler.index_loaded();
  j["samples_per_epoch"] = sampler.size();
  j["anchors"] = sampler.anchor_times().size();
  j["excluded"] = {{"out_of_range", sampler.excluded().out_of_range},
                   {"time_absent", sampler.excluded().time_absent},
                   {"missing_values", sampler.excluded().missing_values}};
  j["epochs"] = epochs_run;
  j["batch_size"] = args.batch_size;
  j["shuffle"] = batch::shuffle_name(shuffle);
  j["seed"] = args.seed;
  j["rollout"] = args.rollout == 0 ? spec.target_offsets.size() : args.rollout;
  j["peak_rss_mb"] = peak_rss_mib();
  j["cache"] = {{"budget_mb", args.cache_mb}, {"hits", cs.hits}, {"misses", cs.misses},
                {"evictions", cs.evictions}, {"bytes_fetched", cs.bytes_fetched},
                {"bytes_unique", cs.bytes_unique}, {"peak_bytes_cached", cs.peak_bytes_cached}};
  // What the epochs cost (docs/forecast.md "What an epoch costs"): chunks fetched and decoded
  // (each a request to the store, or one read of a shard's inner chunk), their bytes, and the
  // egress ratio: bytes fetched / bytes of the distinct chunks the samples need.
  j["fetched"] = fetched_json(cs);
  j["plan"] = {{"block_samples", blocks.block_samples}, {"active_blocks", blocks.active_blocks}};
  j["prefetch"] = args.prefetch;
  j["fetch_ahead_mb"] = static_cast<double>(fetch_ahead_bytes) / double(1 << 20);
  j["spec"] = spec.to_json();
  if (args.json) {
    add_warnings(j);
    std::cout << j.dump() << "\n";
    return 0;
  }
  print_warnings();
  char line[256];
  auto& out = std::cout;
  out << "lazycube bench " << args.url << " --forecast " << args.forecast << "\n";
  std::snprintf(line, sizeof line, "  samples        %llu per epoch (%llu anchors; excluded: %llu out of range, %llu time absent, %llu missing values)\n",
                static_cast<unsigned long long>(sampler.size()),
                static_cast<unsigned long long>(sampler.anchor_times().size()),
                static_cast<unsigned long long>(sampler.excluded().out_of_range),
                static_cast<unsigned long long>(sampler.excluded().time_absent),
                static_cast<unsigned long long>(sampler.excluded().missing_values));
  out << line;
  std::snprintf(line, sizeof line, "  batches        %llu of %llu samples, shuffle %s (seed %llu), rollout %llu\n",
                static_cast<unsigned long long>(batches), static_cast<unsigned long long>(args.batch_size),
                batch::shuffle_name(shuffle), static_cast<unsigned long long>(args.seed),
                static_cast<unsigned long long>(j["rollout"].get<std::uint64_t>()));
  out << line;
  std::snprintf(line, sizeof line, "  throughput     %.1f samples/s (%.3f s; open %.3f s, construct %.3f s%s)\n",
                j["samples_per_s"].get<double>(), seconds, j["open_s"].get<double>(), j["construct_s"].get<double>(),
                sampler.index_loaded() ? ", validity index from its cache" : "");
  out << line;
  std::snprintf(line, sizeof line, "  bytes read     %.1f MB decoded (%.1f MB delivered)\n", double(cs.bytes_fetched) / 1e6,
                double(bytes) / 1e6);
  out << line;
  out << fetched_line(cs);
  if (blocks.active_blocks > 0) {
    std::snprintf(line, sizeof line, "  epoch plan     blocks of %llu samples, %llu active at once\n",
                  static_cast<unsigned long long>(blocks.block_samples),
                  static_cast<unsigned long long>(blocks.active_blocks));
    out << line;
  }
  std::snprintf(line, sizeof line, "  prefetch       %llu batches assembled at once, fetch-ahead %.0f MiB\n",
                static_cast<unsigned long long>(args.prefetch), static_cast<double>(fetch_ahead_bytes) / double(1 << 20));
  out << line;
  std::snprintf(line, sizeof line, "  first batch    %.3f s after start\n", first_s);
  out << line;
  std::snprintf(line, sizeof line, "  peak RSS       %.0f MiB\n", peak_rss_mib());
  out << line;
  return 0;
}

}  // namespace lazycube::cli
