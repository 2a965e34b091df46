// Shuffle "chunk" over sample footprints (forecast samples): the epoch planner's locality-aware
// order (docs/batching.md "The epoch planner").
//
// The locality axis (anchor times) is cut into `active_blocks` strata. Each shard's stretch of
// the epoch (a rank's, or a rank's worker's) takes one piece of every stratum, of an equal
// share of its length, the pieces of a stratum laid along the axis in a seeded random order of
// the shards; a piece longer than `block_samples` is cut into that many near-equal blocks. A
// shard visits its blocks in groups of one block of each of its pieces (the blocks of a piece
// in a random order) and the samples of a group in a random order: a batch mixes samples of
// every stratum (distant times), the position in the epoch is uncorrelated with time, and each
// unit (time chunk) is read during one group's stretch by one shard, so a cache that holds the
// active blocks' units fetches it about once (1 + span / block units, the blocks' shared edges).
// With OrderPlanning::block_front_samples (windows) a group is visited front by front instead:
// its blocks interleaved at random, each walked along the axis in a random direction and
// shuffled within stretches of that many samples, so its units are read as the fronts pass.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "lazycube/error.hpp"
#include "sample_order.hpp"

namespace lazycube::batch {

std::uint64_t SampleFootprint::span_units() const {
  std::uint64_t span = 0;
  for (std::size_t q = 0; q < first_unit.size(); ++q) span = std::max(span, last_unit[q] - first_unit[q] + 1);
  return span;
}

std::uint64_t SampleFootprint::sample_bytes() const {
  return span_units() * unit_bytes / std::max<std::uint64_t>(samples_per_position, 1);
}

std::uint64_t SampleFootprint::units_of(std::uint64_t samples) const {
  if (first_unit.empty()) return 0;
  const std::uint64_t spp = std::max<std::uint64_t>(samples_per_position, 1);
  const std::uint64_t total_units = std::max<std::uint64_t>(last_unit.back() - first_unit.front() + 1, 1);
  const double positions_per_unit = static_cast<double>(positions()) / static_cast<double>(total_units);
  return static_cast<std::uint64_t>(std::ceil(static_cast<double>((samples + spp - 1) / spp) / positions_per_unit));
}

namespace {
namespace block_order {

std::string mib(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

// Egress a derived plan aims at: extra units per block over its own (span - 1) / block units.
constexpr double kTargetEdgeOverhead = 0.085;
constexpr double kMostEdgeOverhead = 0.3;
constexpr std::uint64_t kMostActiveBlocks = 8;

}  // namespace block_order
}  // namespace

BlockPlan plan_blocks(const SampleFootprint& fp, std::uint64_t cache_bytes, std::uint64_t batch_size,
                      std::uint64_t shard_samples, BlockPlan given, std::vector<std::string>* warnings) {
  using namespace block_order;
  if (fp.last_unit.size() != fp.first_unit.size() || fp.samples_per_position == 0)
    throw UsageError("internal: a sample footprint's first and last units differ in length");
  const std::uint64_t spp = fp.samples_per_position, P = fp.positions(), N = P * spp;
  if (N == 0) return {std::max<std::uint64_t>(given.block_samples, 1), std::max<std::uint64_t>(given.active_blocks, 1)};
  const std::uint64_t span = std::max<std::uint64_t>(fp.span_units(), 1);
  const std::uint64_t unit = std::max<std::uint64_t>(fp.unit_bytes, 1);
  const std::uint64_t total_units = fp.last_unit.back() - fp.first_unit.front() + 1;
  const double positions_per_unit = static_cast<double>(P) / static_cast<double>(std::max<std::uint64_t>(total_units, 1));
  auto warn = [&](const std::string& text) {
    if (warnings) warnings->push_back(text);
  };

  // The cache in units: three quarters of it for the active blocks (the rest: batches being
  // assembled ahead, static fields, chunks of the group before).
  std::uint64_t usable = total_units + span;
  if (cache_bytes > 0) {
    const std::uint64_t batch_need = std::min(batch_size, N) * span * unit / spp;
    if (cache_bytes < batch_need)
      throw UsageError("cache_bytes " + mib(cache_bytes) + " is smaller than one batch's footprint: " +
                       std::to_string(std::min(batch_size, N)) + " samples x " + std::to_string(span) +
                       " time chunks x " + mib(unit / spp) + " = " + mib(batch_need) +
                       "; give cache_bytes of at least " + std::to_string(batch_need * 4 / 3 + 1) + " bytes");
    usable = std::min(usable, cache_bytes / 4 * 3 / unit);
  }
  auto units_to_samples = [&](std::uint64_t units) {
    const auto positions = static_cast<std::uint64_t>(std::llround(static_cast<double>(units) * positions_per_unit));
    return std::max<std::uint64_t>(positions, 1) * spp;
  };
  auto samples_to_units = [&](std::uint64_t samples) { return fp.units_of(samples); };

  // Blocks no longer than a shard's share of one stratum, nor than what the cache holds for them.
  const std::uint64_t shard = std::max<std::uint64_t>(shard_samples, 1);
  auto length_for = [&](std::uint64_t k) -> std::uint64_t {  // units of a block with k active
    const std::uint64_t by_cache = usable / k > span ? usable / k - span : 0;
    return std::min(by_cache, samples_to_units(shard / k));
  };
  std::uint64_t K = given.active_blocks, L = 0;  // L in units
  if (given.block_samples > 0) L = std::max<std::uint64_t>(samples_to_units(given.block_samples), 1);
  if (K > 0 && L > 0) {
    if (cache_bytes > 0 && K * (L + span) > usable)
      throw UsageError("active_blocks " + std::to_string(K) + " of block_samples " + std::to_string(given.block_samples) +
                       " read " + std::to_string(K * (L + span)) + " time chunks at once (" + mib(K * (L + span) * unit) +
                       "), more than the cache holds for them (three quarters of cache_bytes " + mib(cache_bytes) +
                       ": " + std::to_string(usable) + " time chunks of " + mib(unit) + ")");
  } else if (K > 0) {
    if (K * (span + 1) > usable)
      throw UsageError("active_blocks " + std::to_string(K) + " need at least " + std::to_string(K * (span + 1)) +
                       " time chunks at once (" + mib(K * (span + 1) * unit) + "), more than the cache holds for them (" +
                       std::to_string(usable) + " time chunks, three quarters of cache_bytes " + mib(cache_bytes) + ")");
    L = std::max<std::uint64_t>(length_for(K), 1);
  } else if (L > 0) {
    if (L + span > usable)
      throw UsageError("block_samples " + std::to_string(given.block_samples) + " read " + std::to_string(L + span) +
                       " time chunks (" + mib((L + span) * unit) + "), more than the cache holds for them (" +
                       std::to_string(usable) + " time chunks, three quarters of cache_bytes " + mib(cache_bytes) + ")");
    K = std::clamp<std::uint64_t>(usable / (L + span), 1, kMostActiveBlocks);
  } else {
    // The most active blocks (batches mixing more distant times) whose blocks keep the shared
    // edges within the target; at least two.
    for (std::uint64_t k = kMostActiveBlocks; k >= 2 && K == 0; --k) {
      const std::uint64_t l = length_for(k);
      if (l > 0 && static_cast<double>(span - 1) / static_cast<double>(l) <= kTargetEdgeOverhead) K = k;
    }
    // A small cache: three blocks (batches spanning most of the period) while the edges stay
    // within about a third of the bytes.
    if (K < 3 && length_for(3) > 0 && static_cast<double>(span - 1) / static_cast<double>(length_for(3)) <= kMostEdgeOverhead)
      K = 3;
    if (K == 0) K = length_for(2) > 0 ? 2 : 1;
    L = std::max<std::uint64_t>(length_for(K), 1);
    if (K == 1)
      warn("the cache (cache_bytes " + mib(cache_bytes) + ", " + std::to_string(usable) +
           " time chunks usable) holds one block of samples at a time: batches mix nearby times only; "
           "a cache of " + mib(8 * span * unit * 4 / 3) + " or more lets two blocks interleave");
  }
  if (shard < K * spp) {
    warn("each shard (rank x data-loader worker) holds " + std::to_string(shard) + " samples, fewer than the " +
         std::to_string(K) + " active blocks: its batches mix fewer blocks");
    K = std::max<std::uint64_t>(shard / spp, 1);
  }
  // (a given block length is kept, in whole positions)
  const std::uint64_t block = given.block_samples > 0 ? (given.block_samples + spp - 1) / spp * spp : units_to_samples(L);
  const std::uint64_t units = samples_to_units(std::min(block, shard));
  // (one process whose every unit fits its cache fetches each once, however short its blocks;
  // several fetch the units their pieces share at the edges again)
  if (units < 4 * span && (shard < N || samples_to_units(shard) + span > usable))
    warn("each shard (rank x data-loader worker) holds " + std::to_string(shard) + " samples: blocks of " +
         std::to_string(std::min(block, shard)) + " samples read about " + std::to_string(units) +
         " time chunks against a footprint of " + std::to_string(span) + ", so an epoch fetches about " +
         std::to_string(static_cast<int>(std::lround(100.0 * static_cast<double>(units + span - 1) / static_cast<double>(units)))) +
         "% of the bytes its samples need; a larger cache_bytes (longer blocks), fewer ranks or workers, or more "
         "data per shard keep it near 100%");
  return {block, K};
}

namespace {
namespace block_order {

constexpr std::uint64_t kStratumTag = 11;
constexpr std::uint64_t kRoundTag = 12;
constexpr std::uint64_t kGroupTag = 13;
constexpr std::uint64_t kFrontTag = 14;

class BlockOrder final : public SampleOrder {
 public:
  explicit BlockOrder(const SampleOrderContext& c);
  std::uint64_t size() const override { return total_; }
  std::uint64_t window(std::uint64_t position) const override;

