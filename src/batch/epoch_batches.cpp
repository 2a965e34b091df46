// EpochBatches: an epoch of samples dealt in whole batches to ranks and data-loader workers,
// each owning a contiguous stretch of the epoch's order, resumable in a job of another size
// (sampler.hpp).
#include <algorithm>
#include <string>

#include "lazycube/batch/sampler.hpp"
#include "lazycube/error.hpp"

namespace lazycube::batch {

BatchLayout BatchLayout::of(std::uint64_t total, std::uint64_t batch_size, bool drop_last, std::uint32_t world_size,
                            std::uint32_t num_workers) {
  BatchLayout out;
  const std::uint64_t W = world_size, n = num_workers, b = batch_size;
  const std::uint64_t full = total / (W * b), rest = total - full * W * b;
  const bool partial = rest > 0 && !drop_last;
  out.rank_batches = full + (partial ? 1 : 0);
  std::uint64_t at = 0;
  for (std::uint64_t r = 0; r < W; ++r) {
    const std::uint64_t extra = rest / W + (r < rest % W ? 1 : 0);
    const std::uint64_t rank_end = at + full * b + extra;
    for (std::uint64_t w = 0; w < n; ++w) {
      // the rank's batches w, w + n, ...: the full ones, then the partial one (batch `full`)
      const std::uint64_t mine = full > w ? (full - w + n - 1) / n : 0;
      const std::uint64_t len = mine * b + (partial && full % n == w ? extra : 0);
      out.starts.push_back(at);
      out.delivered.push_back(len);
      at += len;
    }
    at = rank_end;  // drop_last: the undelivered rest ends the rank's last worker's stretch
  }
  out.starts.push_back(at);
  return out;
}

EpochBatches::EpochBatches(std::uint64_t samples, Shuffle shuffle, std::uint64_t seed, std::uint64_t epoch,
                           const ShardSpec& shard, std::uint64_t batch_size, bool drop_last, OrderPlanning planning,
                           std::shared_ptr<const std::vector<PositionRange>> remaining,
                           std::optional<ShardSpec> planned_for)
    : shard_(shard), samples_(samples), batch_size_(batch_size), epoch_(epoch) {
  shard.validate();
  if (batch_size == 0) throw UsageError("batch_size must be at least 1");
  if (samples == 0) throw UsageError("an epoch of no samples: there is nothing to deal to the ranks");
  planned_for_ = planned_for.value_or(shard);
  planned_for_.rank = 0;
  planned_for_.worker = 0;
  planned_for_.validate();
  // The order is planned for the stretches of the job that began the epoch.
  const BatchLayout planned = BatchLayout::of(samples, batch_size, drop_last, planned_for_.world_size,
                                              planned_for_.num_workers);
  planning.batch_size = batch_size;
  planning.shard_starts = planned.starts;
  if (shuffle == Shuffle::Chunk && planning.footprint) {
    std::uint64_t smallest = samples;
    for (std::size_t i = 0; i + 1 < planned.starts.size(); ++i)
      smallest = std::min(smallest, planned.starts[i + 1] - planned.starts[i]);
    blocks_ = plan_blocks(*planning.footprint, planning.cache_bytes, batch_size, smallest, planning.blocks, &warnings_);
    planning.blocks = blocks_;
  }
  const WindowGrid grid({{"sample", samples}}, {{"sample", 1}});
  std::uint64_t to_visit = samples;
  if (remaining) {
    to_visit = 0;
    for (const PositionRange& r : *remaining) to_visit += r.end >= r.begin ? r.end - r.begin : 0;
  }
  remaining_ = remaining;
  order_ = EpochOrder(grid, shuffle, seed, epoch, planning, PositionRange{0, to_visit}, std::move(remaining));
  layout_ = BatchLayout::of(order_.remaining_total(), batch_size, drop_last, shard.world_size, shard.num_workers);
}

std::uint64_t EpochBatches::worker_batches() const {
  const std::uint64_t w = shard_.worker, n = shard_.num_workers;
  return w < layout_.rank_batches ? (layout_.rank_batches - w + n - 1) / n : 0;
}

std::vector<std::uint64_t> EpochBatches::batch(std::uint64_t j) const {
  if (j >= worker_batches())
    throw SelectionError("batch " + std::to_string(j) + " is out of range (this worker has " +
                         std::to_string(worker_batches()) + ")");
  const std::size_t i = static_cast<std::size_t>(shard_.index());
  const std::uint64_t end = layout_.starts[i] + layout_.delivered[i];
  const std::uint64_t begin = std::min(layout_.starts[i] + j * batch_size_, end);
  std::vector<std::uint64_t> out;
  out.reserve(std::min(batch_size_, end - begin));
  for (std::uint64_t p = begin; p < std::min(begin + batch_size_, end); ++p) out.push_back(order_.window(p));
  return out;
}

std::uint64_t EpochBatches::worker_samples() const {
  const auto i = static_cast<std::size_t>(shard_.index());
  return i < layout_.delivered.size() ? layout_.delivered[i] : 0;
}

std::uint64_t EpochBatches::sample(std::uint64_t p) const {
  if (p >= worker_samples())
    throw SelectionError("sample position " + std::to_string(p) + " is out of range (this worker yields " +
                         std::to_string(worker_samples()) + ")");
  return order_.window(layout_.starts[static_cast<std::size_t>(shard_.index())] + p);
}

std::vector<PositionRange> EpochBatches::remaining_after(std::uint64_t received) const {
  const std::uint64_t n = shard_.num_workers, k = std::min(received, layout_.rank_batches);
  // What is left in the concatenation: each stretch less the prefix its worker delivered.
  std::vector<PositionRange> left;
  for (std::size_t i = 0; i + 1 < layout_.starts.size(); ++i) {
    const std::uint64_t w = i % n;
    const std::uint64_t got = k > w ? (k - w + n - 1) / n : 0;
    const std::uint64_t from = layout_.starts[i] + std::min(got * batch_size_, layout_.delivered[i]);
    if (from < layout_.starts[i + 1]) {
      if (!left.empty() && left.back().end == from) left.back().end = layout_.starts[i + 1];
      else left.push_back({from, layout_.starts[i + 1]});
    }
  }
  // ... back to positions of the epoch's whole order.
  std::vector<PositionRange> out;
  for (const PositionRange& r : left) {
    std::uint64_t p = r.begin;
    while (p < r.end) {
      const std::uint64_t a = order_.epoch_position(p);
      // the run of p that stays inside one remaining stretch of the whole order
      std::uint64_t q = p + 1;
      if (remaining_) {
        std::uint64_t off = 0;
        for (const PositionRange& s : *remaining_) {
          if (p < off + (s.end - s.begin)) {
            q = std::min(r.end, off + (s.end - s.begin));
            break;
          }
          off += s.end - s.begin;
        }
      } else {
        q = r.end;
      }
      const std::uint64_t b = a + (q - p);
      if (!out.empty() && out.back().end == a) out.back().end = b;
      else out.push_back({a, b});
      p = q;
    }
  }
  return out;
}

}  // namespace lazycube::batch
