// lazycube::torch::ForecastDataset over the bundled sample: its batches are the sampler's, the
// DataLoader's epochs cover every sample once, rollout cuts the lead times, and a state saved by
// a 2-rank job resumes in a 3-rank one with every sample of the epoch delivered once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "lazycube/adapters/torch.hpp"
#include "lazycube/dataset/dataset.hpp"

using namespace lazycube;

namespace {

const std::string kSample = std::string(LAZYCUBE_SOURCE_DIR) + "/data/era5_sample_v2.zarr";
const char* kSpec = R"({"inputs": ["t2m", "u10"], "targets": ["t2m"], "forcings": ["year_progress_cos"],
                        "input_offsets": ["-1h", "0h"], "target_offsets": ["1h", "2h"]})";

// own_cache: a cache of its own and missing "keep" (no validity pass), so that what the epoch
// fetches is the epoch's alone.
std::shared_ptr<batch::ForecastSampler> sampler(bool own_cache = false) {
  std::vector<std::pair<std::string, Dataset>> streams;
  streams.emplace_back("", lazycube::open(kSample));
  batch::ForecastRuntime rt;
  rt.index_dir = "off";
  auto spec = nlohmann::ordered_json::parse(kSpec);
  if (own_cache) {
    rt.cache = std::make_shared<ChunkCache>(std::uint64_t{256} << 20);
    spec["missing"] = "keep";
  }
  return std::make_shared<batch::ForecastSampler>(std::move(streams), batch::ForecastSpec::from_json(spec, {""}), rt);
}

std::vector<std::int64_t> ids_of(const lazycube::torch::ForecastExample& e) {
  const auto* p = e.samples.data_ptr<std::int64_t>();
  return std::vector<std::int64_t>(p, p + e.samples.numel());
}

}  // namespace

TEST(TorchForecastDataset, BatchesAreTheSamplersAndCoverTheEpoch) {
  auto s = sampler();
  lazycube::torch::ForecastDatasetOptions o;
  o.batch_size = 6;
  o.shuffle = batch::Shuffle::Random;
  o.seed = 4;
  o.rollout = 1;
  lazycube::torch::ForecastDataset data(s, o);
  auto loader = ::torch::data::make_data_loader(data, ::torch::data::DataLoaderOptions().workers(0));
  std::vector<std::int64_t> seen;
  for (auto& b : *loader) {
    ASSERT_EQ(b.streams.size(), 1u);
    const auto ids = ids_of(b);
    EXPECT_EQ(b.streams[0].targets.size(1), 1);  // rollout 1
    std::vector<std::uint64_t> u(ids.begin(), ids.end());
    const batch::ForecastBatch want = s->batch(u, 1);
    EXPECT_TRUE(::torch::equal(b.streams[0].inputs, lazycube::torch::to_tensor(want.streams[0].inputs)));
    EXPECT_TRUE(::torch::equal(b.streams[0].forcings, lazycube::torch::to_tensor(*want.streams[0].forcings)));
    seen.insert(seen.end(), ids.begin(), ids.end());
  }
  std::sort(seen.begin(), seen.end());
  ASSERT_EQ(seen.size(), s->size());
  for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<std::int64_t>(i));
}

