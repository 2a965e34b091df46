// lazycube::torch::BatchDataset: tensors equal to the generator's batches without a copy,
// (x, y) pairs, torch::data::make_data_loader with 0 and 2 workers, epochs through reset(),
// save/load mid-epoch, and the errors (pin_memory without CUDA, compatibility mode, dtypes).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "batch_test_data.hpp"
#include "lazycube/adapters/torch.hpp"
#include "lazycube/error.hpp"
#include "test_support.hpp"
#include "lazycube/adapters/cuda.hpp"

using namespace lazycube;
using lazycube::test::message_of;
using lazycube::testing::cell_value;
using lazycube::testing::position_dataset;
using LcBatchDataset = lazycube::torch::BatchDataset;

namespace {

// 6 times x 8 y x 8 x, two float32 variables a, b; windows of (1, 4, 4): 6 * 2 * 2 = 24.
constexpr std::uint64_t kWindows = 24;
Dataset small_dataset() { return position_dataset(6, 8, 8, {2, 4, 4}); }

batch::BatchOptions small_options(std::uint64_t batch_size = 5) {
  batch::BatchOptions o;
  o.input_dims = {{"time", 1}, {"y", 4}, {"x", 4}};
  o.batch_size = batch_size;
  o.cache = std::make_shared<ChunkCache>(16 << 20);
  return o;
}

// A window's key: the value of its first cell in variable a (1e4 t + 100 y + x of its start).
std::vector<std::int64_t> window_keys(const ::torch::Tensor& x) {
  std::vector<std::int64_t> keys;
  auto acc = x.accessor<float, 5>();
  for (std::int64_t s = 0; s < x.size(0); ++s) keys.push_back(static_cast<std::int64_t>(acc[s][0][0][0][0]));
  return keys;
}

std::vector<std::int64_t> window_keys(const batch::Batch& b) {
  std::vector<std::int64_t> keys;
  for (const auto& w : b.windows)
    keys.push_back(static_cast<std::int64_t>(cell_value(0, w[0].start, w[1].start, w[2].start)));
  return keys;
}

std::multiset<std::int64_t> all_window_keys() {
  std::multiset<std::int64_t> keys;
  for (std::uint64_t t = 0; t < 6; ++t)
    for (std::uint64_t y = 0; y < 8; y += 4)
      for (std::uint64_t x = 0; x < 8; x += 4) keys.insert(static_cast<std::int64_t>(cell_value(0, t, y, x)));
  return keys;
}

// One pass over the dataset as the DataLoader does it: reset(), then get_batch() until nullopt.
std::vector<std::int64_t> pass_keys(LcBatchDataset& ds) {
  ds.reset();
  std::vector<std::int64_t> keys;
  while (auto ex = ds.get_batch(1)) {
    auto k = window_keys(ex->data);
    keys.insert(keys.end(), k.begin(), k.end());
  }
  return keys;
}

// Buffers handed out and freed by a BatchAllocator, to see where tensors point.
struct AllocationLog {
  std::mutex mutex;
  std::set<const std::byte*> allocated, freed;
  bool was_allocated(const void* p) {
    std::lock_guard lock(mutex);
    return allocated.count(static_cast<const std::byte*>(p)) > 0;
  }
  bool was_freed(const void* p) {
    std::lock_guard lock(mutex);
    return freed.count(static_cast<const std::byte*>(p)) > 0;
  }
};

batch::BatchAllocator logging_allocator(std::shared_ptr<AllocationLog> log) {
  return [log](std::size_t bytes) {
    auto* p = static_cast<std::byte*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64));
    {
      std::lock_guard lock(log->mutex);
      log->allocated.insert(p);
      log->freed.erase(p);  // an address can come back after a free
    }
    return std::shared_ptr<std::byte>(p, [log](std::byte* q) {
      {
        std::lock_guard lock(log->mutex);
        log->freed.insert(q);
      }
      std::free(q);
    });
  };
}

}  // namespace

