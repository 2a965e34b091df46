// The order in which one epoch visits the windows of a WindowGrid, for one shard of the
// training job: sequential, seeded random (a different order each epoch, the same for the
// same seed and epoch), chunk-grouped random, or any other order registered by name. All of
// it is arithmetic: no per-window list.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lazycube/batch/window_grid.hpp"

namespace lazycube::batch {

// A window order by the name it is registered under: None ("none", sequential), Random
// ("random", a seeded permutation of every window), Chunk ("chunk", chunk-grouped random), or
// any order a file of src/batch registers (sample_order.hpp). Compares by name.
class Shuffle {
 public:
  constexpr Shuffle() = default;
  static const Shuffle None, Random, Chunk;
  const char* name() const { return name_; }
  friend constexpr bool operator==(const Shuffle& a, const Shuffle& b) {
    return std::string_view(a.name_) == std::string_view(b.name_);
  }

 private:
  constexpr explicit Shuffle(const char* name) : name_(name) {}
  friend Shuffle parse_shuffle(const std::string& text);
  const char* name_ = "none";
};
inline constexpr Shuffle Shuffle::None{"none"};
inline constexpr Shuffle Shuffle::Random{"random"};
inline constexpr Shuffle Shuffle::Chunk{"chunk"};

// A registered order's name, e.g. "none" / "random" / "chunk" (UsageError naming the text and
// the choices otherwise).
Shuffle parse_shuffle(const std::string& text);
const char* shuffle_name(Shuffle shuffle);
// Every registered order, in the order help and errors list them ("none", "random", "chunk",
// then any other).
std::vector<Shuffle> registered_shuffles();

// A seeded bijection of [0, n) evaluated in O(1) time and memory (a Feistel network over the
// next power of two with cycle walking). Different seeds give unrelated orders.
class Permutation {
 public:
  Permutation() = default;
  Permutation(std::uint64_t n, std::uint64_t seed);
  std::uint64_t size() const { return n_; }
  std::uint64_t operator()(std::uint64_t i) const;

