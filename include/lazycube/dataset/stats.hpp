// Normalisation statistics of variables in one parallel streaming pass: count, mean, std, min,
// max and NaN count per variable, reduced over all dims except the kept ones (`keep`), NaN-aware
// (NaNs are counted and skipped, as numpy's nanmean/nanstd and xarray's skipna=True).
//
// The variable is read in chunk-aligned blocks through Variable::read_windows_into (so decoded
// by the one CF policy), on the thread pool; each block yields partials (count, mean, M2, min,
// max, nan count) per kept index, computed in float64 (two passes over each contiguous run of
// reduced elements), and the partials are merged with Chan et al.'s formula. std is the
// population standard deviation (ddof = 0, numpy's default): sqrt(M2 / count).
//
// The JSON form (stats_to_json / stats_from_json) is what `lazycube stats -o` writes and what
// BatchGenerator's normalisation reads; docs/statistics.md documents it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "lazycube/dataset/dataset.hpp"

namespace lazycube {

// The statistics of one variable: one value per element of the kept dims (C order over
// `shape`; a single value when no dim is kept). With count 0 (all NaN), mean, std, min and max
// are NaN.
struct VariableStats {
  std::string name;
  std::vector<std::string> dims;  // kept dims, in the variable's order
  Shape shape;                    // their sizes
  std::vector<std::uint64_t> count;      // non-NaN values
  std::vector<std::uint64_t> nan_count;  // NaN values
  std::vector<double> mean, std, min, max;
  std::uint64_t size() const { return shape_size(shape); }
};

struct StatsOptions {
  // Variables to compute (empty: every data variable of a numeric dtype).
  std::vector<std::string> variables;
  // Dims not reduced (empty: reduce over all). Each must be a dim of the dataset
  // (SelectionError otherwise); a variable keeps those of them it has.
  std::vector<std::string> keep;
  // Called from worker threads (one call at a time) after each block: bytes read so far, total.
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;
};

// The kept dims when `reduced` are the dims reduced (`dims=` of lazycube.stats, `--dims` of
// the CLI): the dataset's other dims, in dataset order. SelectionError for an unknown dim.
std::vector<std::string> kept_dims(const Dataset& dataset, const std::vector<std::string>& reduced);

// Statistics of the chosen variables, in the order asked (dataset order by default).
// NotFound for an unknown variable, SelectionError for an unknown kept dim, UsageError for a
// variable whose dtype is not numeric (bool, integers, floats).
std::vector<VariableStats> compute_stats(const Dataset& dataset, const StatsOptions& options = {});
// One variable; `keep` names dims of the variable (SelectionError otherwise).
VariableStats compute_stats(const Variable& variable, const std::vector<std::string>& keep,
                            const std::function<void(std::uint64_t, std::uint64_t)>& progress = {});

// {"format": "lazycube-stats", "version": 1, "ddof": 0, "variables": {NAME: {"dims": [...],
// "shape": [...], "count", "nan_count", "mean", "std", "min", "max"}}}: each statistic a number
// when no dim is kept, else nested lists over the kept dims; NaN written as null.
nlohmann::ordered_json stats_to_json(const std::vector<VariableStats>& stats);
// The inverse; UsageError naming what is wrong (format, variable, key, shape) otherwise.
std::vector<VariableStats> stats_from_json(const nlohmann::json& json);
// Reads a stats JSON file (NotFound / UsageError naming the path).
std::vector<VariableStats> read_stats_file(const std::string& path);

// The statistics as an in-memory Dataset, for writing as Zarr (ZarrOutput) or NetCDF: per
// variable V the arrays V_count, V_nan_count (uint64), V_mean, V_std, V_min, V_max (float64)
// over V's kept dims (0-d when none are kept). Attributes say what each holds (std: ddof 0).
Dataset stats_dataset(const std::vector<VariableStats>& stats);

}  // namespace lazycube
