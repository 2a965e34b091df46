// Iterates shuffled training batches (x = t2m, u10, v10 at time t; y = t2m at t+1) over a
// Zarr store for two epochs, checkpointing and resuming mid-epoch, and prints what it saw.
//
//   train_batches data/era5_sample_v3.zarr
#include <cstdio>
#include <exception>

#include <lazycube/lazycube.hpp>

namespace lb = lazycube::batch;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s ZARR_URL\n", argv[0]);
    return 2;
  }
  try {
    lazycube::Dataset ds = lazycube::open(argv[1]);
    lb::BatchOptions opt;
    opt.input_dims = {{"time", 1}, {"latitude", 32}, {"longitude", 32}};
    opt.batch_size = 16;
    opt.variables = {"t2m", "u10", "v10"};
    opt.target = lb::TargetSpec{{"t2m"}, {{"time", 1}}};
    opt.shuffle = lb::Shuffle::Chunk;
    opt.seed = 2026;
    lb::BatchGenerator gen(ds, opt);
    std::printf("%llu windows per epoch, %llu batches\n", static_cast<unsigned long long>(gen.total_windows()),
                static_cast<unsigned long long>(gen.size()));
    nlohmann::json checkpoint;
    for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
      gen.set_epoch(epoch);
      std::uint64_t windows = 0;
      double sum = 0;
      while (auto b = gen.next()) {
        const lb::BatchArray& x = b->arrays[0];
        const float* v = reinterpret_cast<const float*>(x.data.get());
        for (std::uint64_t i = 0; i < x.size(); ++i) sum += v[i];
        windows += b->windows.size();
        if (epoch == 0 && b->index == 2) checkpoint = gen.state();
      }
      std::printf("epoch %llu: %llu windows, mean x %.3f, cache hit rate %.2f\n",
                  static_cast<unsigned long long>(epoch), static_cast<unsigned long long>(windows),
                  sum / static_cast<double>(windows * 3 * 32 * 32), gen.cache()->stats().hit_rate());
      if (windows != gen.total_windows()) return 1;
    }
    // Resume epoch 0 after its third batch, as a restarted training job would.
    lb::BatchGenerator resumed(ds, opt);
    resumed.restore(checkpoint);
    auto b = resumed.next();
    std::printf("resumed at epoch %llu batch %llu, x %s, y %s\n", static_cast<unsigned long long>(b->epoch),
                static_cast<unsigned long long>(b->index), b->arrays[0].dtype.name().c_str(),
                b->target->dtype.name().c_str());
    return b->index == 3 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_batches: %s\n", e.what());
    return 1;
  }
}
