// lazycube::torch::ForecastDataset: batches of forecast samples (ForecastSampler) as zero-copy
// tensors for LibTorch's stateful DataLoader, dealt to ranks by the epoch planner (EpochBatches).
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "lazycube/adapters/torch.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"

namespace lazycube::torch {

namespace {

constexpr const char* kForecastStateKey = "lazycube_forecast_state";

::torch::Tensor optional_tensor(const std::optional<batch::BatchArray>& a) {
  return a ? to_tensor(*a) : ::torch::Tensor();
}

::torch::Tensor int64_tensor(const void* data, std::size_t n) {
  return ::torch::from_blob(const_cast<void*>(data), {static_cast<std::int64_t>(n)}, ::torch::kInt64).clone();
}

}  // namespace

struct ForecastDataset::Shared {
  std::shared_ptr<batch::ForecastSampler> sampler;
  ForecastDatasetOptions options;
  std::mutex mutex;
  std::uint64_t epoch = 0, next = 0;
  // A resumed epoch: its stretches not yet delivered and the shards its order was planned for.
  std::shared_ptr<const std::vector<batch::PositionRange>> remaining;
  std::optional<batch::ShardSpec> planned_for;
  bool untouched = true;
  std::optional<batch::EpochBatches> schedule;
  std::unique_ptr<batch::ForecastEpoch> running;  // the batches of `schedule`, from the first get_batch()

  batch::EpochBatches& current() {
    if (!schedule)
      schedule.emplace(sampler->size(), options.shuffle, options.seed, epoch,
                       batch::ShardSpec{options.rank, options.world_size, 0, 1}, options.batch_size, options.drop_last,
                       sampler->planning(options.blocks), remaining, planned_for);
    return *schedule;
  }
  void begin(std::uint64_t e, std::shared_ptr<const std::vector<batch::PositionRange>> left = nullptr,
             std::optional<batch::ShardSpec> planned = std::nullopt) {
    epoch = e;
    remaining = std::move(left);
    planned_for = planned;
    next = 0;
    running.reset();
    schedule.reset();
    untouched = true;
  }
};

ForecastDataset::ForecastDataset(std::shared_ptr<batch::ForecastSampler> sampler, ForecastDatasetOptions options)
    : shared_(std::make_shared<Shared>()) {
  if (!sampler) throw UsageError("ForecastDataset needs a sampler");
  if (options.batch_size == 0) throw UsageError("ForecastDatasetOptions::batch_size must be at least 1");
  if (options.rollout > sampler->spec().target_offsets.size())
    throw UsageError("rollout " + std::to_string(options.rollout) + " exceeds the " +
                     std::to_string(sampler->spec().target_offsets.size()) + " lead times");
  batch::ShardSpec{options.rank, options.world_size, 0, 1}.validate();
  shared_->sampler = std::move(sampler);
  shared_->options = options;
}

ForecastDataset::ForecastDataset(const std::string& url, const std::string& spec_json, ForecastDatasetOptions options)
    : ForecastDataset(
          [&] {
            std::vector<std::pair<std::string, Dataset>> streams;
            streams.emplace_back("", lazycube::open(url));
            nlohmann::ordered_json doc;
            try {
              doc = nlohmann::ordered_json::parse(spec_json);
            } catch (const nlohmann::json::exception& e) {
              throw UsageError(std::string("the forecast specification is not JSON: ") + e.what());
            }
            return std::make_shared<batch::ForecastSampler>(std::move(streams),
                                                            batch::ForecastSpec::from_json(doc, {""}));
          }(),
          options) {}

::torch::optional<ForecastExample> ForecastDataset::get_batch(std::size_t /*ignored_batch_size*/) {
  std::optional<batch::ForecastBatch> got;
  {
    // One epoch consumed in order: its batches are assembled ahead (ForecastEpoch), so this
    // waits only for a batch not ready yet.
    std::lock_guard lock(shared_->mutex);
    Shared& m = *shared_;
    m.untouched = false;
    if (m.next >= m.current().worker_batches()) return ::torch::nullopt;
    if (!m.running) {
      batch::ForecastEpochOptions o;
      o.rollout = m.options.rollout;
      o.prefetch = m.options.prefetch;
      o.fetch_ahead_bytes = m.options.fetch_ahead_bytes;
      m.running = std::make_unique<batch::ForecastEpoch>(*m.sampler, m.current(), o);
    }
    ++m.next;
    got = m.running->next();
  }
  if (!got) return ::torch::nullopt;
  const batch::ForecastBatch& b = *got;
  ForecastExample out;
  out.samples = int64_tensor(b.samples.data(), b.samples.size());
  out.anchors = int64_tensor(b.anchors.data(), b.anchors.size());
  for (const auto& s : b.streams)
    out.streams.push_back({s.stream, to_tensor(s.inputs), to_tensor(s.targets), optional_tensor(s.forcings),
                           optional_tensor(s.inputs_mask), optional_tensor(s.targets_mask),
                           optional_tensor(s.forcings_mask)});
  return out;
}

::torch::optional<std::size_t> ForecastDataset::size() const {
  std::lock_guard lock(shared_->mutex);
  return static_cast<std::size_t>(shared_->current().rank_batches());
}

void ForecastDataset::reset() {
  std::lock_guard lock(shared_->mutex);
  const bool at_end = shared_->next >= shared_->current().worker_batches();
  if (!shared_->untouched || at_end) shared_->begin(shared_->epoch + 1);
  shared_->untouched = true;
}

void ForecastDataset::set_epoch(std::uint64_t epoch) {
  std::lock_guard lock(shared_->mutex);
  shared_->begin(epoch);
}

std::uint64_t ForecastDataset::epoch() const {
  std::lock_guard lock(shared_->mutex);
  return shared_->epoch;
}

void ForecastDataset::save(::torch::serialize::OutputArchive& archive) const {
  std::string state;
  {
    std::lock_guard lock(shared_->mutex);
    const batch::EpochBatches& s = shared_->current();
    nlohmann::json remaining = nlohmann::json::array();
    for (const auto& r : s.remaining_after(shared_->next)) remaining.push_back({r.begin, r.end});
    const nlohmann::json j = {{"format", "lazycube-forecast-state"},
                              {"version", 2},
                              {"epoch", shared_->epoch},
                              {"remaining", remaining},
                              {"planned_for", {{"world_size", s.planned_for().world_size},
                                               {"num_workers", s.planned_for().num_workers}}},
                              {"samples", shared_->sampler->size()},
                              {"batch_size", shared_->options.batch_size},
                              {"seed", shared_->options.seed},
                              {"shuffle", batch::shuffle_name(shared_->options.shuffle)}};
    state = j.dump();
  }
  archive.write(kForecastStateKey, c10::IValue(std::move(state)));
}

void ForecastDataset::load(::torch::serialize::InputArchive& archive) {
  c10::IValue value;
  if (!archive.try_read(kForecastStateKey, value) || !value.isString())
    throw UsageError(std::string("the archive holds no ") + kForecastStateKey + " entry");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(value.toStringRef());
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(std::string("the ") + kForecastStateKey + " entry is not JSON: " + e.what());
  }
  try {
    load_state(j);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(std::string("the ") + kForecastStateKey + " entry lacks a field or has one of the wrong type: " +
                     e.what());
  }
}

