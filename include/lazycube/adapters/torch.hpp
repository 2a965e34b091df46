// LibTorch adapter: BatchGenerator batches as torch::Tensor pairs for
// torch::data::make_data_loader. The one public header that includes <torch/torch.h>; it is
// not part of lazycube/lazycube.hpp. Link lazycube::torch (built when CMake finds LibTorch).
//
//   lazycube::batch::BatchOptions opt;   // stacked mode: batch_size > 0
//   opt.input_dims = {{"time", 1}, {"latitude", 32}, {"longitude", 32}};
//   opt.batch_size = 16;
//   opt.target = lazycube::batch::TargetSpec{{"t2m"}, {{"time", 1}}};
//   lazycube::torch::BatchDataset data("data/era5_sample_v2.zarr", opt);
//   auto loader = torch::data::make_data_loader(data, torch::data::DataLoaderOptions().workers(2));
//   for (auto& batch : *loader) { /* batch.data: x, batch.target: y */ }
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <torch/torch.h>

#include "lazycube/batch/batch_generator.hpp"
#include "lazycube/batch/forecast.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/dtype.hpp"

namespace lazycube::torch {

struct BatchDatasetOptions {
  // Batch buffers in page-locked host memory (cudaHostAlloc), so that copying a batch to a GPU
  // with non_blocking=true is asynchronous. Needs lazycube built with CUDA (UsageError
  // otherwise); cannot be combined with BatchOptions::allocator.
  bool pin_memory = false;
};

// The torch element type of a lazycube dtype: bool, int8/16/32/64, uint8, float16/32/64.
// UsageError naming the dtype for any other (uint16/32/64, complex, datetime, strings).
::torch::Dtype scalar_type(const DataType& dtype);

// A CPU tensor over the array's buffer, no copy: the tensor's deleter holds a reference to
// the buffer, so the tensor stays valid after the batch (and the generator) are gone.
::torch::Tensor to_tensor(const batch::BatchArray& array);

// A stateful dataset over a BatchGenerator in stacked mode. Each get_batch() returns the
// generator's next batch as Example{x, y}: x (sample, channel, window dims...) and y laid out
// like x, or an undefined y when BatchOptions::target is unset.
//
// - The batch size the DataLoader passes to get_batch() is ignored: BatchOptions::batch_size
//   decides (leave DataLoaderOptions::batch_size at its default).
// - A BatchDataset is a handle: copies share one generator and position. make_data_loader()
//   takes a copy, so keep yours to call set_epoch(), save() and load() between epochs.
// - Epochs: the DataLoader calls reset() at the start of every iteration (begin()). reset()
//   keeps the current epoch and position when no get_batch() was made since the dataset was
//   constructed or since the last set_epoch()/load() (and the position is not at the end of
//   the epoch); otherwise it starts epoch() + 1 from its beginning. So the first pass over the
//   loader is epoch 0, each further pass the next epoch; set_epoch(e) before a pass runs e,
//   and load() before a pass resumes the saved position.
// - Thread safety: get_batch(), reset(), set_epoch(), save() and load() may be called from
//   several threads (the DataLoader's workers call get_batch() concurrently); the generator is
//   used under a mutex and keeps prefetching on lazycube's thread pool. With N > 1 workers the
//   batches of an epoch may arrive slightly out of the generator's order (every batch once).
// - save() records the generator's state() (delivered batches): with workers > 0 the loader
//   holds up to DataLoaderOptions::max_jobs batches not yet handed to the training loop, which
//   count as delivered. For an exact mid-epoch checkpoint iterate with workers(0).
class BatchDataset
    : public ::torch::data::datasets::StatefulDataset<BatchDataset, ::torch::data::Example<>, std::size_t> {
 public:
  // UsageError when options.batch_size is 0 (xbatcher-compatibility batches hold one array per
  // variable, not an (x, y) pair), plus everything BatchGenerator's constructor checks.
  BatchDataset(Dataset dataset, batch::BatchOptions options, BatchDatasetOptions torch_options = {});
  // Opens `url` with lazycube::open.
  BatchDataset(const std::string& url, batch::BatchOptions options, BatchDatasetOptions torch_options = {});

  // The next batch of the current epoch; nullopt at its end. `ignored_batch_size`: see above.
  ::torch::optional<::torch::data::Example<>> get_batch(std::size_t ignored_batch_size) override;
  // Batches per epoch (generator().size(); an upper bound with a validity filter).
  ::torch::optional<std::size_t> size() const override;

  void reset() override;
  void set_epoch(std::uint64_t epoch);
  std::uint64_t epoch() const;

  // The generator's state() JSON as the string entry "lazycube_batch_state". load() throws
  // UsageError when the archive has no such entry or the state belongs to another
  // configuration (BatchGenerator::restore).
  void save(::torch::serialize::OutputArchive& archive) const override;
  void load(::torch::serialize::InputArchive& archive) override;

  // The shared generator, for its metadata (grid(), total_windows(), cache()...). Do not
  // iterate it while a DataLoader runs over this dataset.
  batch::BatchGenerator& generator() const;

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

// One batch of forecast samples (docs/forecast.md) as tensors over the batch's buffers.
struct ForecastStreamTensors {
  std::string stream;                 // "" for a single source
  ::torch::Tensor inputs, targets;    // (sample, time|lead, channel, grid...) float32
  ::torch::Tensor forcings;           // undefined without forcings
  ::torch::Tensor inputs_mask, targets_mask, forcings_mask;  // missing "keep" only
};
struct ForecastExample {
  ::torch::Tensor samples;  // int64 sample numbers
  ::torch::Tensor anchors;  // int64 ns since 1970-01-01
  std::vector<ForecastStreamTensors> streams;
};

struct ForecastDatasetOptions {
  std::uint64_t batch_size = 8;
  batch::Shuffle shuffle = batch::Shuffle::None;
  std::uint64_t seed = 0;
  std::uint64_t rollout = 0;  // lead times read per sample (0: all)
  bool drop_last = false;
  std::uint32_t rank = 0, world_size = 1;  // this process's part of a distributed job
  batch::BlockPlan blocks;  // shuffle "chunk": the epoch planner's overrides (0: derived)
  // batch::ForecastEpochOptions: batches assembled at once ahead of get_batch(), and what
  // fetch-ahead may hold (unset: half the sampler's cache, at most 256 MiB; 0: off).
  std::uint64_t prefetch = 2;
  std::optional<std::uint64_t> fetch_ahead_bytes;
};

// A stateful dataset of forecast batches over a ForecastSampler (the same document and sharding
// as Python's lazycube.torch.ForecastDataset): each get_batch() returns the next batch of this
// rank's part of the epoch (batch::EpochBatches: the rank's own stretch of the epoch's order),
// assembled ahead with fetch-ahead walking that order (batch::ForecastEpoch);
// reset() runs the next epoch as BatchDataset's does. save() records the epoch and the
// stretches of its order not yet handed out (EpochBatches::remaining_after), and load() resumes
// it in a job of any world size.
class ForecastDataset
    : public ::torch::data::datasets::StatefulDataset<ForecastDataset, ForecastExample, std::size_t> {
 public:
  ForecastDataset(std::shared_ptr<batch::ForecastSampler> sampler, ForecastDatasetOptions options);
  // One source (stream ""): opens `url` with lazycube::open and resolves `spec` (ForecastSpec
  // JSON, the keys of lazycube.ForecastSamples) against it.
  ForecastDataset(const std::string& url, const std::string& spec_json, ForecastDatasetOptions options);

  ::torch::optional<ForecastExample> get_batch(std::size_t ignored_batch_size) override;
  ::torch::optional<std::size_t> size() const override;  // batches of this rank in the epoch
  void reset() override;
  void set_epoch(std::uint64_t epoch);
  std::uint64_t epoch() const;
  // {"epoch", "remaining", "planned_for", ...} as the string entry "lazycube_forecast_state".
  void save(::torch::serialize::OutputArchive& archive) const override;
  void load(::torch::serialize::InputArchive& archive) override;
  const batch::ForecastSampler& sampler() const;

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
  void load_state(const nlohmann::json& state);
};

}  // namespace lazycube::torch
