// lazycube::torch::BatchDataset: BatchGenerator batches as zero-copy tensors for LibTorch's
// stateful DataLoader. The only translation unit of lazycube_torch (each one that includes
// <torch/torch.h> costs ~20 s and 1.4 GB to compile).
#include "lazycube/adapters/torch.hpp"

#include <mutex>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"

#include "lazycube/adapters/cuda.hpp"

namespace lazycube::torch {

namespace {

constexpr const char* kStateKey = "lazycube_batch_state";

batch::BatchOptions with_torch_options(batch::BatchOptions options, const BatchDatasetOptions& torch_options) {
  if (options.batch_size == 0)
    throw UsageError("lazycube::torch::BatchDataset needs stacked mode (BatchOptions::batch_size > 0); "
                     "batch_size 0 is xbatcher-compatibility mode, whose batches hold one array per variable");
  if (options.dtype) (void)scalar_type(*options.dtype);  // refuse an unsupported dtype up front
  if (torch_options.pin_memory) {
    if (options.allocator)
      throw UsageError("BatchDatasetOptions::pin_memory and BatchOptions::allocator are both set: choose one");
    options.allocator = lazycube::cuda::pinned_allocator();
  }
  return options;
}

}  // namespace

::torch::Dtype scalar_type(const DataType& dtype) {
  switch (dtype.kind) {
    case DTypeKind::Bool:
      if (dtype.itemsize == 1) return ::torch::kBool;
      break;
    case DTypeKind::Int:
      switch (dtype.itemsize) {
        case 1: return ::torch::kInt8;
        case 2: return ::torch::kInt16;
        case 4: return ::torch::kInt32;
        case 8: return ::torch::kInt64;
        default: break;
      }
      break;
    case DTypeKind::UInt:
      if (dtype.itemsize == 1) return ::torch::kUInt8;
      break;
    case DTypeKind::Float:
      switch (dtype.itemsize) {
        case 2: return ::torch::kFloat16;
        case 4: return ::torch::kFloat32;
        case 8: return ::torch::kFloat64;
        default: break;
      }
      break;
    default:
      break;
  }
  throw UsageError("dtype " + dtype.name() +
                   " has no torch tensor type here (supported: bool, int8/16/32/64, uint8, float16/32/64); "
                   "set BatchOptions::dtype to cast the batch");
}

::torch::Tensor to_tensor(const batch::BatchArray& array) {
  const ::torch::Dtype type = scalar_type(array.dtype);
  std::vector<std::int64_t> sizes(array.shape.begin(), array.shape.end());
  // The deleter owns a reference to the buffer: the tensor keeps it alive, without a copy.
  std::shared_ptr<std::byte> buffer = array.data;
  return ::torch::from_blob(
      buffer.get(), sizes, [buffer](void*) mutable { buffer.reset(); },
      ::torch::TensorOptions().dtype(type).device(::torch::kCPU));
}

struct BatchDataset::Shared {
  Shared(Dataset dataset, batch::BatchOptions options) : generator(std::move(dataset), std::move(options)) {}
  std::mutex mutex;
  batch::BatchGenerator generator;
  // No get_batch() since construction, set_epoch() or load(): reset() keeps the position.
  bool untouched = true;
};

BatchDataset::BatchDataset(Dataset dataset, batch::BatchOptions options, BatchDatasetOptions torch_options)
    : shared_(std::make_shared<Shared>(std::move(dataset), with_torch_options(std::move(options), torch_options))) {}

BatchDataset::BatchDataset(const std::string& url, batch::BatchOptions options, BatchDatasetOptions torch_options)
    : BatchDataset(lazycube::open(url), std::move(options), torch_options) {}

::torch::optional<::torch::data::Example<>> BatchDataset::get_batch(std::size_t /*ignored_batch_size*/) {
  std::optional<batch::Batch> b;
  {
    std::lock_guard lock(shared_->mutex);
    shared_->untouched = false;
    b = shared_->generator.next();
  }
  if (!b) return ::torch::nullopt;
  ::torch::Tensor x = to_tensor(b->arrays.at(0));
  ::torch::Tensor y = b->target ? to_tensor(*b->target) : ::torch::Tensor();
  return ::torch::data::Example<>{std::move(x), std::move(y)};
}

::torch::optional<std::size_t> BatchDataset::size() const {
  return static_cast<std::size_t>(shared_->generator.size());
}

void BatchDataset::reset() {
  std::lock_guard lock(shared_->mutex);
  batch::BatchGenerator& gen = shared_->generator;
  const bool at_end = gen.state()["position"].get<std::uint64_t>() >= gen.shard_windows();
  if (!shared_->untouched || at_end) gen.set_epoch(gen.epoch() + 1);
  shared_->untouched = true;
}

void BatchDataset::set_epoch(std::uint64_t epoch) {
  std::lock_guard lock(shared_->mutex);
  shared_->generator.set_epoch(epoch);
  shared_->untouched = true;
}

std::uint64_t BatchDataset::epoch() const {
  std::lock_guard lock(shared_->mutex);
  return shared_->generator.epoch();
}

void BatchDataset::save(::torch::serialize::OutputArchive& archive) const {
  std::string state;
  {
    std::lock_guard lock(shared_->mutex);
    state = shared_->generator.state().dump();
  }
  archive.write(kStateKey, c10::IValue(std::move(state)));
}

void BatchDataset::load(::torch::serialize::InputArchive& archive) {
  c10::IValue value;
  if (!archive.try_read(kStateKey, value) || !value.isString())
    throw UsageError(std::string("BatchDataset::load: the archive holds no string entry '") + kStateKey +
                     "' (it was not written by lazycube::torch::BatchDataset::save)");
  nlohmann::json state = nlohmann::json::parse(value.toStringRef(), nullptr, /*allow_exceptions=*/false);
  if (state.is_discarded())
    throw UsageError(std::string("BatchDataset::load: entry '") + kStateKey + "' is not valid JSON");
  std::lock_guard lock(shared_->mutex);
  shared_->generator.restore(state);
  shared_->untouched = true;
}

batch::BatchGenerator& BatchDataset::generator() const { return shared_->generator; }

}  // namespace lazycube::torch
