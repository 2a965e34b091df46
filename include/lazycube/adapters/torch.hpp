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

}  // namespace lazycube::torch
