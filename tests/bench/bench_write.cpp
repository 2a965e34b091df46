// lazycube_bench_write RAW_F4 T STORE CODECS FORMAT [--runs N]: writes a float32 array of shape
// (T, 1024, 1024) from a raw little-endian file (loaded once, untimed) to a local Zarr store in
// chunks of (1, 1024, 1024) through zarr::Writer (write_region: units encoded in parallel on
// the CPU pool), best of N; prints one JSON line. Driven by run_write_bench.py.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "lazycube/zarr/writer.hpp"

using namespace lazycube;

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s RAW_F4 T STORE CODECS FORMAT [--runs N]\n", argv[0]);
    return 2;
  }
  const std::string raw = argv[1], store = argv[3], codecs = argv[4];
  const std::uint64_t t = std::stoull(argv[2]);
  const int format = std::stoi(argv[5]);
  int runs = 3;
  if (argc >= 8 && std::string(argv[6]) == "--runs") runs = std::stoi(argv[7]);

  NDArray data;
  data.dtype = DataType::float_(4);
  data.shape = {t, 1024, 1024};
  data.data.resize(shape_size(data.shape) * 4);
  std::ifstream in(raw, std::ios::binary);
  in.read(reinterpret_cast<char*>(data.data.data()), static_cast<std::streamsize>(data.data.size()));
  if (in.gcount() != static_cast<std::streamsize>(data.data.size())) {
    std::fprintf(stderr, "%s holds fewer than %llu bytes\n", raw.c_str(), static_cast<unsigned long long>(data.data.size()));
    return 2;
  }
  zarr::ArraySpec spec;
  spec.zarr_format = format;
  spec.shape = data.shape;
  spec.chunk_shape = {1, 1024, 1024};
  spec.codecs = codecs;
  spec.fill_value = "NaN";
  spec.dimension_names = {"time", "y", "x"};

  double best = 1e300;
  for (int r = 0; r < runs; ++r) {
    std::filesystem::remove_all(store);
    const auto t0 = std::chrono::steady_clock::now();
    zarr::Writer w = zarr::Writer::open(store);
    w.create_array("data", spec)->write_region({0, 0, 0}, data);
    w.commit();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("{\"mode\": \"lazycube\", \"seconds\": %.4f, \"gb_per_s\": %.3f, \"bytes\": %llu, \"runs\": %d}\n", best,
              static_cast<double>(data.data.size()) / best / 1e9, static_cast<unsigned long long>(data.data.size()), runs);
  return 0;
}