 private:
  struct Shard {
    std::uint64_t begin = 0, groups = 1;          // stretch start in the epoch, groups of blocks
    std::vector<std::uint64_t> piece_start;      // first sample of its piece of each stratum
    std::vector<std::uint64_t> piece_length;
    std::vector<std::uint64_t> group_begin;      // offsets of the groups in the stretch (+ end)
  };
  std::uint64_t total_ = 0, seed_ = 0, K_ = 1, front_ = 0;
  // Sample `o` of group g of shard s visited front by front (OrderPlanning::block_front_samples).
  std::uint64_t front_window(const Shard& sh, std::size_t s, std::uint64_t g, std::uint64_t o) const;
  std::vector<Shard> shards_;
  std::vector<std::uint64_t> shard_begin_;

  // Block j of piece k of shard s: [first, first + length) along the axis.
  static std::pair<std::uint64_t, std::uint64_t> block_of(const Shard& s, std::size_t k, std::uint64_t j) {
    const std::uint64_t a = s.piece_length[k];
    const std::uint64_t lo = j * a / s.groups, hi = (j + 1) * a / s.groups;
    return {s.piece_start[k] + lo, hi - lo};
  }
  // Which block of piece k group g of shard s takes.
  std::uint64_t block_in_group(const Shard& s, std::size_t shard, std::size_t k, std::uint64_t g) const {
    return Permutation(s.groups, derive_seed(seed_, (kStratumTag << 40) ^ (shard << 8) ^ k))(g);
  }
};

BlockOrder::BlockOrder(const SampleOrderContext& c) : total_(c.grid.size()), seed_(c.seed) {
  const OrderPlanning& pl = *c.planning;
  const SampleFootprint& fp = *pl.footprint;
  // (a window grid numbers the samples of a position along its first dim consecutively)
  if (fp.samples() != total_)
    throw UsageError("internal: a footprint of " + std::to_string(fp.samples()) + " samples for an order of " +
                     std::to_string(total_));
  if (total_ == 0) return;
  std::vector<std::uint64_t> bounds = pl.shard_starts;
  if (bounds.size() < 2 || bounds.front() != 0 || bounds.back() != total_) bounds = {0, total_};
  const std::size_t S = bounds.size() - 1;
  std::uint64_t smallest = total_;
  for (std::size_t s = 0; s < S; ++s) smallest = std::min(smallest, bounds[s + 1] - bounds[s]);
  const BlockPlan plan = pl.blocks.block_samples > 0 && pl.blocks.active_blocks > 0
                             ? pl.blocks
                             : plan_blocks(fp, pl.cache_bytes, pl.batch_size, smallest, pl.blocks);
  K_ = std::max<std::uint64_t>(plan.active_blocks, 1);
  front_ = pl.block_front_samples;
  const std::uint64_t block = std::max<std::uint64_t>(plan.block_samples, 1);
  // Each shard's share of each stratum (the remainder's extra samples rotating over the strata).
  shards_.resize(S);
  for (std::size_t s = 0; s < S; ++s) {
    Shard& sh = shards_[s];
    const std::uint64_t n = bounds[s + 1] - bounds[s];
    sh.begin = bounds[s];
    sh.piece_start.assign(K_, 0);
    sh.piece_length.resize(K_);
    std::uint64_t longest = 0;
    for (std::uint64_t k = 0; k < K_; ++k) {
      sh.piece_length[k] = n / K_ + ((k + K_ - s % K_) % K_ < n % K_ ? 1 : 0);
      longest = std::max(longest, sh.piece_length[k]);
    }
    sh.groups = std::max<std::uint64_t>((longest + block - 1) / block, 1);
  }
  // The pieces of each stratum along the axis, in a seeded random order of the shards.
  std::uint64_t at = 0;
  for (std::uint64_t k = 0; k < K_; ++k) {
    const Permutation order(S, derive_seed(seed_, (kRoundTag << 40) ^ k));
    for (std::size_t i = 0; i < S; ++i) {
      Shard& sh = shards_[order(i)];
      sh.piece_start[k] = at;
      at += sh.piece_length[k];
    }
  }
  // The groups of each shard: one block of each piece.
  for (std::size_t s = 0; s < S; ++s) {
    Shard& sh = shards_[s];
    sh.group_begin.push_back(0);
    for (std::uint64_t g = 0; g < sh.groups; ++g) {
      std::uint64_t n = 0;
      for (std::size_t k = 0; k < K_; ++k) n += block_of(sh, k, block_in_group(sh, s, k, g)).second;
      sh.group_begin.push_back(sh.group_begin.back() + n);
    }
    shard_begin_.push_back(sh.begin);
  }
}

std::uint64_t BlockOrder::window(std::uint64_t position) const {
  const auto s = static_cast<std::size_t>(std::upper_bound(shard_begin_.begin(), shard_begin_.end(), position) -
                                          shard_begin_.begin()) - 1;
  const Shard& sh = shards_[s];
  const std::uint64_t offset = position - sh.begin;
  const auto g = static_cast<std::uint64_t>(std::upper_bound(sh.group_begin.begin(), sh.group_begin.end(), offset) -
                                            sh.group_begin.begin()) - 1;
  const std::uint64_t begin = sh.group_begin[g], n = sh.group_begin[g + 1] - begin;
  if (front_ > 0) return front_window(sh, s, g, offset - begin);
  const Permutation perm(n, derive_seed(derive_seed(seed_, kGroupTag), (std::uint64_t{s} << 32) ^ g));
  std::uint64_t i = perm(offset - begin);
  for (std::size_t k = 0; k < K_; ++k) {
    const auto [first, length] = block_of(sh, k, block_in_group(sh, s, k, g));
    if (i < length) return first + i;
    i -= length;
  }
  throw UsageError("internal: position " + std::to_string(position) + " lies past its group");
}

std::uint64_t BlockOrder::front_window(const Shard& sh, std::size_t s, std::uint64_t g, std::uint64_t o) const {
  // The group's blocks, and the shortest: rounds of one sample of each block (in a random order
  // of the blocks) until it ends, then the longer blocks' rest, block after block.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> blocks(K_);
  std::uint64_t shortest = ~std::uint64_t{0};
  for (std::size_t k = 0; k < K_; ++k) {
    blocks[k] = block_of(sh, k, block_in_group(sh, s, k, g));
    shortest = std::min(shortest, blocks[k].second);
  }
  const std::uint64_t group_seed = derive_seed(derive_seed(seed_, kFrontTag), (std::uint64_t{s} << 32) ^ g);
  std::size_t k = 0;
  std::uint64_t j = 0;  // the j-th sample of block k along its walk
  if (o < K_ * shortest) {
    k = static_cast<std::size_t>(Permutation(K_, derive_seed(group_seed, o / K_))(o % K_));
    j = o / K_;
  } else {
    o -= K_ * shortest;
    while (o >= blocks[k].second - shortest) o -= blocks[k++].second - shortest;
    j = shortest + o;
  }
  const auto [first, length] = blocks[k];
  // shuffled within stretches of front_ samples, walked in a random direction
  const std::uint64_t base = j / front_ * front_, size = std::min(front_, length - base);
  const std::uint64_t block_seed = derive_seed(group_seed, (std::uint64_t{1} << 63) ^ k);
  j = base + Permutation(size, derive_seed(block_seed, base))(j - base);
  if (block_seed & 1) j = length - 1 - j;
  return first + j;
}

}  // namespace block_order
}  // namespace

std::unique_ptr<const SampleOrder> make_block_order(const SampleOrderContext& c) {
  return std::make_unique<block_order::BlockOrder>(c);
}

}  // namespace lazycube::batch
