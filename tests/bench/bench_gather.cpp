// lazycube_bench_gather: the copy bound of a warm training epoch (issue 47). The window rows a
// warm `lazycube bench` epoch assembles, copied straight out of decoded float32 arrays with one
// memcpy per row and nothing else (no cache lookups, no planning), on --threads threads: what the
// batch assembly's gather could at best reach on this machine. Run by run_ab_bench.py (the
// "warm epoch" rows); not a ctest test.
//
//   lazycube_bench_gather [--steps 128] [--lat 181] [--lon 360] [--vars 4] [--window 64]
//                         [--batch 32] [--epochs 10] [--threads 2] [--ring 4] [--seed 1]
//
// Windows time=1 x lat=window x lon=window, not overlapping, from index 0 (as WindowGrid lays
// them), visited in a seeded random order per epoch; batches of --batch windows x --vars
// channels, C order (sample, channel, lat, lon), written into a ring of --ring batch buffers
// (the generator's prefetched batches reuse a few buffers the same way). Each thread copies a
// contiguous half (third, ...) of the epoch's batches. Prints one JSON object: every epoch's
// seconds and the median of epochs 2.. (the first also faults the buffers in).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Args {
  std::uint64_t steps = 128, lat = 181, lon = 360, vars = 4, window = 64, batch = 32, epochs = 10, threads = 2,
                ring = 4, seed = 1;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "lazycube_bench_gather: %s\n", why.c_str());
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(flag + " needs a value");
    char* end = nullptr;
    const unsigned long long v = std::strtoull(argv[++i], &end, 10);
    if (*end != '\0' || v == 0) usage(flag + ": expected a positive integer, got '" + argv[i] + "'");
    if (flag == "--steps") a.steps = v;
    else if (flag == "--lat") a.lat = v;
    else if (flag == "--lon") a.lon = v;
    else if (flag == "--vars") a.vars = v;
    else if (flag == "--window") a.window = v;
    else if (flag == "--batch") a.batch = v;
    else if (flag == "--epochs") a.epochs = v;
    else if (flag == "--threads") a.threads = v;
    else if (flag == "--ring") a.ring = v;
    else if (flag == "--seed") a.seed = v;
    else usage("unknown option " + flag);
  }
  if (a.window > a.lat || a.window > a.lon) usage("--window is longer than --lat or --lon");
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  const std::uint64_t wy = a.lat / a.window, wx = a.lon / a.window, per_step = wy * wx;
  const std::uint64_t windows = a.steps * per_step;
  const std::uint64_t row = a.window * sizeof(float);
  const std::uint64_t window_bytes = a.window * row;
  const std::uint64_t batch_bytes = a.batch * a.vars * window_bytes;

  // The decoded arrays, every page touched (a warm epoch finds every chunk decoded in memory).
  std::vector<std::vector<float>> src(a.vars, std::vector<float>(a.steps * a.lat * a.lon));
  for (std::uint64_t c = 0; c < a.vars; ++c) std::iota(src[c].begin(), src[c].end(), static_cast<float>(c));
  std::vector<std::vector<std::byte>> ring(a.ring, std::vector<std::byte>(batch_bytes, std::byte{1}));

  std::mt19937_64 rng(a.seed);
  std::vector<std::uint64_t> order(windows);
  const std::uint64_t batches = (windows + a.batch - 1) / a.batch;
  std::vector<double> seconds;
  for (std::uint64_t e = 0; e < a.epochs; ++e) {
    std::iota(order.begin(), order.end(), std::uint64_t{0});
    std::shuffle(order.begin(), order.end(), rng);
    auto copy_batches = [&](std::uint64_t first, std::uint64_t last) {
      for (std::uint64_t b = first; b < last; ++b) {
        std::byte* dst = ring[b % a.ring].data();
        const std::uint64_t n = std::min(a.batch, windows - b * a.batch);
        for (std::uint64_t k = 0; k < n; ++k) {
          const std::uint64_t id = order[b * a.batch + k];
          const std::uint64_t t = id / per_step, y0 = (id % per_step) / wx * a.window, x0 = id % wx * a.window;
          for (std::uint64_t c = 0; c < a.vars; ++c) {
            const float* s = src[c].data() + (t * a.lat + y0) * a.lon + x0;
            std::byte* d = dst + (k * a.vars + c) * window_bytes;
            for (std::uint64_t y = 0; y < a.window; ++y) std::memcpy(d + y * row, s + y * a.lon, row);
          }
        }
      }
    };
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (std::uint64_t i = 1; i < a.threads; ++i)
      threads.emplace_back(copy_batches, batches * i / a.threads, batches * (i + 1) / a.threads);
    copy_batches(0, batches / a.threads);
    for (auto& t : threads) t.join();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::vector<double> warm(seconds.begin() + (seconds.size() > 1 ? 1 : 0), seconds.end());
  std::sort(warm.begin(), warm.end());
  const double median =
      warm.size() % 2 ? warm[warm.size() / 2] : (warm[warm.size() / 2 - 1] + warm[warm.size() / 2]) / 2;
  const double bytes = static_cast<double>(windows * a.vars * window_bytes);
  std::printf("{\"windows\": %llu, \"bytes_per_epoch\": %.0f, \"threads\": %llu, \"median_warm_epoch_s\": %.6f, "
              "\"gb_per_s\": %.3f, \"epoch_seconds\": [",
              static_cast<unsigned long long>(windows), bytes, static_cast<unsigned long long>(a.threads), median,
              bytes / median / 1e9);
  for (std::size_t i = 0; i < seconds.size(); ++i) std::printf("%s%.6f", i ? ", " : "", seconds[i]);
  std::printf("]}\n");
  return 0;
}
