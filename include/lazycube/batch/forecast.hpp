// Forecast training samples (docs/forecast.md): for each anchor time t, the fields at input
// offsets (t-6h, t), the fields at target lead times (t+6h ... t+72h), forcings at all those
// times (variables of the data, or derived ones computed here: solar radiation, year and day
// progress), over one or several streams of different grids and frequencies. Time is matched by
// value against each stream's CF-decoded time coordinate; an anchor is a sample only when every
// time it needs exists in every stream (and, with missing "skip", holds no missing value).
//
// ForecastSpec is the one document of it (the keyword arguments of Python's
// lazycube.ForecastSamples, what `lazycube bench --forecast spec.json` reads); ForecastSampler
// resolves it against the streams' datasets and assembles samples and batches of them;
// the batch layer's epoch planner (EpochBatches, sampler.hpp) deals an epoch of them to ranks
// and workers from their footprint.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "lazycube/batch/batch_generator.hpp"
#include "lazycube/batch/sampler.hpp"
#include "lazycube/batch/window_grid.hpp"
#include "lazycube/cache/chunk_cache.hpp"
#include "lazycube/dataset/dataset.hpp"

namespace lazycube::batch {

// What happens to an anchor whose fields hold missing values (NaN, or CF fill values decoded
// to NaN): skipped (by the validity index), kept (NaN stays, a mask says which values are
// present), or an error when it is assembled.
enum class MissingPolicy { Skip, Keep, Error };

// The variables one stream contributes. A forcing is a variable of the stream (with or without
// the time dim) or a derived name (derived_forcing_names()).
struct StreamVariables {
  std::vector<std::string> inputs, targets, forcings;
};

// Anchors from `start` to `end`, both included, every anchor_step (ns since 1970-01-01 UTC).
// An open end (nullopt) is the first / last time of the first stream.
struct AnchorRange {
  std::optional<std::int64_t> start, end;
};

struct ForecastSpec {
  // Stream name -> its variables, in the order the streams were given. A single stream is named
  // "" (Python: a source that is not a dict of streams).
  std::vector<std::pair<std::string, StreamVariables>> streams;
  std::vector<std::int64_t> input_offsets;   // ns relative to the anchor (e.g. -6h, 0h)
  std::vector<std::int64_t> target_offsets;  // ns: the lead times, the longest rollout
  std::vector<AnchorRange> anchors;          // empty: the whole first stream
  std::optional<std::int64_t> anchor_step;   // ns; unset: the first stream's time step
  std::string time_dim = "time";
  MissingPolicy missing = MissingPolicy::Skip;
  // Patches of the grid (one stream only): samples are anchors x patches, patch fastest.
  DimSizes patch_dims;
  DimOverlaps patch_overlap;

