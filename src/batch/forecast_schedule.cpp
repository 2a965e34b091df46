// ForecastSchedule: an epoch's global order of samples dealt in batches to ranks and workers,
// from any position, so that a job of another size resumes it (forecast.hpp).
#include <algorithm>
#include <string>

#include "lazycube/batch/forecast.hpp"
#include "lazycube/error.hpp"

namespace lazycube::batch {

ForecastSchedule::ForecastSchedule(std::uint64_t samples, std::uint64_t batch_size, Shuffle shuffle,
                                   std::uint64_t seed, std::uint64_t epoch, const ShardSpec& shard,
                                   std::uint64_t start, const ChunkStarts& chunks, bool drop_last)
    : shard_(shard), samples_(samples), batch_size_(batch_size), start_(start), drop_last_(drop_last) {
  shard.validate();
  if (batch_size == 0) throw UsageError("batch_size must be at least 1");
  if (start > samples)
    throw UsageError("the resumed position " + std::to_string(start) + " lies past the epoch's " +
                     std::to_string(samples) + " samples");
  const WindowGrid grid({{"sample", samples}}, {{"sample", 1}});
  order_ = EpochOrder(grid, shuffle, seed, epoch, ShardSpec{}, chunks);
  const std::uint64_t round = batch_size_ * shard_.world_size;
  const std::uint64_t rest = samples - start;
  full_rounds_ = rest / round;
  last_ = rest % round;
  rank_batches_ = full_rounds_ + (last_ > 0 && !drop_last_ ? 1 : 0);
}

std::uint64_t ForecastSchedule::worker_batches() const {
  const std::uint64_t w = shard_.worker, n = shard_.num_workers;
  return w < rank_batches_ ? (rank_batches_ - w + n - 1) / n : 0;
}

std::uint64_t ForecastSchedule::rank_batch_index(std::uint64_t j) const {
  return shard_.worker + j * shard_.num_workers;
}

std::pair<std::uint64_t, std::uint64_t> ForecastSchedule::rank_batch_span(std::uint64_t k) const {
  const std::uint64_t W = shard_.world_size, r = shard_.rank;
  if (k < full_rounds_) {
    const std::uint64_t begin = start_ + (k * W + r) * batch_size_;
    return {begin, begin + batch_size_};
  }
  // the last round: what remains, dealt to the ranks in sizes differing by at most one
  const std::uint64_t base = last_ / W, extra = last_ % W;
  const std::uint64_t begin = start_ + full_rounds_ * W * batch_size_ + r * base + std::min(r, extra);
  return {begin, begin + base + (r < extra ? 1 : 0)};
}

std::vector<std::uint64_t> ForecastSchedule::batch(std::uint64_t j) const {
  if (j >= worker_batches())
    throw SelectionError("batch " + std::to_string(j) + " is out of range (this worker has " +
                         std::to_string(worker_batches()) + ")");
  const auto [begin, end] = rank_batch_span(rank_batch_index(j));
  std::vector<std::uint64_t> out;
  out.reserve(end - begin);
  for (std::uint64_t p = begin; p < end; ++p) out.push_back(order_.window(p));
  return out;
}

std::uint64_t ForecastSchedule::position(std::uint64_t k) const {
  if (k >= rank_batches_) return drop_last_ ? start_ + full_rounds_ * batch_size_ * shard_.world_size : samples_;
  return start_ + k * batch_size_ * shard_.world_size;
}

}  // namespace lazycube::batch