 private:
  std::uint64_t n_ = 0;
  unsigned half_bits_ = 0;  // bits per Feistel half
  std::uint64_t half_mask_ = 0;
  std::uint64_t keys_[4] = {0, 0, 0, 0};
  std::uint64_t round(std::uint64_t x, int r) const;
  std::uint64_t encrypt(std::uint64_t x) const;
};

// Which part of each epoch this process reads: distributed rank and data-loader worker.
// The epoch's visiting order is cut into world_size * num_workers contiguous blocks (sizes
// differing by at most one); block (rank * num_workers + worker) is this shard's. Together
// the shards cover every window exactly once.
struct ShardSpec {
  std::uint32_t rank = 0;
  std::uint32_t world_size = 1;
  std::uint32_t worker = 0;
  std::uint32_t num_workers = 1;
  // UsageError naming the field when world_size/num_workers is 0 or rank/worker is out of range.
  void validate() const;
  std::uint64_t index() const { return std::uint64_t{rank} * num_workers + worker; }
  std::uint64_t count() const { return std::uint64_t{world_size} * num_workers; }
};

// The contiguous cut of `total` positions into `count` blocks whose sizes differ by at most one
// (the first total % count one longer): where each starts, and the end last (count + 1 entries).
// Block i is shard i's (ShardSpec::index) of an EpochOrder cut by a ShardSpec.
std::vector<std::uint64_t> even_shard_starts(std::uint64_t total, std::uint64_t count);

class SampleOrder;

// A stretch [begin, end) of positions in an epoch's whole visiting order (all shards).
struct PositionRange {
  std::uint64_t begin = 0, end = 0;
  friend bool operator==(const PositionRange&, const PositionRange&) = default;
};

// Where the data's chunks (or groups of chunks) start along each dim of a window grid, in the
// grid's element coordinates: Shuffle::Chunk groups windows by the chunk their start falls in.
// Per dim: ascending positions, the first 0; empty: one group along that dim. Irregular grids
// (a dataset joined from files whose lengths are not multiples of the chunk length) are exact.
struct ChunkStarts {
  std::vector<std::vector<std::uint64_t>> starts;
  // Chunks of lengths[d] elements along each dim of `grid` (0, or a length >= the dim: one group).
  static ChunkStarts regular(const WindowGrid& grid, const std::vector<std::uint64_t>& lengths);
};

// What each sample of a list of samples reads along one locality axis (forecast samples: the
// time chunks of their anchor's offsets), for the epoch planner (docs/batching.md "The epoch
// planner"). Samples are grouped by position along the axis (an anchor), `samples_per_position`
// consecutive samples at each (patches); position q reads the axis' units (chunks along it)
// first_unit[q] .. last_unit[q], both non-decreasing in q. A unit costs `unit_bytes` decoded
// bytes over everything the samples of one position read (every field, the whole grid).
struct SampleFootprint {
  std::uint64_t samples_per_position = 1;
  std::vector<std::uint64_t> first_unit, last_unit;  // per position
  std::uint64_t unit_bytes = 0;
  std::uint64_t positions() const { return first_unit.size(); }
  std::uint64_t samples() const { return positions() * samples_per_position; }
  // The most units one position reads, and the decoded bytes one sample reads.
  std::uint64_t span_units() const;
  std::uint64_t sample_bytes() const;
  // The units a stretch of `samples` consecutive samples covers along the axis, on average.
  std::uint64_t units_of(std::uint64_t samples) const;
};

// Shuffle "chunk" over footprints: blocks of `block_samples` consecutive samples, `active_blocks`
// of them read at once with their samples interleaved at random. 0: derived from the cache and
// the footprint (plan_blocks).
struct BlockPlan {
  std::uint64_t block_samples = 0;
  std::uint64_t active_blocks = 0;
  friend bool operator==(const BlockPlan&, const BlockPlan&) = default;
};

// What an order may plan with besides the grid.
struct OrderPlanning {
  ChunkStarts chunks;  // windows: where the data's chunks start along each grid dim
  // Samples with a footprint (1-D grid): shuffle "chunk" plans blocks over it (BlockPlan).
  std::shared_ptr<const SampleFootprint> footprint;
  std::uint64_t cache_bytes = 0;  // the reading process's chunk cache (0: unlimited)
  std::uint64_t batch_size = 1;
  BlockPlan blocks;  // overrides (0: derived)
  // How a group of active blocks is visited: 0, its samples in one random order (forecast
  // samples); n > 0, the blocks interleaved at random (one sample of each per round, in a
  // random order) and each block walked along the axis in a random direction, its samples
  // shuffled within stretches of n (windows: at any moment the group needs a few units at the
  // front of each block, which fetch-ahead reads ahead, instead of every unit of the group at
  // its start; docs/batching.md "The epoch planner").
  std::uint64_t block_front_samples = 0;
  // Where each shard's stretch of the epoch's order starts, ascending from 0, and its end
  // last: an order over footprints keeps each block and each group of active blocks inside one
  // shard's stretch. Empty: one stretch.
  std::vector<std::uint64_t> shard_starts;
};

// The blocks of shuffle "chunk" over `footprint` for shards of `shard_samples` samples (the
// smallest shard's) with a chunk cache of `cache_bytes` (0: unlimited) and batches of
// `batch_size`: overrides in `given` are kept; the rest is derived so that the active blocks'
// units fit three quarters of the cache, blocks are long against the footprint (egress about
// 1 + span / block units) and at least two blocks are active (so that a batch mixes distant
// times), each shard holding at least `active_blocks` blocks. UsageError naming the sizes when
// the cache cannot hold one batch's footprint or the overrides' active blocks; `warnings` gets
// a line naming the sizes when the plan cannot keep its egress near 1 (shards shorter than the
// blocks the cache allows, or blocks shorter than the footprint).
BlockPlan plan_blocks(const SampleFootprint& footprint, std::uint64_t cache_bytes, std::uint64_t batch_size,
                      std::uint64_t shard_samples, BlockPlan given, std::vector<std::string>* warnings = nullptr);

// One epoch's order (a registered SampleOrder, chosen by `shuffle`), cut to this shard's block.
class EpochOrder {
 public:
  EpochOrder() = default;
  // `chunk_lengths` has one entry per grid dim (or none): the chunk length (elements) of the
  // data along it, used by Shuffle::Chunk to group windows by the chunk their start falls in
  // (0 or a length >= the dim: one group along that dim). Chunk groups are visited in a
  // random order and the windows of a group in a random order before the next group starts,
  // so each chunk is needed during one stretch of the epoch. The seed of epoch e is derived
  // from (seed, e). UsageError for an unknown order, a bad shard or mismatched chunk_lengths.
  EpochOrder(const WindowGrid& grid, Shuffle shuffle, std::uint64_t seed, std::uint64_t epoch,
             const ShardSpec& shard, const std::vector<std::uint64_t>& chunk_lengths = {});
  // The same with the chunk starts of each grid dim (ChunkStarts::regular of the lengths above).
  // `remaining` (a resumed epoch, docs/batching.md "Elastic resume"): only these stretches of
  // the epoch's order are visited, ascending and disjoint; the shards' blocks are cut from
  // their concatenation. Null: the whole epoch. UsageError for ranges out of order or past it.
  EpochOrder(const WindowGrid& grid, Shuffle shuffle, std::uint64_t seed, std::uint64_t epoch,
             const ShardSpec& shard, const ChunkStarts& chunks,
             std::shared_ptr<const std::vector<PositionRange>> remaining = nullptr);
  // The whole epoch's order planned with `planning`, visiting the stretch `block` of the
  // concatenation of `remaining` (null: of the whole epoch). UsageError as above, and for a
  // block past the end.
  EpochOrder(const WindowGrid& grid, Shuffle shuffle, std::uint64_t seed, std::uint64_t epoch,
             const OrderPlanning& planning, PositionRange block,
             std::shared_ptr<const std::vector<PositionRange>> remaining = nullptr);
  // Windows this shard visits in the epoch.
  std::uint64_t size() const { return end_ - begin_; }
  // Grid number of the p-th window this shard visits (p < size()).
  std::uint64_t window(std::uint64_t p) const;
  // Position in the whole epoch's order of the p-th window this shard visits (p <= size():
  // size() gives the position after its last window).
  std::uint64_t epoch_position(std::uint64_t p) const;
  // Positions in the epoch's whole order (all shards) and in the concatenation of `remaining`.
  std::uint64_t total() const;
  std::uint64_t remaining_total() const;

