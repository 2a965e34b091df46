// BatchGenerator: training batches of windows out of a Dataset, with xbatcher's semantics
// when used with xbatcher's arguments (batch_size 0, ../shared/docs/XBATCHER.md) and, with a
// batch_size, N windows of several variables stacked as (sample, channel, window dims...)
// with seeded shuffling, sharding, targets, a NaN filter and resumable state. Batches are
// fetched, decoded and assembled on the thread pool `prefetch` batches ahead of the caller,
// through the process-wide chunk cache; those batches assemble at once, so one waiting on a
// slow chunk does not hold back the ones after it (the caller still gets them in order).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "lazycube/batch/sampler.hpp"
#include "lazycube/batch/window_grid.hpp"
#include "lazycube/batch/xbatcher_schema.hpp"
#include "lazycube/cache/chunk_cache.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/dataset/stats.hpp"
#include "lazycube/dtype.hpp"
#include "lazycube/ndarray.hpp"

namespace lazycube::batch {

// The target of each window (stacked mode): other variables and/or the same window shifted
// along dims, e.g. offset {"time": 1} pairs x at t with y at t+1.
struct TargetSpec {
  std::vector<std::string> variables;          // empty: the input variables
  std::map<std::string, std::int64_t> offset;  // dim -> shift in elements (may be negative)
};

// Skips windows in which more than `max_nan_fraction` of `variable`'s values are NaN.
struct ValidityFilter {
  std::string variable;  // empty: the first input variable
  double max_nan_fraction = 0.0;
};

// Memory for batch buffers (e.g. pinned host memory): at least `bytes` bytes, 64-byte
// aligned, freed by the returned pointer's deleter.
using BatchAllocator = std::function<std::shared_ptr<std::byte>(std::size_t bytes)>;

// What is left of an epoch interrupted mid-way (docs/batching.md "Elastic resume"): its number
// and the stretches of its whole order not yet delivered, which a job of any world size and
// worker count shares out again (EpochOrder's `remaining`). Other epochs are whole. Under the
// epoch planner (shuffle "chunk" over windows that declare a footprint: docs/batching.md "The
// epoch planner") the order depends on the shards it was planned for and on its blocks: a
// resumed epoch is planned as the job that began it planned it (`planned_world_size` x
// `planned_num_workers`; 0: this job's) with its `blocks` (0: derived, as that job derived them).
struct EpochRemainder {
  std::uint64_t epoch = 0;
  std::vector<PositionRange> remaining;
  std::uint32_t planned_world_size = 0, planned_num_workers = 0;
  BlockPlan blocks;
};

struct BatchOptions {
  // xbatcher's arguments (batch_dims and concat_input_dims: compatibility mode only).
  DimSizes input_dims;
  DimOverlaps input_overlap;
  DimSizes batch_dims;
  bool concat_input_dims = false;

  // 0: xbatcher compatibility mode (batches as xbatcher groups them). N > 0: stacked mode,
  // N windows per batch on a leading `sample` dim.
  std::uint64_t batch_size = 0;
  bool drop_last = false;  // stacked mode: drop a short last batch instead of returning it
  // Stacked mode: the variables stacked along `channel`, in this order (empty: every data
  // variable that has all the input dims, in dataset order), cast to `dtype` (default: the
  // common dtype of the variables). Compatibility mode: the data variables kept (empty: all).
  std::vector<std::string> variables;
  std::optional<DataType> dtype;
  // Stacked mode, `dtype` unset: the dtype a floating common dtype becomes, for x and for y on
  // its own (Python's stacked batches and torch datasets: float32); integer and bool batches
  // keep theirs. Must be float32 or float64. Unset: the common dtype as it is.
  std::optional<DataType> float_dtype;
  std::optional<TargetSpec> target;  // stacked mode
  std::optional<ValidityFilter> filter;  // stacked mode
  // Stacked mode: (x - mean) / std applied to every channel of x and y during assembly, with
  // the statistics of the channel's variable (compute_stats / read_stats_file), taken at each
  // element's position along the kept dims (e.g. per level). Every channel variable needs its
  // statistics (others are ignored), the batch dtype must be a float, and every std a finite
  // number > 0 (UsageError otherwise). Empty: no normalisation.
  std::vector<VariableStats> normalize;

