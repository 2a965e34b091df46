// lazycube_bench_read: whole-array read throughput of one Zarr store, one mode per process (so
// peak RSS is per peer). Prints one JSON line. Driven by run_read_bench.py; not a ctest test.
//
//   lazycube_bench_read lazycube|decode-bound|gdal STORE [--runs N] [--cores C]
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <thread>
#include <nlohmann/json.hpp>

#include "bench_modes.hpp"

namespace {

int usage() {
  std::cerr << "usage: lazycube_bench_read lazycube|decode-bound|gdal STORE [--runs N] [--cores C]\n"
               "  --runs N   timed runs, best reported (default 3)\n"
               "  --cores C  cores the decode bound scales by (default: hardware threads)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string mode = argv[1], store = argv[2];
  int runs = 3;
  unsigned cores = std::thread::hardware_concurrency();
  for (int i = 3; i < argc; ++i) {
    const std::string opt = argv[i];
    if (i + 1 >= argc) return usage();
    const long v = std::strtol(argv[++i], nullptr, 10);
    if (v <= 0) return usage();
    if (opt == "--runs") runs = static_cast<int>(v);
    else if (opt == "--cores") cores = static_cast<unsigned>(v);
    else return usage();
  }
  if (cores == 0) cores = 1;
  try {
    using namespace lazycube::bench;
    nlohmann::json r;
    if (mode == "lazycube") r = run_lazycube(store, runs);
    else if (mode == "decode-bound") r = run_decode_bound(store, runs, cores);
    else if (mode == "gdal") r = run_gdal(store, runs);
    else return usage();
    std::cout << r.dump() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "lazycube_bench_read " << mode << " " << store << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