TEST(TorchBatchDataset, TensorsEqualTheGeneratorBatchesOnTheBundledSample) {
  const std::string url = std::string(LAZYCUBE_SOURCE_DIR) + "/data/era5_sample_v2.zarr";
  batch::BatchOptions o;
  o.input_dims = {{"time", 1}, {"latitude", 32}, {"longitude", 32}};
  o.batch_size = 16;
  o.variables = {"t2m", "u10", "v10"};
  o.target = batch::TargetSpec{{"t2m"}, {{"time", 1}}};
  o.shuffle = batch::Shuffle::Chunk;
  o.seed = 11;
  LcBatchDataset ds(url, o);
  batch::BatchGenerator gen(lazycube::open(url), o);
  ASSERT_EQ(ds.size().value(), gen.size());
  std::uint64_t batches = 0;
  // The DataLoader's batch size argument is ignored: 3 or 1000, the batches have 16 windows.
  while (auto ex = ds.get_batch(batches % 2 ? 3 : 1000)) {
    auto b = gen.next();
    ASSERT_TRUE(b.has_value()) << "the dataset yields more batches than the generator";
    const batch::BatchArray& x = b->arrays[0];
    ASSERT_TRUE(ex->data.defined());
    EXPECT_EQ(ex->data.scalar_type(), ::torch::kFloat32);
    EXPECT_EQ(ex->data.sizes().vec(), std::vector<std::int64_t>(x.shape.begin(), x.shape.end()));
    EXPECT_EQ(ex->data.size(1), 3);
    EXPECT_TRUE(ex->data.is_contiguous());
    ASSERT_EQ(static_cast<std::size_t>(ex->data.nbytes()), x.nbytes);
    EXPECT_EQ(std::memcmp(ex->data.data_ptr(), x.data.get(), x.nbytes), 0) << "x of batch " << batches;
    ASSERT_TRUE(ex->target.defined());
    ASSERT_TRUE(b->target.has_value());
    EXPECT_EQ(ex->target.sizes().vec(), std::vector<std::int64_t>(b->target->shape.begin(), b->target->shape.end()));
    EXPECT_EQ(ex->target.size(1), 1);
    ASSERT_EQ(static_cast<std::size_t>(ex->target.nbytes()), b->target->nbytes);
    EXPECT_EQ(std::memcmp(ex->target.data_ptr(), b->target->data.get(), b->target->nbytes), 0) << "y of batch " << batches;
    ++batches;
  }
  EXPECT_FALSE(gen.next().has_value());
  EXPECT_EQ(batches, gen.size());
  EXPECT_GT(batches, 1u);
}

// The LibTorch adapter takes the generator's one document too (BatchOptions::from_json, as
// Python and the CLI): the same batches as the options filled field by field.
TEST(TorchBatchDataset, TakesTheGeneratorDocument) {
  const std::string url = std::string(LAZYCUBE_SOURCE_DIR) + "/data/era5_sample_v2.zarr";
  const auto document = nlohmann::ordered_json::parse(R"({
      "input_dims": {"time": 1, "latitude": 32, "longitude": 32}, "batch_size": 16,
      "variables": ["t2m", "u10"], "target": {"variables": ["t2m"], "offset": {"time": 1}},
      "shuffle": "chunk", "seed": 11})");
  batch::BatchOptions o;
  o.input_dims = {{"time", 1}, {"latitude", 32}, {"longitude", 32}};
  o.batch_size = 16;
  o.variables = {"t2m", "u10"};
  o.target = batch::TargetSpec{{"t2m"}, {{"time", 1}}};
  o.shuffle = batch::Shuffle::Chunk;
  o.seed = 11;
  LcBatchDataset from_document(url, batch::BatchOptions::from_json(document));
  LcBatchDataset by_fields(url, o);
  ASSERT_EQ(from_document.size().value(), by_fields.size().value());
  std::uint64_t batches = 0;
  while (auto a = from_document.get_batch(16)) {
    auto b = by_fields.get_batch(16);
    ASSERT_TRUE(b.has_value());
    EXPECT_TRUE(::torch::equal(a->data, b->data)) << "x of batch " << batches;
    EXPECT_TRUE(::torch::equal(a->target, b->target)) << "y of batch " << batches;
    ++batches;
  }
  EXPECT_EQ(batches, from_document.size().value());
  const std::string m = message_of<UsageError>(
      [] { batch::BatchOptions::from_json(nlohmann::ordered_json::parse(R"({"batch_sise": 16})")); });
  EXPECT_NE(m.find("batch_sise"), std::string::npos) << m;
}

