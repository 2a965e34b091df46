// Epoch orders: seeded permutations evaluated per position (Feistel network + cycle walking),
// the contiguous cut of an epoch into rank/worker shards, and the EpochOrder that puts a
// registered order (none_order.cpp, random_order.cpp, chunk_order.cpp, ...) and a shard
// together.
#include "lazycube/batch/sampler.hpp"

#include <algorithm>
#include <bit>
#include <string>

#include "lazycube/error.hpp"
#include "sample_order.hpp"

namespace lazycube::batch {
namespace {

// splitmix64's finalizer: a bijective 64-bit mixer with full avalanche.
std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Distinct from the orders' tags (small integers) so round keys never share their stream.
constexpr std::uint64_t kRoundKeyTag = 0x5851F42D4C957F2DULL;

}  // namespace

std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t tag) { return mix64(seed ^ mix64(tag)); }

// ---- Permutation ----

Permutation::Permutation(std::uint64_t n, std::uint64_t seed) : n_(n) {
  // Smallest even power of two >= n, so the two Feistel halves have equal width; the domain
  // is then < 4n and cycle walking takes fewer than 4 steps on average.
  const unsigned bits = n > 1 ? static_cast<unsigned>(std::bit_width(n - 1)) : 0;
  half_bits_ = (bits + 1) / 2;
  half_mask_ = half_bits_ == 0 ? 0 : (~std::uint64_t{0} >> (64 - half_bits_));
  for (std::uint64_t r = 0; r < 4; ++r) keys_[r] = derive_seed(seed, kRoundKeyTag + r);
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

ChunkStarts ChunkStarts::regular(const WindowGrid& grid, const std::vector<std::uint64_t>& lengths) {
  if (lengths.empty()) return {};
  if (lengths.size() != grid.ndim())
    throw UsageError("chunk_lengths has " + std::to_string(lengths.size()) + " entries for a window grid of " +
                     std::to_string(grid.ndim()) + " dims");
  ChunkStarts c;
  for (std::size_t d = 0; d < grid.ndim(); ++d) {
    const std::uint64_t size = grid.dims()[d].size, n = lengths[d];
    std::vector<std::uint64_t> starts{0};
    if (n > 0)
      for (std::uint64_t b = n; b < size; b += n) starts.push_back(b);
    c.starts.push_back(std::move(starts));
  }
  return c;
}

EpochOrder::EpochOrder(const WindowGrid& grid, Shuffle shuffle, std::uint64_t seed, std::uint64_t epoch,
                       const ShardSpec& shard, const std::vector<std::uint64_t>& chunk_lengths)
    : EpochOrder(grid, shuffle, seed, epoch, shard, ChunkStarts::regular(grid, chunk_lengths)) {}

EpochOrder::EpochOrder(const WindowGrid& grid, Shuffle shuffle, std::uint64_t seed, std::uint64_t epoch,
                       const ShardSpec& shard, const ChunkStarts& chunks,
                       std::shared_ptr<const std::vector<PositionRange>> remaining) {
  shard.validate();
  OrderPlanning planning;
  planning.chunks = chunks;
  init(grid, shuffle, seed, epoch, planning, std::move(remaining));
  const std::vector<std::uint64_t> starts = even_shard_starts(remaining_total_, shard.count());
  begin_ = starts[shard.index()];
  end_ = starts[shard.index() + 1];
}

std::vector<std::uint64_t> even_shard_starts(std::uint64_t total, std::uint64_t count) {
  // Contiguous blocks, the first total % count of them one position longer.
  count = std::max<std::uint64_t>(count, 1);
  const std::uint64_t base = total / count, extra = total % count;
  std::vector<std::uint64_t> starts;
  starts.reserve(count + 1);
  for (std::uint64_t i = 0; i <= count; ++i) starts.push_back(i * base + std::min(i, extra));
  return starts;
}

EpochOrder::EpochOrder(const WindowGrid& grid, Shuffle shuffle, std::uint64_t seed, std::uint64_t epoch,
                       const OrderPlanning& planning, PositionRange block,
                       std::shared_ptr<const std::vector<PositionRange>> remaining) {
  init(grid, shuffle, seed, epoch, planning, std::move(remaining));
  if (block.begin > block.end || block.end > remaining_total_)
    throw UsageError("epoch stretch [" + std::to_string(block.begin) + ", " + std::to_string(block.end) +
                     ") lies past the " + std::to_string(remaining_total_) + " positions to visit");
  begin_ = block.begin;
  end_ = block.end;
}

void EpochOrder::init(const WindowGrid& grid, Shuffle shuffle, std::uint64_t seed, std::uint64_t epoch,
                      const OrderPlanning& planning, std::shared_ptr<const std::vector<PositionRange>> remaining) {
  const ChunkStarts& chunks = planning.chunks;
  if (!chunks.starts.empty() && chunks.starts.size() != grid.ndim())
    throw UsageError("chunk starts given for " + std::to_string(chunks.starts.size()) +
                     " dims of a window grid of " + std::to_string(grid.ndim()) + " dims");
  for (std::size_t d = 0; d < chunks.starts.size(); ++d) {
    const auto& s = chunks.starts[d];
    if (!s.empty() && (s.front() != 0 || !std::is_sorted(s.begin(), s.end())))
      throw UsageError("chunk starts of grid dim " + std::to_string(d) + " must ascend from 0");
  }
  order_ = SampleOrderRegistry::instance().get(shuffle.name()).make(
      SampleOrderContext{grid, derive_seed(seed, epoch), chunks.starts, &planning});

  std::uint64_t total = order_->size();
  if (remaining) {
    auto starts = std::make_shared<std::vector<std::uint64_t>>();
    std::uint64_t sum = 0, last = 0;
    for (const PositionRange& r : *remaining) {
      if (r.begin > r.end || r.begin < last || r.end > total)
        throw UsageError("resume: the remaining stretch [" + std::to_string(r.begin) + ", " + std::to_string(r.end) +
                         ") is out of order or past the epoch's " + std::to_string(total) + " windows");
      starts->push_back(sum);
      sum += r.end - r.begin;
      last = r.end;
    }
    ranges_ = std::move(remaining);
    range_starts_ = std::move(starts);
    total = sum;
  }
  remaining_total_ = total;
}

std::uint64_t EpochOrder::total() const { return order_ ? order_->size() : 0; }
std::uint64_t EpochOrder::remaining_total() const { return remaining_total_; }

std::uint64_t EpochOrder::window(std::uint64_t p) const {
  if (p >= size())
    throw UsageError("epoch position " + std::to_string(p) + " out of range (shard has " +
                     std::to_string(size()) + " windows)");
  return order_->window(epoch_position(p));
}

std::uint64_t EpochOrder::epoch_position(std::uint64_t p) const {
  const std::uint64_t q = begin_ + p;
  if (!ranges_) return q;
  const auto& starts = *range_starts_;
  if (starts.empty()) return 0;  // nothing remains
  // the last stretch starting at or before q (an empty stretch shares its start with the next)
  const std::size_t i = static_cast<std::size_t>(std::upper_bound(starts.begin(), starts.end(), q) - starts.begin()) - 1;
  const PositionRange& r = (*ranges_)[i];
  return std::min(r.begin + (q - starts[i]), r.end);
}

}  // namespace lazycube::batch