  // The document (the keyword arguments of lazycube.ForecastSamples): inputs, targets, forcings
  // (each a name, a list of names, or {stream: names}), input_offsets, target_offsets
  // (durations: "6h", "-30min", "1d", "PT6H", "90s"), anchors (an ISO interval "start/end", a
  // date-time, {"start", "end"} (null: open), or a list of these), anchor_step (a duration),
  // time_dim, missing ("skip" | "keep" | "error"), patch_dims ({dim: size}), patch_overlap
  // ({dim: overlap}). `streams`: the names of the streams the data has ({""} for one). A field
  // of the wrong type or value is a UsageError naming it; an unknown key lists the known ones.
  static ForecastSpec from_json(const nlohmann::ordered_json& document, const std::vector<std::string>& streams);
  // The inverse (durations as "<n>s" / "<n>ns", dates as ISO text): from_json(to_json()) is
  // this spec.
  nlohmann::ordered_json to_json() const;
  static const std::vector<std::string>& json_keys();
};

// A duration as nanoseconds: "6h", "-6h", "0h", "30min", "30m", "1d", "2w", "90s", "250ms",
// "1.5h", "1d6h", ISO 8601 "PT6H" / "P1DT12H" / "-PT30M", a pandas-style "6H" / "1D".
// UsageError naming `field` and the text otherwise.
std::int64_t parse_duration_ns(const std::string& text, const std::string& field);
// "6h", "-30min", "1d", "90s", "1500ms": the shortest exact spelling of a duration.
std::string format_duration(std::int64_t ns);

// The derived forcings (docs/forecast.md "Derived forcings"): year_progress_sin/cos,
// day_progress_sin/cos (local, by longitude), toa_incident_solar_radiation (J m-2 over the hour
// before each time, as ERA5's tisr; normalised by its own constant in batches, see
// derived_forcing_scale).
const std::vector<std::string>& derived_forcing_names();
bool is_derived_forcing(const std::string& name);
// The value the assembled batches divide a derived forcing by (1 for the sin/cos ones; for
// toa_incident_solar_radiation the solar constant times 3600 s, so values lie in [0, ~1.05]).
double derived_forcing_scale(const std::string& name);
// Evaluates derived forcing `name` at `time_ns` (ns since 1970-01-01 UTC) on points of latitude
// `lat` and longitude `lon` (degrees; the same length, or empty for year progress), unscaled,
// in float64: out[k] for point k.
void compute_derived_forcing(const std::string& name, std::int64_t time_ns, std::span<const double> lat,
                             std::span<const double> lon, std::span<double> out);

// Why anchors were left out: an offset's time lies outside a stream's time coordinate, lies
// inside it but is absent (a gap), or holds missing values (missing "skip").
struct ExcludedAnchors {
  std::uint64_t out_of_range = 0, time_absent = 0, missing_values = 0;
};

// One channel of a batch: its variable (or derived forcing) and, for a variable with extra dims
// (levels), the element of each.
struct ForecastChannel {
  std::string name;      // "z_500"
  std::string variable;  // "z"
  std::vector<std::pair<std::string, std::uint64_t>> at;  // {"level", 2}
  bool derived = false;
};
enum class ForecastRole { Inputs, Targets, Forcings };

// One stream's part of a batch, every array float32 with a leading `sample` dim.
struct ForecastStreamBatch {
  std::string stream;
  BatchArray inputs;    // (sample, time, channel, grid dims...)
  BatchArray targets;   // (sample, lead, channel, grid dims...): the first `rollout` leads
  std::optional<BatchArray> forcings;  // (sample, time, channel, grid...): input then lead times
  // missing "keep": bool arrays shaped as inputs / targets / forcings, true where a value is present.
  std::optional<BatchArray> inputs_mask, targets_mask, forcings_mask;
  std::vector<std::string> input_channels, target_channels, forcing_channels;
  std::vector<std::string> grid_dims;
  Shape grid_shape;                     // of the whole grid (patches: of a patch)
  std::vector<std::vector<IndexRange>> patches;  // per sample, one range per grid dim (patch_dims)
};

struct ForecastBatch {
  std::vector<std::uint64_t> samples;  // sample numbers, in batch order
  std::vector<std::int64_t> anchors;   // their anchor times (ns)
  std::uint64_t rollout = 0;           // lead times in `targets`
  std::vector<ForecastStreamBatch> streams;  // in the spec's order
  std::uint64_t epoch = 0, index = 0;  // batches of an EpochBatches
};

// What the sampler reads through, and where it keeps validity indexes.
struct ForecastRuntime {
  std::shared_ptr<ChunkCache> cache;  // nullptr: ChunkCache::global()
  // Directory of the validity index cache: "" uses LAZYCUBE_CACHE_DIR/validity, else
  // $XDG_CACHE_HOME/lazycube/validity, else ~/.cache/lazycube/validity; "off": none.
  std::string index_dir;
  // Validity indexes another process built (ForecastSampler::validity_index(), JSON): used for
  // every variable whose data, version, selection and decoding match, without a pass and before
  // index_dir, so that one process of a job builds them and hands them to the others (the torch
  // ForecastDataset does so over torch.distributed). "": none.
  std::string validity_index;
  // Progress of the validity pass: bytes read so far, total (stream, variable). Unset: a line on
  // stderr every few seconds.
  std::function<void(const std::string& what, std::uint64_t done, std::uint64_t total)> progress;
};

class ForecastSampler {
 public:
  // Resolves `spec` against the streams (named as in spec.streams): checks everything (an
  // unknown variable, a forcing that is neither a variable nor a derived name, a time
  // coordinate that is missing, not datetime64 or not increasing, anchors outside every stream
  // (no sample at all: UsageError giving the counts per reason)), finds the anchors that are
  // samples, and builds (or loads) the validity index when missing is "skip".
  ForecastSampler(std::vector<std::pair<std::string, Dataset>> streams, ForecastSpec spec,
                  ForecastRuntime runtime = {});
  ~ForecastSampler();
  ForecastSampler(const ForecastSampler&) = delete;
  ForecastSampler& operator=(const ForecastSampler&) = delete;

