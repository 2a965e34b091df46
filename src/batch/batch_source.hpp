// BatchSource: a BatchGenerator's configuration resolved against its Dataset (variables,
// window grid or xbatcher schema, target shifts, filter, coordinate labels) and the assembly of
// one batch from the windows (or xbatcher batch) it holds. Stateless after construction, so
// the prefetch thread and the caller can use it at once.
#pragma once
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lazycube/batch/batch_generator.hpp"
#include "nan_filter.hpp"
#include "normalization.hpp"
#include "planned_reads.hpp"

namespace lazycube::batch {

class BatchSource {
 public:
  BatchSource(Dataset dataset, BatchOptions options);

  const Dataset& dataset() const { return dataset_; }
  const BatchOptions& options() const { return options_; }
  const std::shared_ptr<ChunkCache>& cache() const { return cache_; }
  bool stacked() const { return stacked_; }
  const WindowGrid& grid() const { return grid_; }
  const XbatcherSchema& schema() const { return schema_; }
  // What the epoch order runs over: windows (stacked) or xbatcher batches (compatibility).
  const WindowGrid& order_grid() const { return stacked_ ? grid_ : batch_grid_; }
  std::uint64_t units() const { return stacked_ ? grid_.size() : schema_.size(); }
  // Where the data's chunk groups start along each order_grid() dim (for Shuffle::Chunk).
  const ChunkStarts& chunk_starts() const { return chunk_starts_; }
  // Shuffle "chunk" over windows that read several chunks along the grid's first dim: their
  // footprint, which the epoch planner's blocks are planned over (null: the chunk groups;
  // docs/batching.md "The epoch planner").
  const std::shared_ptr<const SampleFootprint>& footprint() const { return footprint_; }
  // What an epoch's order is planned with for a job of `shards` (world_size x num_workers)
  // shards: the chunk groups, and with a footprint the shards' even stretches of the epoch, the
  // cache and the blocks: `resumed` as they are when both are set (a resumed epoch's), else
  // BatchOptions::blocks completed by plan_blocks (UsageError naming the sizes when the cache
  // cannot hold them; `warnings` gets its advice).
  OrderPlanning planning(std::uint64_t shards, BlockPlan resumed = {}, std::vector<std::string>* warnings = nullptr) const;
  bool has_filter() const { return filter_ != nullptr; }
  // Whether window `id` passes the validity filter (true without a filter).
  bool window_passes(std::uint64_t id) const;
  // Every array selection that assembling unit `id` (a window, or an xbatcher batch) reads,
  // as visit(array, selection): what fetch-ahead brings into the cache.
  void for_each_read(std::uint64_t id, const std::function<void(const ArrayPtr&, const ArraySelection&)>& visit) const;
  // BatchOptions::fetch_ahead_bytes, resolved (0: off): the budget fetch-ahead starts with,
  // and the most it may grow to (the same when the option is set; else the cache's room less
  // what batches re-read: see fetch_ahead_room_bytes).
  std::uint64_t fetch_ahead_bytes() const;
  std::uint64_t fetch_ahead_most_bytes() const;
  // Advice about the configuration, given once (xbatcher's schema warnings; random shuffle
  // over more data than the cache holds).
  const std::vector<std::string>& warnings() const { return warnings_; }
  // The configuration as JSON (identifies it in saved states).
  const nlohmann::json& config() const { return config_; }

  // Stacked mode: the batch of the given windows (grid numbers, in batch order).
  Batch assemble_windows(const std::vector<std::uint64_t>& ids) const;
  // Compatibility mode: xbatcher batch b.
  Batch assemble_xbatcher(std::uint64_t b) const;

 private:
  // Selection of window `id` for `var` (one IndexRange per var dim), shifted for the target.
  ArraySelection window_selection(const Variable& var, std::uint64_t id, bool target) const;
  BatchArray stack_channels(const std::string& name, const std::vector<Variable>& vars,
                            const DataType& dtype, const std::vector<std::uint64_t>& ids,
                            bool target) const;
  void attach_coords(Batch& batch) const;
  // Chunk-shuffle groups along each grid dim: k chunks each (k sized from the chunk length),
  // starting where the data's chunks start (exactly, also where files joined along a dim leave
  // chunks of other lengths). `working_set_bytes`: decoded bytes of one group's chunks (and of
  // the chunks its windows cross into).
  ChunkStarts chunk_groups(const Variable& first, std::size_t nvars, std::uint64_t& working_set_bytes) const;
  void resolve_stacked();
  void warn_random_reads(const Variable& first);
  void resolve_xbatcher();

  Dataset dataset_;
  BatchOptions options_;
  std::shared_ptr<ChunkCache> cache_;
  bool stacked_ = false;
  nlohmann::json config_;
  std::vector<std::string> warnings_;

  // Stacked mode.
  WindowGrid grid_;
  std::vector<std::string> grid_dims_;   // input dims, in order
  std::vector<std::string> other_dims_;  // dims of the variables taken whole
  std::vector<std::string> out_dims_;    // grid dims then other dims
  Shape out_extent_;                     // window extent along out_dims_
  std::vector<std::uint64_t> lead_;      // per grid dim: start of x windows (negative shifts)
  std::vector<std::int64_t> shift_;      // per grid dim: target start - input start
  std::vector<Variable> xvars_, yvars_;
  DataType xdtype_, ydtype_;
  std::unique_ptr<NanFilter> filter_;
  std::vector<ChannelNormalization> xnorm_, ynorm_;  // BatchOptions::normalize, per channel
  ChunkStarts chunk_starts_;
  std::shared_ptr<const SampleFootprint> footprint_;
  // The windows' footprint along the first grid dim (null: none to plan over).
  std::shared_ptr<const SampleFootprint> windows_footprint(const Variable& first) const;
  // Cache room batches need to re-read chunks while fetch-ahead holds the rest (known under
  // chunk shuffle; unset: a quarter of the cache).
  std::optional<std::uint64_t> reuse_bytes_;
  std::uint64_t reuse_bytes() const;  // reuse_bytes_ or its default

  // Compatibility mode.
  XbatcherSchema schema_;
  WindowGrid batch_grid_;
  std::vector<Variable> cvars_;

  // dim -> its decoded index coordinate. Read in the background from construction on, so that
  // over a remote store the coordinates travel together with the first batch's chunks instead
  // of costing the construction a round trip; the first batch waits for them (and reports a
  // failed read).
  std::shared_future<std::map<std::string, NDArray>> coord_values_;
};

// The reads of an epoch order's windows of `source`, for fetch-ahead (both must outlive it).
class WindowReads final : public PlannedReads {
 public:
  WindowReads(const BatchSource& source, const EpochOrder& order) : source_(source), order_(order) {}
  std::uint64_t size() const override { return order_.size(); }
  void for_each_read(std::uint64_t p, const Visit& visit) const override {
    source_.for_each_read(order_.window(p), visit);
  }

 private:
  const BatchSource& source_;
  const EpochOrder& order_;
};

}  // namespace lazycube::batch