TEST(TorchBatchDataset, TensorsPointIntoTheBatchBufferAndOutliveTheDataset) {
  auto log = std::make_shared<AllocationLog>();
  auto o = small_options();
  o.allocator = logging_allocator(log);
  ::torch::Tensor x;
  {
    LcBatchDataset ds(small_dataset(), o);
    auto ex = ds.get_batch(1);
    ASSERT_TRUE(ex.has_value());
    x = ex->data;
    EXPECT_TRUE(log->was_allocated(x.data_ptr())) << "x is not the batch buffer (copied?)";
    EXPECT_FALSE(ex->target.defined()) << "no TargetSpec: y must be undefined";
  }  // the dataset, its generator and the prefetched batches are gone
  EXPECT_FALSE(log->was_freed(x.data_ptr()));
  ASSERT_EQ(x.sizes().vec(), (std::vector<std::int64_t>{5, 2, 1, 4, 4}));
  auto acc = x.accessor<float, 5>();
  // Batch 0 holds windows 0..4 in row-major order: starts (t, y, x) = (0,0,0) (0,0,4) (0,4,0) (0,4,4) (1,0,0).
  const std::uint64_t starts[5][3] = {{0, 0, 0}, {0, 0, 4}, {0, 4, 0}, {0, 4, 4}, {1, 0, 0}};
  for (int s = 0; s < 5; ++s)
    for (int c = 0; c < 2; ++c)
      for (int yy = 0; yy < 4; ++yy)
        for (int xx = 0; xx < 4; ++xx)
          ASSERT_EQ(acc[s][c][0][yy][xx], static_cast<float>(cell_value(c, starts[s][0], starts[s][1] + yy, starts[s][2] + xx)))
              << "sample " << s << " channel " << c;
  void* p = x.data_ptr();
  x = ::torch::Tensor();
  EXPECT_TRUE(log->was_freed(p)) << "the buffer must be released with the last tensor";
}

TEST(TorchBatchDataset, ToTensorSharesTheBuffer) {
  batch::BatchGenerator gen(small_dataset(), small_options());
  auto b = gen.next();
  ASSERT_TRUE(b.has_value());
  ::torch::Tensor t = lazycube::torch::to_tensor(b->arrays[0]);
  EXPECT_EQ(t.data_ptr(), static_cast<void*>(b->arrays[0].data.get()));
  EXPECT_EQ(b->arrays[0].data.use_count(), 2) << "the tensor's deleter holds one reference";
  t = ::torch::Tensor();
  EXPECT_EQ(b->arrays[0].data.use_count(), 1);
}

TEST(TorchBatchDataset, TargetIsTheWindowOneStepLater) {
  auto o = small_options(4);
  o.variables = {"a"};
  o.target = batch::TargetSpec{{"b"}, {{"time", 1}}};
  LcBatchDataset ds(small_dataset(), o);
  std::uint64_t windows = 0;
  while (auto ex = ds.get_batch(1)) {
    ASSERT_TRUE(ex->target.defined());
    ASSERT_EQ(ex->target.sizes(), ex->data.sizes());
    // y = b at t+1 = x (a at t) + 1e6 (variable) + 1e4 (one time step), element by element.
    EXPECT_TRUE(::torch::equal(ex->target, ex->data + 1.01e6f));
    windows += static_cast<std::uint64_t>(ex->data.size(0));
  }
  EXPECT_EQ(windows, 20u);  // time extent 6 - 1 for the offset: 5 * 2 * 2
}

TEST(TorchBatchDataset, DtypesMapToTorchTypes) {
  using lazycube::torch::scalar_type;
  EXPECT_EQ(scalar_type(DataType::float_(4)), ::torch::kFloat32);
  EXPECT_EQ(scalar_type(DataType::float_(8)), ::torch::kFloat64);
  EXPECT_EQ(scalar_type(DataType::float_(2)), ::torch::kFloat16);
  EXPECT_EQ(scalar_type(DataType::int_(1)), ::torch::kInt8);
  EXPECT_EQ(scalar_type(DataType::int_(2)), ::torch::kInt16);
  EXPECT_EQ(scalar_type(DataType::int_(4)), ::torch::kInt32);
  EXPECT_EQ(scalar_type(DataType::int_(8)), ::torch::kInt64);
  EXPECT_EQ(scalar_type(DataType::uint(1)), ::torch::kUInt8);
  EXPECT_EQ(scalar_type(DataType::boolean()), ::torch::kBool);
  for (const DataType& bad : {DataType::uint(2), DataType::uint(4), DataType::uint(8), DataType::complex(8),
                              DataType::datetime("s"), DataType::string()}) {
    const std::string msg = message_of<UsageError>([&] { (void)scalar_type(bad); });
    EXPECT_NE(msg.find(bad.name()), std::string::npos) << msg;
  }
  // An unsupported BatchOptions::dtype is refused when the dataset is made.
  auto o = small_options();
  o.dtype = DataType::uint(2);
  const std::string msg = message_of<UsageError>([&] { LcBatchDataset ds(small_dataset(), o); });
  EXPECT_NE(msg.find("uint16"), std::string::npos) << msg;
}