  Shuffle shuffle = Shuffle::None;  // compatibility mode: None or Random (over batches)
  std::uint64_t seed = 0;
  ShardSpec shard;
  std::optional<EpochRemainder> resume;
  // Stacked mode, shuffle "chunk" over windows planned in blocks (docs/batching.md "The epoch
  // planner"): the block length in windows and the blocks read at once (0: derived from the
  // cache budget and the windows' footprint).
  BlockPlan blocks;

  std::size_t prefetch = 2;            // batches assembled ahead of the caller, at once (0: on demand)
  // Decoded bytes of chunks fetched ahead along the epoch's order and held until their batch
  // is assembled (docs/batching.md "Fetch-ahead"); 0: off; unset: default_fetch_ahead_bytes,
  // growing within fetch_ahead_room_bytes to 8 s of the batches' consumption.
  std::optional<std::uint64_t> fetch_ahead_bytes;
  std::shared_ptr<ChunkCache> cache;   // nullptr: ChunkCache::global()
  BatchAllocator allocator;            // nullptr: lazycube's own (huge-page) allocation

  // The options from one JSON document with the names Python's BatchGenerator takes (the
  // `generator` dict of a lazycube.pipeline.Pipeline, the CLI's flags, docs/batching.md "One
  // document"): input_dims, input_overlap, batch_dims ({dim: int}, in the document's order),
  // concat_input_dims, batch_size, drop_last, variables (a name or names), dtype, float_dtype
  // (NumPy dtype names), target (a name, names, or {"variables", "offset": {dim: int}}),
  // filter ({"variable", "max_nan_fraction"}), normalize (a stats document, or the path of a
  // stats JSON file), shuffle (true/false or a window order's name), seed, rank, world_size,
  // worker, num_workers, resume ({"epoch": e, "remaining": [[begin, end], ...], and optionally
  // "planned_for": [world_size, num_workers], "blocks": [block_samples, active_blocks]),
  // block_samples, active_blocks, prefetch, fetch_ahead_bytes, cache_bytes (a private ChunkCache of
  // that budget). Absent or null: the default above. UsageError naming the field for a value
  // of the wrong type or range, and for an unknown key (listing the known ones). `cache`
  // (other than cache_bytes) and `allocator` are not in the document.
  static BatchOptions from_json(const nlohmann::ordered_json& document);
  // The keys from_json knows, in the order above.
  static const std::vector<std::string>& json_keys();
};

// The fetch-ahead room when BatchOptions::fetch_ahead_bytes is unset: the cache budget less
// `reuse_bytes`, the room batches need to re-read chunks (under chunk shuffle two chunk
// groups' chunks, at most half the cache; otherwise a quarter of the cache). Chunks fetched
// ahead are held in the cache, so the two together stay within its budget.
std::uint64_t fetch_ahead_room_bytes(std::uint64_t cache_budget_bytes, std::uint64_t reuse_bytes);
// The budget fetch-ahead starts an epoch with when BatchOptions::fetch_ahead_bytes is unset: the
// room, at most 256 MiB. Over the epoch it grows within the room to what the batches consume in
// 8 s (docs/batching.md "Fetch-ahead": a lead in time is what rides out a Retry-After).
std::uint64_t default_fetch_ahead_bytes(std::uint64_t cache_budget_bytes, std::uint64_t reuse_bytes);

// One contiguous C-order array of a batch.
struct BatchArray {
  std::string name;
  DataType dtype;
  std::vector<std::string> dims;
  Shape shape;
  std::shared_ptr<std::byte> data;
  std::size_t nbytes = 0;
  std::uint64_t size() const { return shape_size(shape); }
};

struct Batch {
  std::uint64_t epoch = 0;
  std::uint64_t index = 0;  // batch number within this shard's epoch
  // Stacked mode: {"x"} with dims (sample, channel, window dims...); compatibility mode: one
  // array per data variable (dataset order) with xbatcher's dims for it.
  std::vector<BatchArray> arrays;
  std::optional<BatchArray> target;  // stacked mode with a TargetSpec: "y", laid out like x
  std::vector<std::string> channels;         // stacked mode: variable of each channel
  std::vector<std::string> target_channels;  // stacked mode with a target
  // Where each window (stacked mode) or patch (compatibility mode) lies in the dataset: the
  // dims windows slide over, and per window one IndexRange per such dim.
  std::vector<std::string> window_dims;
  std::vector<std::vector<IndexRange>> windows;
  std::vector<std::uint64_t> window_ids;  // WindowGrid numbers (stacked mode)
  // Coordinate labels of each window: dim -> NDArray of shape (windows, window length) of
  // the dim's index coordinate (decoded, e.g. datetime64 for CF times); dims without an
  // index coordinate are absent.
  std::map<std::string, NDArray> coords;
  // xbatcher compatibility: per array, the layout it was built with.
  std::vector<XbatcherLayout> layouts;
  std::uint64_t nbytes() const;  // all arrays and the target
};

class BatchGenerator {
 public:
  // Validates everything up front: UsageError / SelectionError naming the offending
  // variable, dim or option. Builds no per-window state: O(1) in the number of windows
  // (O(chunk groups) for Shuffle::Chunk).
  BatchGenerator(Dataset dataset, BatchOptions options);
  ~BatchGenerator();
  BatchGenerator(const BatchGenerator&) = delete;
  BatchGenerator& operator=(const BatchGenerator&) = delete;