 private:
  void init(const WindowGrid& grid, Shuffle shuffle, std::uint64_t seed, std::uint64_t epoch,
            const OrderPlanning& planning, std::shared_ptr<const std::vector<PositionRange>> remaining);
  std::uint64_t remaining_total_ = 0;
  std::shared_ptr<const SampleOrder> order_;  // the whole epoch (shared: copies stay cheap)
  // A resumed epoch's stretches and where each starts in their concatenation (null: whole).
  std::shared_ptr<const std::vector<PositionRange>> ranges_;
  std::shared_ptr<const std::vector<std::uint64_t>> range_starts_;
  std::uint64_t begin_ = 0, end_ = 0;  // this shard's block (in the concatenation when resumed)
};

// The whole-batch layout of EpochBatches: the start of each (rank, worker) stretch in the
// concatenation of `total` positions, rank-major, and its end last (world_size * num_workers
// + 1 entries), with the positions each delivers (drop_last leaves a rank's last partial batch
// undelivered at the end of its stretch).
struct BatchLayout {
  std::vector<std::uint64_t> starts;      // world * workers + 1
  std::vector<std::uint64_t> delivered;   // per shard: positions it yields
  std::uint64_t rank_batches = 0;
  static BatchLayout of(std::uint64_t total, std::uint64_t batch_size, bool drop_last, std::uint32_t world_size,
                        std::uint32_t num_workers);
};

// One epoch of samples (a 1-D grid) dealt in whole batches to ranks and data-loader workers,
// each owning a contiguous stretch of the epoch's order (docs/batching.md "The epoch planner"):
// rank r of W takes the r-th stretch of the positions to visit (the concatenation of
// `remaining`, or the whole epoch), of F full batches and a last one of what remains (sizes
// differing by at most one sample between ranks), so every rank yields the same number of
// batches; worker w of n takes the rank's batches w, w + n, ... (a DataLoader hands them out in
// the rank's order), which lie one after another in the worker's own part of the rank's
// stretch. The order is planned for the shards of the job that began the epoch (`planned_for`:
// its world_size and num_workers; unset: this job's), so that a job of another size resumes it
// (remaining_after) and every sample is delivered once across the runs.
class EpochBatches {
 public:
  EpochBatches() = default;
  EpochBatches(std::uint64_t samples, Shuffle shuffle, std::uint64_t seed, std::uint64_t epoch,
               const ShardSpec& shard, std::uint64_t batch_size, bool drop_last, OrderPlanning planning = {},
               std::shared_ptr<const std::vector<PositionRange>> remaining = nullptr,
               std::optional<ShardSpec> planned_for = std::nullopt);
  // Batches each rank receives (all its workers together) and this worker yields.
  std::uint64_t rank_batches() const { return layout_.rank_batches; }
  std::uint64_t worker_batches() const;
  // Sample numbers of this worker's j-th batch (j < worker_batches()), and its index among the
  // rank's batches.
  std::vector<std::uint64_t> batch(std::uint64_t j) const;
  // The samples this worker yields, batch after batch: how many, and the p-th (p < that).
  std::uint64_t worker_samples() const;
  std::uint64_t sample(std::uint64_t p) const;
  std::uint64_t batch_size() const { return batch_size_; }
  std::uint64_t epoch() const { return epoch_; }
  std::uint64_t rank_batch_index(std::uint64_t j) const { return shard_.worker + j * shard_.num_workers; }
  // The stretches of the epoch's whole order not yet delivered once every rank has received
  // `received` batches (through this job's num_workers): what a resumed job passes as
  // `remaining`. Ascending, disjoint, empty ones left out.
  std::vector<PositionRange> remaining_after(std::uint64_t received) const;
  // The shards the order was planned for, the blocks it planned (shuffle "chunk" over a
  // footprint; zeros otherwise) and what the planner warned about.
  const ShardSpec& planned_for() const { return planned_for_; }
  const BlockPlan& blocks() const { return blocks_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  std::uint64_t samples() const { return samples_; }

 private:
  ShardSpec shard_, planned_for_;
  std::uint64_t samples_ = 0, batch_size_ = 1, epoch_ = 0;
  BlockPlan blocks_;
  std::vector<std::string> warnings_;
  std::shared_ptr<const std::vector<PositionRange>> remaining_;
  EpochOrder order_;  // the whole concatenation of `remaining` (one block)
  BatchLayout layout_;  // this job's stretches of that concatenation
};


}  // namespace lazycube::batch