TEST(TorchBatchDataset, IntegerAndFloat64BatchesKeepTheirValues) {
  for (const auto& [code, type] : std::map<std::string, ::torch::Dtype>{{"i4", ::torch::kInt32}, {"f8", ::torch::kFloat64}}) {
    LcBatchDataset ds(position_dataset(6, 8, 8, {2, 4, 4}, {code, code}), small_options());
    auto ex = ds.get_batch(1);
    ASSERT_TRUE(ex.has_value());
    EXPECT_EQ(ex->data.scalar_type(), type) << code;
    // Window 1 starts at (0, 0, 4): its (y 2, x 3) cell of channel 1 is b at (0, 2, 7).
    EXPECT_EQ(ex->data.index({1, 1, 0, 2, 3}).item<double>(), cell_value(1, 0, 2, 7)) << code;
  }
}

TEST(TorchBatchDataset, DataLoaderCoversEveryWindowOncePerEpoch) {
  for (std::size_t workers : {0u, 2u}) {
    auto o = small_options();
    o.shuffle = batch::Shuffle::Random;
    o.seed = 3;
    LcBatchDataset ds(small_dataset(), o);
    auto loader = ::torch::data::make_data_loader(ds, ::torch::data::DataLoaderOptions().workers(workers));
    std::vector<std::vector<std::int64_t>> epochs;
    for (int pass = 0; pass < 2; ++pass) {
      std::vector<std::int64_t> keys;
      for (auto& ex : *loader) {
        auto k = window_keys(ex.data);
        keys.insert(keys.end(), k.begin(), k.end());
      }
      EXPECT_EQ(std::multiset<std::int64_t>(keys.begin(), keys.end()), all_window_keys())
          << workers << " workers, pass " << pass;
      epochs.push_back(keys);
    }
    EXPECT_EQ(ds.epoch(), 1u) << "the loader's second pass is epoch 1 (the dataset copy shares the generator)";
    EXPECT_NE(epochs[0], epochs[1]) << workers << " workers: epoch 1 must be shuffled differently";
  }
}

TEST(TorchBatchDataset, ResetStartsTheNextEpochInTheSeededOrder) {
  auto o = small_options();
  o.shuffle = batch::Shuffle::Random;
  o.seed = 7;
  LcBatchDataset ds(small_dataset(), o), same_seed(small_dataset(), o);
  batch::BatchGenerator gen(small_dataset(), o);
  auto generator_keys = [&](std::uint64_t epoch) {
    gen.set_epoch(epoch);
    std::vector<std::int64_t> keys;
    while (auto b = gen.next()) {
      auto k = window_keys(*b);
      keys.insert(keys.end(), k.begin(), k.end());
    }
    return keys;
  };
  const auto e0 = pass_keys(ds);  // the first reset() keeps epoch 0
  EXPECT_EQ(ds.epoch(), 0u);
  const auto e1 = pass_keys(ds);
  EXPECT_EQ(ds.epoch(), 1u);
  EXPECT_EQ(e0, generator_keys(0));
  EXPECT_EQ(e1, generator_keys(1));
  EXPECT_NE(e0, e1);
  EXPECT_EQ(e0.size(), kWindows);
  EXPECT_EQ(pass_keys(same_seed), e0);
  EXPECT_EQ(pass_keys(same_seed), e1);
  // set_epoch(e) before a pass runs e: reset() keeps it.
  ds.set_epoch(0);
  EXPECT_EQ(pass_keys(ds), e0);
  EXPECT_EQ(ds.epoch(), 0u);
}

TEST(TorchBatchDataset, SaveAndLoadResumeMidEpoch) {
  auto o = small_options();
  o.shuffle = batch::Shuffle::Random;
  o.seed = 5;
  LcBatchDataset ds(small_dataset(), o);
  (void)pass_keys(ds);  // epoch 0
  ds.reset();           // epoch 1
  std::vector<std::int64_t> first;
  for (int i = 0; i < 2; ++i) {
    auto k = window_keys(ds.get_batch(1)->data);
    first.insert(first.end(), k.begin(), k.end());
  }
  ::torch::serialize::OutputArchive out;
  ds.save(out);
  std::stringstream bytes;
  out.save_to(bytes);
  std::vector<std::int64_t> rest;
  while (auto ex = ds.get_batch(1)) {
    auto k = window_keys(ex->data);
    rest.insert(rest.end(), k.begin(), k.end());
  }

  // A fresh dataset (a restarted job) loads the checkpoint; the loader's reset() keeps it.
  LcBatchDataset resumed(small_dataset(), o);
  ::torch::serialize::InputArchive in;
  in.load_from(bytes);
  resumed.load(in);
  EXPECT_EQ(resumed.epoch(), 1u);
  auto loader = ::torch::data::make_data_loader(resumed, ::torch::data::DataLoaderOptions().workers(0));
  std::vector<std::int64_t> resumed_keys;
  for (auto& ex : *loader) {
    auto k = window_keys(ex.data);
    resumed_keys.insert(resumed_keys.end(), k.begin(), k.end());
  }
  EXPECT_EQ(resumed_keys, rest) << "no window repeated or skipped";
  std::multiset<std::int64_t> whole(first.begin(), first.end());
  whole.insert(rest.begin(), rest.end());
  EXPECT_EQ(whole, all_window_keys());
  // The next pass is epoch 2 from its beginning.
  std::vector<std::int64_t> next_epoch;
  for (auto& ex : *loader) {
    auto k = window_keys(ex.data);
    next_epoch.insert(next_epoch.end(), k.begin(), k.end());
  }
  EXPECT_EQ(resumed.epoch(), 2u);
  EXPECT_EQ(next_epoch.size(), kWindows);
}

