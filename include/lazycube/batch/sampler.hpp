// The order in which one epoch visits the windows of a WindowGrid, for one shard of the
// training job: sequential, seeded random (a different order each epoch, the same for the
// same seed and epoch), or chunk-grouped random. All of it is arithmetic: no per-window list.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lazycube/batch/window_grid.hpp"

namespace lazycube::batch {

enum class Shuffle { None, Random, Chunk };

// "none" / "random" / "chunk" (UsageError naming the text otherwise).
Shuffle parse_shuffle(const std::string& text);
const char* shuffle_name(Shuffle shuffle);

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

class EpochOrder {
 public:
  EpochOrder() = default;
  // `chunk_lengths` has one entry per grid dim: the chunk length (elements) of the data along
  // it, used by Shuffle::Chunk to group windows by the chunk their start falls in (0 or 1
  // entries of size >= the dim: one group along that dim). Chunk groups are visited in a
  // random order and the windows of a group in a random order before the next group starts,
  // so each chunk is needed during one stretch of the epoch. The seed of epoch e is derived
  // from (seed, e).
  EpochOrder(const WindowGrid& grid, Shuffle shuffle, std::uint64_t seed, std::uint64_t epoch,
             const ShardSpec& shard, const std::vector<std::uint64_t>& chunk_lengths = {});
  // Windows this shard visits in the epoch.
  std::uint64_t size() const { return end_ - begin_; }
  // Grid number of the p-th window this shard visits (p < size()).
  std::uint64_t window(std::uint64_t p) const;
  // Position in the whole epoch's order (all shards) of this shard's first window.
  std::uint64_t begin() const { return begin_; }

 private:
  struct GroupDim {  // chunk groups along one grid dim
    std::uint64_t groups = 1;
    std::uint64_t stride = 0, chunk = 0, count = 0;  // window stride, chunk length, windows
    std::uint64_t first(std::uint64_t g) const;       // first window of group g
  };
  std::uint64_t global_window(std::uint64_t position) const;
  WindowGrid grid_;
  Shuffle shuffle_ = Shuffle::None;
  std::uint64_t total_ = 0, begin_ = 0, end_ = 0;
  std::uint64_t seed_ = 0;
  Permutation perm_;                   // Random: over all windows; Chunk: over groups
  std::vector<GroupDim> group_dims_;   // Chunk only
  std::vector<std::uint64_t> group_of_rank_;  // Chunk: permuted group order
  std::vector<std::uint64_t> offsets_;        // Chunk: first epoch position of each visited group
};

}  // namespace lazycube::batch