  const ForecastSpec& spec() const;
  // Samples: anchors that are samples times patches.
  std::uint64_t size() const;
  std::uint64_t patches() const;  // 1 without patch_dims
  // The anchors that are samples, ascending (ns since the epoch).
  const std::vector<std::int64_t>& anchor_times() const;
  const ExcludedAnchors& excluded() const;
  const std::shared_ptr<ChunkCache>& cache() const;
  // Whether the validity index came from its disk cache or ForecastRuntime::validity_index (no
  // data read for it).
  bool index_loaded() const;
  // The validity indexes of every stream as one document (JSON) for ForecastRuntime::validity_index
  // of another process ("" with missing other than "skip").
  std::string validity_index() const;

  // The samples `ids` (< size()) stacked on a leading sample dim, with the first `rollout`
  // lead times (0: all); reads only the times those need. UsageError for a rollout past the
  // lead times; DataError naming the variable and time for a missing value with missing "error".
  ForecastBatch batch(std::span<const std::uint64_t> ids, std::uint64_t rollout = 0) const;
  // Names of the streams, in order, and the channels of one of their arrays.
  std::vector<std::string> stream_names() const;
  std::vector<ForecastChannel> channels(std::size_t stream, ForecastRole role) const;

  // The array reads of sample `id` (< size()) with the first `rollout` lead times (0: all):
  // each field's selection at each time batch() reads it at (what fetch-ahead walks).
  void for_each_read(std::uint64_t id, std::uint64_t rollout,
                     const std::function<void(const ArrayPtr&, const ArraySelection&)>& visit) const;

  // What the samples read along time (the epoch planner's footprint, sampler.hpp): one
  // position per anchor with patches() samples each, the units the first stream's time chunks;
  // a unit's bytes are every stream's time-varying fields over one such chunk (decoded).
  std::shared_ptr<const SampleFootprint> footprint() const;
  // What an epoch order of these samples plans with: the footprint, this sampler's cache budget
  // and the block overrides (BlockPlan: 0 derives them).
  OrderPlanning planning(BlockPlan blocks = {}) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One worker's epoch of forecast batches, in the order of `batches` (the epoch planner's
// EpochBatches), for a training loop to consume in turn (docs/forecast.md "Epochs at scale"):
// fetch-ahead walks the samples still to come in that order and brings the chunks they read
// into the sampler's cache, many requests in flight and held until their batch is assembled,
// while up to `prefetch` batches are assembled at once ahead of the consumer. Over a remote
// store a batch then waits on a round trip only where the walk has not run ahead of it.
struct ForecastEpochOptions {
  std::uint64_t rollout = 0;   // lead times per batch (0: all)
  std::uint64_t prefetch = 2;  // batches assembled at once ahead of the consumer (0: on next())
  // Decoded bytes fetch-ahead may hold: unset derives it from the sampler's cache (half its
  // budget, 256 MiB at most: what the walk holds is mostly the planner's active blocks); 0 off.
  std::optional<std::uint64_t> fetch_ahead_bytes;
};

class ForecastEpoch {
 public:
  // `sampler` must outlive the epoch. UsageError for a rollout past the lead times.
  ForecastEpoch(const ForecastSampler& sampler, EpochBatches batches, ForecastEpochOptions options = {});
  // Stops fetch-ahead and waits for the batches being assembled.
  ~ForecastEpoch();
  ForecastEpoch(const ForecastEpoch&) = delete;
  ForecastEpoch& operator=(const ForecastEpoch&) = delete;

  const EpochBatches& batches() const;
  // Batches this worker yields, and how many next() has returned.
  std::uint64_t size() const;
  std::uint64_t position() const;
  // The fetch-ahead budget in effect (bytes; 0: off).
  std::uint64_t fetch_ahead_bytes() const;
  // The next batch (its epoch and rank batch index set), nullopt after the last. An assembly's
  // error is thrown here, in batch order; the epoch goes on with the batch after it.
  std::optional<ForecastBatch> next();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lazycube::batch
