// Epoch orders: seeded permutations evaluated per position (Feistel network + cycle walking),
// chunk-grouped shuffling, and the contiguous cut of an epoch into rank/worker shards.
//
// Chunk shuffle and windows spanning a chunk boundary: a group's windows may also need the
// next chunk, which with the groups in random order is usually evicted before its own group
// comes, so it is fetched about twice. Passing a multiple k of the chunk length groups k
// chunks together and leaves the extra fetch only at group edges (about 1 + 1/k).
#include "lazycube/batch/sampler.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "lazycube/error.hpp"

namespace lazycube::batch {
namespace {

// splitmix64's finalizer: a bijective 64-bit mixer with full avalanche.
std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Seed for a sub-stream `tag` (epoch, group, ...) of `seed`; unrelated for nearby inputs.
std::uint64_t derive(std::uint64_t seed, std::uint64_t tag) { return mix64(seed ^ mix64(tag)); }

// Distinct tags so round keys, the group order and per-group orders never share a stream.
constexpr std::uint64_t kRoundKeyTag = 0x5851F42D4C957F2DULL;
constexpr std::uint64_t kGroupOrderTag = 1;
constexpr std::uint64_t kInGroupTag = 2;

}  // namespace

Shuffle parse_shuffle(const std::string& text) {
  if (text == "none") return Shuffle::None;
  if (text == "random") return Shuffle::Random;
  if (text == "chunk") return Shuffle::Chunk;
  throw UsageError("shuffle: unknown value '" + text + "' (choices: none, random, chunk)");
}

const char* shuffle_name(Shuffle shuffle) {
  switch (shuffle) {
    case Shuffle::None: return "none";
    case Shuffle::Random: return "random";
    case Shuffle::Chunk: return "chunk";
  }
  return "?";
}

// ---- Permutation ----

Permutation::Permutation(std::uint64_t n, std::uint64_t seed) : n_(n) {
  // Smallest even power of two >= n, so the two Feistel halves have equal width; the domain
  // is then < 4n and cycle walking takes fewer than 4 steps on average.
  const unsigned bits = n > 1 ? static_cast<unsigned>(std::bit_width(n - 1)) : 0;
  half_bits_ = (bits + 1) / 2;
  half_mask_ = half_bits_ == 0 ? 0 : (~std::uint64_t{0} >> (64 - half_bits_));
  for (std::uint64_t r = 0; r < 4; ++r) keys_[r] = derive(seed, kRoundKeyTag + r);
}

std::uint64_t Permutation::round(std::uint64_t x, int r) const {
  return mix64(x ^ keys_[r]) & half_mask_;
}

std::uint64_t Permutation::encrypt(std::uint64_t x) const {
  std::uint64_t left = half_bits_ == 0 ? 0 : x >> half_bits_;
  std::uint64_t right = x & half_mask_;
  for (int r = 0; r < 4; ++r) {
    const std::uint64_t next = left ^ round(right, r);
    left = right;
    right = next;
  }
  return half_bits_ == 0 ? 0 : (left << half_bits_) | right;
}

std::uint64_t Permutation::operator()(std::uint64_t i) const {
  if (i >= n_)
    throw UsageError("permutation index " + std::to_string(i) + " out of range (size " +
                     std::to_string(n_) + ")");
  // Cycle walking: the cycle through i (< n) returns to values < n, so this terminates.
  std::uint64_t y = encrypt(i);
  while (y >= n_) y = encrypt(y);
  return y;
}

// ---- ShardSpec ----

void ShardSpec::validate() const {
  if (world_size == 0) throw UsageError("shard: world_size must be at least 1");
  if (num_workers == 0) throw UsageError("shard: num_workers must be at least 1");
  if (rank >= world_size)
    throw UsageError("shard: rank " + std::to_string(rank) + " must be less than world_size " +
                     std::to_string(world_size));
  if (worker >= num_workers)
    throw UsageError("shard: worker " + std::to_string(worker) +
                     " must be less than num_workers " + std::to_string(num_workers));
}

// ---- EpochOrder ----

std::uint64_t EpochOrder::GroupDim::first(std::uint64_t g) const {
  if (groups == 1) return g == 0 ? 0 : count;
  if (stride >= chunk) return g;  // every window is its own group
  // Smallest w with w * stride >= g * chunk: the first window starting in chunk g.
  return std::min(count, (g * chunk + stride - 1) / stride);
}

EpochOrder::EpochOrder(const WindowGrid& grid, Shuffle shuffle, std::uint64_t seed,
                       std::uint64_t epoch, const ShardSpec& shard,
                       const std::vector<std::uint64_t>& chunk_lengths)
    : grid_(grid), shuffle_(shuffle), total_(grid.size()), seed_(derive(seed, epoch)) {
  shard.validate();
  if (!chunk_lengths.empty() && chunk_lengths.size() != grid.ndim())
    throw UsageError("chunk_lengths has " + std::to_string(chunk_lengths.size()) +
                     " entries for a window grid of " + std::to_string(grid.ndim()) + " dims");
  if (shuffle == Shuffle::Chunk && chunk_lengths.empty() && grid.ndim() > 0)
    throw UsageError("shuffle 'chunk' needs chunk_lengths (one per window dim)");

  // Contiguous blocks, the first total % count of them one window longer.
  const std::uint64_t base = total_ / shard.count(), extra = total_ % shard.count();
  begin_ = shard.index() * base + std::min(shard.index(), extra);
  end_ = begin_ + base + (shard.index() < extra ? 1 : 0);

  if (shuffle == Shuffle::Random) perm_ = Permutation(total_, seed_);
  if (shuffle != Shuffle::Chunk || total_ == 0) return;

  std::uint64_t groups = 1;
  for (std::size_t d = 0; d < grid.ndim(); ++d) {
    const DimWindows& dw = grid.dims()[d];
    GroupDim gd;
    gd.stride = dw.stride;
    gd.chunk = chunk_lengths[d];
    gd.count = dw.count;
    if (gd.chunk == 0 || gd.chunk >= dw.size) gd.groups = 1;
    else if (gd.stride >= gd.chunk) gd.groups = gd.count;
    else gd.groups = (gd.count - 1) * gd.stride / gd.chunk + 1;  // every chunk up to the last start
    groups *= gd.groups;
    group_dims_.push_back(gd);
  }
  perm_ = Permutation(groups, derive(seed_, kGroupOrderTag));
  group_of_rank_.resize(groups);
  offsets_.resize(groups + 1);
  offsets_[0] = 0;
  std::vector<std::uint64_t> g(group_dims_.size());
  for (std::uint64_t r = 0; r < groups; ++r) {
    const std::uint64_t group = perm_(r);
    group_of_rank_[r] = group;
    std::uint64_t rest = group, windows = 1;
    for (std::size_t d = group_dims_.size(); d-- > 0;) {
      const GroupDim& gd = group_dims_[d];
      const std::uint64_t gi = rest % gd.groups;
      rest /= gd.groups;
      windows *= gd.first(gi + 1) - gd.first(gi);
    }
    offsets_[r + 1] = offsets_[r] + windows;
  }
}

std::uint64_t EpochOrder::window(std::uint64_t p) const {
  if (p >= size())
    throw UsageError("epoch position " + std::to_string(p) + " out of range (shard has " +
                     std::to_string(size()) + " windows)");
  return global_window(begin_ + p);
}

std::uint64_t EpochOrder::global_window(std::uint64_t position) const {
  switch (shuffle_) {
    case Shuffle::None: return position;
    case Shuffle::Random: return perm_(position);
    case Shuffle::Chunk: break;
  }
  // The visited group holding `position`, then the position's window inside that group.
  const auto it = std::upper_bound(offsets_.begin(), offsets_.end(), position);
  const std::size_t rank = static_cast<std::size_t>(it - offsets_.begin()) - 1;
  const std::uint64_t group = group_of_rank_[rank];
  const std::uint64_t in_group = offsets_[rank + 1] - offsets_[rank];
  const Permutation within(in_group, derive(derive(seed_, kInGroupTag), group));
  std::uint64_t k = within(position - offsets_[rank]);
  // The group is a box of contiguous per-dim window ranges: unravel k inside it.
  std::vector<std::uint64_t> per_dim(group_dims_.size());
  std::uint64_t rest = group;
  for (std::size_t d = group_dims_.size(); d-- > 0;) {
    const GroupDim& gd = group_dims_[d];
    const std::uint64_t gi = rest % gd.groups;
    rest /= gd.groups;
    const std::uint64_t lo = gd.first(gi), n = gd.first(gi + 1) - lo;
    per_dim[d] = lo + k % n;
    k /= n;
  }
  return grid_.ravel(per_dim);
}

}  // namespace lazycube::batch