TEST(TorchForecastDataset, FetchAheadAndPrefetchKeepTheBatchesAndTheirOrder) {
  // Batches come out of a batch::ForecastEpoch: fetch-ahead over the planner's order and
  // `prefetch` batches assembled at once change neither the batches nor their order.
  std::vector<std::vector<std::int64_t>> epochs;
  std::vector<std::uint64_t> fetched_ahead;
  for (const bool ahead : {false, true}) {
    auto s = sampler(true);
    lazycube::torch::ForecastDatasetOptions o;
    o.batch_size = 4;
    o.shuffle = batch::Shuffle::Chunk;
    o.seed = 9;
    o.prefetch = ahead ? 3 : 0;
    o.fetch_ahead_bytes = ahead ? std::nullopt : std::optional<std::uint64_t>(0);
    lazycube::torch::ForecastDataset data(s, o);
    auto loader = ::torch::data::make_data_loader(data, ::torch::data::DataLoaderOptions().workers(0));
    std::vector<std::int64_t> ids;
    for (auto& b : *loader) {
      const auto got = ids_of(b);
      ids.insert(ids.end(), got.begin(), got.end());
    }
    epochs.push_back(ids);
    fetched_ahead.push_back(s->cache()->stats().fetched_ahead);
  }
  EXPECT_EQ(epochs[0], epochs[1]);
  EXPECT_EQ(fetched_ahead[0], 0u);
  EXPECT_GT(fetched_ahead[1], 0u);
}

TEST(TorchForecastDataset, StateOfTwoRanksResumesInThree) {
  auto s = sampler();
  std::vector<std::int64_t> seen;
  std::string saved;
  for (std::uint32_t r = 0; r < 2; ++r) {
    lazycube::torch::ForecastDatasetOptions o;
    o.batch_size = 4;
    o.shuffle = batch::Shuffle::Random;
    o.seed = 9;
    o.rank = r;
    o.world_size = 2;
    lazycube::torch::ForecastDataset data(s, o);
    data.set_epoch(1);
    for (int k = 0; k < 3; ++k) {
      auto b = data.get_batch(0);
      ASSERT_TRUE(b);
      const auto ids = ids_of(*b);
      seen.insert(seen.end(), ids.begin(), ids.end());
    }
    if (r == 0) {
      std::ostringstream out;
      ::torch::serialize::OutputArchive archive;
      data.save(archive);
      archive.save_to(out);
      saved = out.str();
    }
  }
  std::set<std::uint64_t> counts;
  for (std::uint32_t r = 0; r < 3; ++r) {
    lazycube::torch::ForecastDatasetOptions o;
    o.batch_size = 4;
    o.shuffle = batch::Shuffle::Random;
    o.seed = 9;
    o.rank = r;
    o.world_size = 3;
    lazycube::torch::ForecastDataset data(s, o);
    std::istringstream in(saved);
    ::torch::serialize::InputArchive archive;
    archive.load_from(in);
    data.load(archive);
    EXPECT_EQ(data.epoch(), 1u);
    counts.insert(*data.size());
    while (auto b = data.get_batch(0)) {
      const auto ids = ids_of(*b);
      seen.insert(seen.end(), ids.begin(), ids.end());
    }
  }
  EXPECT_EQ(counts.size(), 1u);
  std::sort(seen.begin(), seen.end());
  ASSERT_EQ(seen.size(), s->size());
  for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<std::int64_t>(i));
}

TEST(TorchForecastDataset, AStateOfAnotherVersionOrShapeIsNamed) {
  auto s = sampler();
  lazycube::torch::ForecastDatasetOptions o;
  o.batch_size = 4;
  lazycube::torch::ForecastDataset data(s, o);
  auto load = [&](const std::string& text) {
    ::torch::serialize::OutputArchive out;
    out.write("lazycube_forecast_state", c10::IValue(text));
    std::ostringstream bytes;
    out.save_to(bytes);
    std::istringstream in(bytes.str());
    ::torch::serialize::InputArchive archive;
    archive.load_from(in);
    data.load(archive);
  };
  auto message = [&](const std::string& text) {
    try {
      load(text);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // a state of lazycube before the epoch planner (an epoch position)
  EXPECT_NE(message(R"({"format": "lazycube-forecast-state", "epoch": 1, "position": 8, "samples": 3})")
                .find("older lazycube"),
            std::string::npos);
  EXPECT_NE(message("not json").find("not JSON"), std::string::npos);
  EXPECT_NE(message(R"({"format": "lazycube-forecast-state", "version": 2, "remaining": [[0, 1]]})")
                .find("lacks a field"),
            std::string::npos);
}