  const BatchOptions& options() const;
  const Dataset& dataset() const;
  // Stacked mode: the window grid; compatibility mode: the xbatcher schema.
  const WindowGrid& grid() const;
  const XbatcherSchema& schema() const;

  // Windows (stacked mode) or xbatcher batches (compatibility mode) in one epoch: in the
  // whole grid, and in this shard's part of it (before the validity filter).
  std::uint64_t total_windows() const;
  std::uint64_t shard_windows() const;
  // Batches this shard yields per epoch. With a validity filter this is an upper bound.
  std::uint64_t size() const;

  // Batch i of `epoch` for this shard, assembled now on the calling thread + pool. Not
  // available with a validity filter (which batches exist depends on scanning the data).
  Batch batch(std::uint64_t i, std::uint64_t epoch = 0) const;

  // Sequential iteration with prefetch. next() returns the next batch of the current epoch,
  // or nullopt when the epoch is done; set_epoch() starts epoch e from its beginning (the
  // order of a shuffled epoch depends on (seed, epoch)). An error while preparing a batch is
  // thrown by the next() that would have returned that batch.
  std::optional<Batch> next();
  void set_epoch(std::uint64_t epoch);
  std::uint64_t epoch() const;

  // Resumable position: after restore(state()) — in this or a new generator with the same
  // dataset and options — next() returns the same batches the original would have returned.
  // UsageError when the state does not belong to this configuration.
  nlohmann::json state() const;
  void restore(const nlohmann::json& state);

  // Advice about the configuration, to show once: xbatcher's (compatibility mode), and for a
  // random shuffle over more data than the cache holds, the expected read amplification.
  const std::vector<std::string>& warnings() const;

  // The fetch-ahead budget in effect now (options().fetch_ahead_bytes resolved, and grown over
  // the epoch when it was unset; 0 when off or the cache is).
  std::uint64_t fetch_ahead_bytes() const;

  // The epoch planner's blocks (docs/batching.md "The epoch planner") for an epoch planned for
  // a job of world_size x num_workers shards, which a resumed epoch must be planned with
  // (EpochRemainder::blocks); nullopt when the order is not planned in blocks (shuffle other than
  // "chunk", or windows that read one chunk along the first grid dim: the chunk groups).
  std::optional<BlockPlan> block_plan(std::uint32_t world_size, std::uint32_t num_workers) const;

  // The cache the generator reads through.
  const std::shared_ptr<ChunkCache>& cache() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lazycube::batch