TEST(TorchBatchDataset, LoadRefusesForeignArchivesAndStates) {
  auto o = small_options();
  LcBatchDataset ds(small_dataset(), o);
  ::torch::serialize::OutputArchive empty;
  empty.write("something_else", c10::IValue(std::int64_t{1}));
  std::stringstream bytes;
  empty.save_to(bytes);
  ::torch::serialize::InputArchive in;
  in.load_from(bytes);
  std::string msg = message_of<UsageError>([&] { ds.load(in); });
  EXPECT_NE(msg.find("lazycube_batch_state"), std::string::npos) << msg;

  auto other = o;
  other.seed = 99;
  LcBatchDataset other_ds(small_dataset(), other);
  ::torch::serialize::OutputArchive out;
  other_ds.save(out);
  std::stringstream other_bytes;
  out.save_to(other_bytes);
  ::torch::serialize::InputArchive other_in;
  other_in.load_from(other_bytes);
  msg = message_of<UsageError>([&] { ds.load(other_in); });
  EXPECT_NE(msg.find("seed"), std::string::npos) << msg;
}

TEST(TorchBatchDataset, PinMemoryNeedsCuda) {
  lazycube::torch::BatchDatasetOptions pinned;
  pinned.pin_memory = true;
  if (lazycube::cuda::device_count() > 0) {
    // Batches in page-locked memory, equal to the pageable ones, copied to the GPU as they are.
    // torch answers is_pinned() only once it has initialised CUDA itself (before, it says false
    // for any pointer, seen with torch 2.11 on an H100), so a CUDA tensor is made first.
    const bool torch_cuda = ::torch::cuda::is_available();
    if (torch_cuda) (void)::torch::zeros({1}, ::torch::kCUDA);
    LcBatchDataset ds(small_dataset(), small_options(), pinned);
    LcBatchDataset plain(small_dataset(), small_options());
    for (std::size_t i = 0; i < 3; ++i) {
      auto ex = ds.get_batch(i);
      auto ref = plain.get_batch(i);
      ASSERT_TRUE(ex.has_value() && ref.has_value());
      EXPECT_EQ(ex->data.size(0), 5);
      EXPECT_TRUE(::torch::equal(ex->data, ref->data)) << "batch " << i;
      if (!torch_cuda) continue;  // a CPU-only LibTorch cannot tell pinned memory apart
      EXPECT_TRUE(ex->data.is_pinned()) << "batch " << i;
      EXPECT_FALSE(ref->data.is_pinned());
      const auto on_gpu = ex->data.to(::torch::kCUDA, /*non_blocking=*/true);
      EXPECT_TRUE(::torch::equal(on_gpu.cpu(), ref->data)) << "batch " << i;
    }
    return;
  }
  // No usable device (or a build without CUDA): a UsageError that says why.
  const std::string msg = message_of<UsageError>([&] {
    LcBatchDataset ds(small_dataset(), small_options(), pinned);
    (void)ds.get_batch(1);
  });
  EXPECT_NE(msg.find(lazycube::cuda::unavailable_reason()), std::string::npos) << msg;
  auto o = small_options();
  o.allocator = [](std::size_t n) { return std::shared_ptr<std::byte>(new std::byte[n], std::default_delete<std::byte[]>()); };
  const std::string both = message_of<UsageError>([&] { LcBatchDataset ds(small_dataset(), o, pinned); });
  EXPECT_NE(both.find("allocator"), std::string::npos) << both;
}

TEST(TorchBatchDataset, CompatibilityModeIsRefused) {
  const std::string msg = message_of<UsageError>([] { LcBatchDataset ds(small_dataset(), small_options(0)); });
  EXPECT_NE(msg.find("batch_size > 0"), std::string::npos) << msg;
}
