// Trains a one-layer convolution to predict the change of t2m over the next hour from t2m, u10
// and v10 now, with lazycube::torch::BatchDataset feeding torch::data::make_data_loader, for two
// epochs. Prints the loss of every step and the windows per second; fails when the loss is not
// finite.
//
//   train_torch data/era5_sample_v2.zarr
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>

#include <lazycube/adapters/torch.hpp>
#include <lazycube/lazycube.hpp>

namespace lb = lazycube::batch;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s ZARR_URL\n", argv[0]);
    return 2;
  }
  try {
    lb::BatchOptions opt;
    opt.input_dims = {{"time", 1}, {"latitude", 32}, {"longitude", 32}};
    opt.batch_size = 32;
    opt.variables = {"t2m", "u10", "v10"};
    opt.target = lb::TargetSpec{{"t2m"}, {{"time", 1}}};  // y = t2m one hour later
    opt.shuffle = lb::Shuffle::Chunk;
    opt.seed = 2026;
    lazycube::torch::BatchDataset data(argv[1], opt);
    // The loader's copy shares the generator with `data`; its batch size is BatchOptions'.
    auto loader = torch::data::make_data_loader(data, torch::data::DataLoaderOptions().workers(2));

    torch::manual_seed(0);
    torch::nn::Conv2d model(torch::nn::Conv2dOptions(3, 1, 3).padding(1));
    torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-2));
    // Rough per-channel scales of the sample (K, m/s, m/s): inputs of order one.
    const torch::Tensor mean = torch::tensor({280.0f, 0.0f, 0.0f}).view({1, 3, 1, 1});
    const torch::Tensor scale = torch::tensor({10.0f, 5.0f, 5.0f}).view({1, 3, 1, 1});

    const auto start = std::chrono::steady_clock::now();
    long windows = 0;
    int step = 0;
    for (int epoch = 0; epoch < 2; ++epoch) {
      for (auto& batch : *loader) {
        // x: (sample, channel, time=1, lat, lon) -> (sample, channel, lat, lon); y likewise.
        const torch::Tensor x = batch.data.squeeze(2);
        const torch::Tensor y = batch.target.squeeze(2);
        const torch::Tensor delta = y - x.narrow(1, 0, 1);  // the hour's change of t2m
        optimizer.zero_grad();
        const torch::Tensor loss = torch::mse_loss(model->forward((x - mean) / scale), delta);
        loss.backward();
        optimizer.step();
        const double value = loss.item<double>();
        windows += x.size(0);
        ++step;
        std::printf("epoch %d step %d: loss %.5f\n", epoch, step, value);
        if (!std::isfinite(value)) {
          std::fprintf(stderr, "train_torch: the loss is not finite\n");
          return 1;
        }
      }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%d steps, %ld windows in %.2f s: %.0f windows/s\n", step, windows, seconds,
                static_cast<double>(windows) / seconds);
    return step > 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_torch: %s\n", e.what());
    return 1;
  }
}