void ForecastDataset::load_state(const nlohmann::json& j) {
  std::lock_guard lock(shared_->mutex);
  const auto& o = shared_->options;
  if (!j.contains("version") || j.at("version") != 2 || !j.contains("remaining"))
    throw UsageError("the saved forecast state was written by an older lazycube (no 'remaining' stretches): "
                     "its epoch order is not this version's; start the epoch again");
  if (j.at("samples").get<std::uint64_t>() != shared_->sampler->size() ||
      j.at("seed").get<std::uint64_t>() != o.seed || j.at("shuffle").get<std::string>() != batch::shuffle_name(o.shuffle) ||
      j.at("batch_size").get<std::uint64_t>() != o.batch_size)
    throw UsageError("the saved forecast state belongs to other samples or another order: " + j.dump());
  auto left = std::make_shared<std::vector<batch::PositionRange>>();
  for (const auto& r : j.at("remaining")) left->push_back({r.at(0).get<std::uint64_t>(), r.at(1).get<std::uint64_t>()});
  const auto& p = j.at("planned_for");
  batch::ShardSpec planned{0, p.at("world_size").get<std::uint32_t>(), 0, p.at("num_workers").get<std::uint32_t>()};
  shared_->begin(j.at("epoch").get<std::uint64_t>(), std::move(left), planned);
}

const batch::ForecastSampler& ForecastDataset::sampler() const { return *shared_->sampler; }

}  // namespace lazycube::torch
