// The order in which one epoch visits the windows of a WindowGrid, for one shard of the
// training job: sequential, seeded random (a different order each epoch, the same for the
// same seed and epoch), chunk-grouped random, or any other order registered by name. All of
// it is arithmetic: no per-window list.
#pragma once
#include <cstdint>
#include <memory>
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
  // Windows this shard visits in the epoch.
  std::uint64_t size() const { return end_ - begin_; }
  // Grid number of the p-th window this shard visits (p < size()).
  std::uint64_t window(std::uint64_t p) const;
  // Position in the whole epoch's order of the p-th window this shard visits (p <= size():
  // size() gives the position after its last window).
  std::uint64_t epoch_position(std::uint64_t p) const;

 private:
  std::shared_ptr<const SampleOrder> order_;  // the whole epoch (shared: copies stay cheap)
  // A resumed epoch's stretches and where each starts in their concatenation (null: whole).
  std::shared_ptr<const std::vector<PositionRange>> ranges_;
  std::shared_ptr<const std::vector<std::uint64_t>> range_starts_;
  std::uint64_t begin_ = 0, end_ = 0;  // this shard's block (in the concatenation when resumed)
};

}  // namespace lazycube::batch
