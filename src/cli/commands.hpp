// The lazycube command-line subcommands. Each returns the process exit status.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "lazycube/cache/chunk_cache.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/dataset/selection.hpp"
#include "lazycube/icechunk/repository.hpp"
#include "lazycube/store/store.hpp"
#include "progress.hpp"

namespace lazycube::cli {

// A command-line mistake (exit status 2), as opposed to a data error (exit status 1).
class UsageProblem : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How info, read and bench open their URL (--option, --engine, --mask-valid-range, Icechunk's
// --branch/--tag/--snapshot and --virtual/--virtual-option): one set of flags (add_open_flags
// in main.cpp; log takes --option and the version flags), one OpenOptions (open_options_of).
struct OpenArgs {
  std::vector<std::string> options;  // storage options, KEY=VALUE
  std::string engine;                // "" or a registered format's engine (format/registry.hpp)
  bool mask_valid_range = false;     // OpenOptions::mask_valid_range
  icechunk::VersionRef version;      // --branch, --tag, --snapshot (at most one)
  std::vector<std::string> virtual_prefixes;  // --virtual PREFIX (repeatable)
  std::vector<std::string> virtual_options;   // --virtual-option PREFIX:KEY=VALUE (repeatable)
  std::string missing_chunks;                  // --missing-chunks fill|error (Zarr's format option; "": not given)
  bool struct_fields = false;                  // --struct-fields (OpenOptions::struct_fields)
};
// OpenOptions from the flags; UsageProblem for a malformed --option or --virtual-option, or a
// --virtual-option whose prefix no --virtual authorises.
OpenOptions open_options_of(const OpenArgs& args);

struct InfoArgs {
  std::string url;
  bool json = false;
  bool stats = false;  // print the store's traffic counters afterwards
  OpenArgs open;
};
int run_info(const InfoArgs& args);
// "[2, 3]": a shape as the commands print it.
std::string shape_text(const Shape& shape);

struct ReadArgs {
  std::string url;
  std::string variable;             // empty: the only variable
  std::vector<std::string> isel;    // DIM=INDEX or DIM=START:STOP[:STEP]
  bool raw = false;
  std::string output;
  OpenArgs open;
  ProgressMode progress = ProgressMode::Auto;
};
int run_read(const ReadArgs& args);

struct BenchArgs {
  std::string url;
  std::vector<std::string> variables;      // V1,V2 texts (repeatable), stacked as channels
  std::vector<std::string> input_dims;     // DIM=N,... texts (repeatable)
  std::vector<std::string> input_overlap;  // DIM=N,... texts (repeatable)
  std::uint64_t batch_size = 32;
  std::string shuffle = "none";
  std::uint64_t seed = 0;
  std::uint64_t epochs = 1;
  std::uint64_t max_batches = 0;  // 0: no limit; counted across epochs
  std::uint64_t cache_mb = 1024;  // MiB; 0: cache off
  std::uint64_t prefetch = 2;
  std::optional<std::uint64_t> fetch_ahead_mb;  // MiB; 0: off; unset: from the cache budget
  std::string forecast;           // a ForecastSpec JSON file: forecast samples instead of windows
  std::uint64_t rollout = 0;      // --forecast: lead times per sample (0: all)
  bool json = false;
  OpenArgs open;
  ProgressMode progress = ProgressMode::Auto;
};
int run_bench(const BenchArgs& args);
// bench --forecast: batches of forecast samples (forecast_bench.cpp).
int run_forecast_bench(const BenchArgs& args);
// The process's peak resident set so far, MiB.
double peak_rss_mib();

struct LogArgs {
  std::string url;
  bool json = false;
  OpenArgs open;  // --option and the version flags
};
int run_log(const LogArgs& args);

struct ConvertArgs {
  std::string src;
  std::string dst;
  OpenArgs open;                        // how SRC is opened
  std::vector<std::string> variables;   // V1,V2 texts; empty: every variable
  std::vector<std::string> isel;        // DIM=INDEX or DIM=START:STOP[:STEP]
  std::vector<std::string> chunks;      // DIM=N,... texts
  std::vector<std::string> shards;      // DIM=N,... texts
  std::string codec;                    // "" = the format's default
  int format = 3;
  bool resume = false;
  bool overwrite = false;
  std::vector<std::string> dst_options;  // storage options of DST, KEY=VALUE
  std::string dask;                      // a Dask scheduler address: the regions run there
  ProgressMode progress = ProgressMode::Auto;
};
int run_convert(const ConvertArgs& args);

struct StatsArgs {
  std::string url;
  std::vector<std::string> variables;  // V1,V2 texts; empty: every numeric data variable
  std::vector<std::string> keep;       // dims not reduced (--keep, repeatable, or DIM,DIM)
  std::vector<std::string> dims;       // dims reduced (--dims DIM,...); the others are kept
  std::string output;                  // the stats JSON; empty: stdout
  std::string netcdf;                  // also write the statistics as a NetCDF-4 file here
  std::string zarr;                    // also write the statistics as a Zarr v2 store here
  OpenArgs open;
  ProgressMode progress = ProgressMode::Auto;
};
int run_stats(const StatsArgs& args);

struct RefsArgs {
  std::string file;    // NetCDF4/HDF5 file
  std::string output;  // the kerchunk JSON to write
  std::string target;  // URL/path written into the refs; empty: relative to the output's directory
};
int run_refs(const RefsArgs& args);

// An Icechunk snapshot as JSON: {"id", "written_at" (ISO 8601 UTC), "message"}.
nlohmann::ordered_json snapshot_json(const icechunk::SnapshotInfo& snapshot);
// Microseconds since the Unix epoch as ISO 8601 UTC: "2024-05-03T12:34:56.123456Z".
std::string iso_utc(std::uint64_t microseconds);

// Variables given as node paths inside a Zarr/Icechunk hierarchy ("group1/a"; read's VARIABLE,
// bench's --variables): sets `options.group` and returns the plain names. One path opens that
// array alone (the other arrays of its group need not share its dims); several must share their
// group, which is opened. Names without '/', and any name of a GDAL file (whose variables of
// subgroups are named "group/var"), are returned as given. UsageProblem for paths in different
// groups, or mixed with plain names.
std::vector<std::string> node_path_variables(const std::string& url, const std::vector<std::string>& names,
                                             OpenOptions& options);

// Moves the library's pending warnings (util/diagnostics.hpp) into `out["warnings"]`, when there
// are any: --json output carries them instead of stderr.
void add_warnings(nlohmann::ordered_json& out);

// What the chunk cache fetched, for bench's --json ("fetched": requests, bytes, bytes_needed,
// egress_ratio) and its report line (fetch_report.cpp).
nlohmann::ordered_json fetched_json(const CacheStats& cs);
std::string fetched_line(const CacheStats& cs);

// Prints a warning on stderr: "lazycube: warning: TEXT".
void print_warning(const std::string& text);
// Prints the library's pending warnings (print_warning each).
void print_warnings();

// Storage options from "KEY=VALUE" texts; UsageProblem on a text without '=' or a repeated key.
StoreOptions parse_storage_options(const std::vector<std::string>& texts);

// Parses "DIM=5", "DIM=-1", "DIM=2:10", "DIM=:10", "DIM=5:", "DIM=::2", "DIM=10:0:-1".
// UsageProblem on malformed text.
std::pair<std::string, Indexer> parse_isel(const std::string& text);

// A whole decimal integer ("+" allowed); UsageProblem "OPTION 'WHOLE': 'S' is not an integer".
std::int64_t parse_integer_arg(std::string_view s, const std::string& option, const std::string& whole);

// "a,b,c" texts (each may hold several, comma-separated) -> names in order. UsageProblem on an
// empty name or one given twice.
std::vector<std::string> parse_name_list(const std::vector<std::string>& texts, const std::string& option);

// "DIM=N,DIM=N" texts (each may hold several pairs; the option may be repeated) -> ordered
// (dim, N) pairs. UsageProblem naming the text on a missing '=', an empty dim, a non-integer,
// a dim given twice, or (when `min` is set) a value below `min`.
// convert's --chunks / --shards: DIM=N (one length) or DIM=[N,N,...] (the edge lengths of a
// rectilinear grid), comma-separated.
struct DimLengths {
  std::map<std::string, std::uint64_t> lengths;
  std::map<std::string, std::vector<std::uint64_t>> edges;
};
DimLengths parse_dim_lengths(const std::vector<std::string>& texts, const std::string& option);
std::vector<std::pair<std::string, std::int64_t>> parse_dim_values(
    const std::vector<std::string>& texts, const std::string& option, std::optional<std::int64_t> min);

}  // namespace lazycube::cli
