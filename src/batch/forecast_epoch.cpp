// ForecastEpoch: one worker's epoch of forecast batches with fetch-ahead walking the epoch
// planner's order and `prefetch` batches assembled at once (forecast.hpp).
#include <algorithm>
#include <deque>
#include <future>

#include "fetch_ahead.hpp"
#include "lazycube/batch/forecast.hpp"
#include "lazycube/error.hpp"

namespace lazycube::batch {

namespace {
namespace forecast_epoch {

// Half the cache (256 MiB at most). Most of what the walk holds are chunks of the planner's
// active blocks (three quarters of the cache), pinned where they are rather than fetched again,
// so a walk this far ahead costs no egress: on the egress bench (64 footprints, 50 ms) a quarter
// gave 153 samples/s, half 228 at the same egress (1.065), the unlimited cache 190-250.
std::uint64_t default_budget(const ChunkCache& cache) {
  if (!cache.enabled()) return 0;
  const std::uint64_t budget = cache.stats().budget_bytes;
  return default_fetch_ahead_bytes(budget, budget / 2);  // half the cache kept for re-reads
}

}  // namespace forecast_epoch
}  // namespace

// The reads of a worker's samples in the order it yields them.
class ForecastEpochSampleReads final : public PlannedReads {
 public:
  ForecastEpochSampleReads(const ForecastSampler& sampler, const EpochBatches& batches, std::uint64_t rollout)
      : sampler_(sampler), batches_(batches), rollout_(rollout) {}
  std::uint64_t size() const override { return batches_.worker_samples(); }
  void for_each_read(std::uint64_t p, const Visit& visit) const override {
    sampler_.for_each_read(batches_.sample(p), rollout_, visit);
  }

 private:
  const ForecastSampler& sampler_;
  const EpochBatches& batches_;
  const std::uint64_t rollout_;
};

struct ForecastEpoch::Impl {
  const ForecastSampler& sampler;
  const EpochBatches batches;
  const ForecastEpochOptions options;
  const ForecastEpochSampleReads reads{sampler, batches, options.rollout};
  FetchAhead fetch;
  std::deque<std::future<ForecastBatch>> pending;  // batches position .. launched - 1
  std::uint64_t position = 0, launched = 0;

  Impl(const ForecastSampler& s, EpochBatches b, ForecastEpochOptions o)
      : sampler(s),
        batches(std::move(b)),
        options(o),
        fetch(s.cache(), o.fetch_ahead_bytes.value_or(forecast_epoch::default_budget(*s.cache())),
              o.fetch_ahead_bytes.value_or(forecast_epoch::default_budget(*s.cache()))) {}

  ForecastBatch assemble(std::uint64_t j) const {
    const std::vector<std::uint64_t> ids = batches.batch(j);
    ForecastBatch b = sampler.batch(ids, options.rollout);
    b.epoch = batches.epoch();
    b.index = batches.rank_batch_index(j);
    return b;
  }

  void launch() {
    while (launched < batches.worker_batches() && pending.size() < options.prefetch) {
      const std::uint64_t j = launched;
      pending.push_back(std::async(std::launch::async, [this, j] { return assemble(j); }));
      ++launched;
    }
  }
};

ForecastEpoch::ForecastEpoch(const ForecastSampler& sampler, EpochBatches batches, ForecastEpochOptions options) {
  const std::uint64_t leads = sampler.spec().target_offsets.size();
  if (options.rollout > leads)
    throw UsageError("rollout " + std::to_string(options.rollout) + " exceeds the " + std::to_string(leads) +
                     " lead times of target_offsets");
  impl_ = std::make_unique<Impl>(sampler, std::move(batches), options);
  impl_->fetch.start(impl_->reads, 0);
  impl_->launch();
}

ForecastEpoch::~ForecastEpoch() {
  impl_->fetch.stop();
  for (auto& f : impl_->pending) f.wait();
}

const EpochBatches& ForecastEpoch::batches() const { return impl_->batches; }
std::uint64_t ForecastEpoch::size() const { return impl_->batches.worker_batches(); }
std::uint64_t ForecastEpoch::position() const { return impl_->position; }
std::uint64_t ForecastEpoch::fetch_ahead_bytes() const { return impl_->fetch.budget(); }

std::optional<ForecastBatch> ForecastEpoch::next() {
  Impl& m = *impl_;
  if (m.position >= size()) return std::nullopt;
  const std::uint64_t j = m.position++;
  std::optional<ForecastBatch> out;
  auto release = [&] {  // the samples up to this batch's end are assembled: their holds go
    m.fetch.consumed(std::min(m.position * m.batches.batch_size(), m.batches.worker_samples()));
    m.launch();
  };
  try {
    if (m.pending.empty()) {
      out = m.assemble(j);
      ++m.launched;
    } else {
      std::future<ForecastBatch> f = std::move(m.pending.front());
      m.pending.pop_front();
      out = f.get();
    }
  } catch (...) {
    release();
    throw;
  }
  release();
  return out;
}

}  // namespace lazycube::batch
