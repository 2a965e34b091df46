// lazycube_bench_http: remote whole-array read throughput over HTTP, one peer per process.
// Prints one JSON line. Driven by run_http_bench.py; not a ctest test.
//
//   lazycube_bench_http read|get-each URL VARIABLE [--runs N] [--option KEY=VALUE]...
//
//   read      lazycube::open_location(URL, options) + zarr::Hierarchy + Array::read of the whole
//             variable into one buffer allocated once (what users do).
//   get-each  Store::get_each of every chunk key of VARIABLE in one call, each body copied to
//             its place as it arrives, no decoding (the HTTP engine's ceiling; needs an
//             uncompressed Zarr v2 array whose chunks are contiguous runs of the array, like the
//             benchmark store). Informational.
//
// Each run reports its wall time and the store's traffic counters (requests, retries by cause,
// errors, latency percentiles) for that run alone.
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "bench_common.hpp"
#include "lazycube/array.hpp"
#include "lazycube/store/store.hpp"
#include "lazycube/zarr/hierarchy.hpp"

namespace {

using namespace lazycube;
using namespace lazycube::bench;

int usage() {
  std::cerr << "usage: lazycube_bench_http read|get-each URL VARIABLE [--runs N] [--option KEY=VALUE]...\n"
               "  --runs N              timed runs, best reported (default 3)\n"
               "  --option KEY=VALUE    storage option of the HTTP store (max_concurrency=1, ...)\n";
  return 2;
}

nlohmann::json stats_delta(const StoreStats& before, const StoreStats& after) {
  nlohmann::json causes = nlohmann::json::object();
  for (const auto& [cause, n] : after.retries_by_cause) {
    auto it = before.retries_by_cause.find(cause);
    const std::uint64_t d = n - (it == before.retries_by_cause.end() ? 0 : it->second);
    if (d) causes[cause] = d;
  }
  return {{"requests", after.requests - before.requests},
          {"bytes", after.bytes - before.bytes},
          {"retries", after.retries - before.retries},
          {"retries_by_cause", causes},
          {"errors", after.errors - before.errors},
          // Percentiles over the store's recent-attempt window (cumulative, not per run).
          {"latency_ms_p50", after.latency_ms_p50},
          {"latency_ms_p90", after.latency_ms_p90},
          {"latency_ms_p99", after.latency_ms_p99},
          {"latency_ms_max", after.latency_ms_max}};
}

// Chunk keys of a Zarr v2 array in C order of the chunk grid ("." or "/" separator).
std::vector<std::string> chunk_keys(const Array& a, const std::string& prefix, char sep) {
  const Shape& shape = a.shape();
  const Shape& chunk = a.chunk_shape();
  Shape grid(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] % chunk[d] != 0 || (d > 0 && chunk[d] != shape[d]))
      throw std::runtime_error("get-each needs chunks (k, full, full, ...) tiling the array exactly");
    grid[d] = shape[d] / chunk[d];
  }
  std::vector<std::string> keys;
  const std::uint64_t n = shape_size(grid);
  for (std::uint64_t k = 0; k < n; ++k) {
    std::string key;
    std::uint64_t rest = k;
    std::vector<std::uint64_t> idx(grid.size());
    for (std::size_t d = grid.size(); d-- > 0;) {
      idx[d] = rest % grid[d];
      rest /= grid[d];
    }
    for (std::size_t d = 0; d < idx.size(); ++d) {
      if (d) key.push_back(sep);
      key += std::to_string(idx[d]);
    }
    keys.push_back(prefix + key);
  }
  return keys;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return usage();
  const std::string mode = argv[1], url = argv[2], variable = argv[3];
  int runs = 3;
  StoreOptions options;
  for (int i = 4; i < argc; ++i) {
    const std::string opt = argv[i];
    if (i + 1 >= argc) return usage();
    const std::string val = argv[++i];
    if (opt == "--runs") {
      runs = std::atoi(val.c_str());
      if (runs <= 0) return usage();
    } else if (opt == "--option") {
      const auto eq = val.find('=');
      if (eq == std::string::npos || eq == 0) return usage();
      options[val.substr(0, eq)] = val.substr(eq + 1);
    } else {
      return usage();
    }
  }
  if (mode != "read" && mode != "get-each") return usage();
  try {
    const Location loc = open_location(url, options);
    const zarr::Hierarchy h = zarr::Hierarchy::open(loc);
    const ArrayPtr array = h.array(variable);
    ArraySelection all;
    for (auto n : array->shape()) all.push_back(IndexRange::all(n));
    const std::uint64_t bytes = shape_size(array->shape()) * array->dtype().itemsize;
    std::uint64_t chunks = 1;
    for (std::size_t d = 0; d < array->shape().size(); ++d)
      chunks *= (array->shape()[d] + array->chunk_shape()[d] - 1) / array->chunk_shape()[d];

    std::vector<ByteRequest> requests;
    if (mode == "get-each") {
      const std::string prefix = (h.location().path.empty() ? "" : h.location().path + "/") + variable + "/";
      for (auto& k : chunk_keys(*array, prefix, '.')) requests.push_back({k, ByteRange::full()});
    }

    Buffer out(bytes);  // allocated once, untouched until the first read
    std::vector<nlohmann::json> per_run;
    const Timings t = time_runs(runs, [&] {
      const StoreStats before = loc.store->stats();
      if (mode == "read") {
        array->read(all, out.span());
      } else {
        const std::uint64_t chunk_bytes = bytes / chunks;
        std::uint64_t total = 0;
        loc.store->get_each(requests, [&](std::size_t i, std::optional<Buffer>&& got) {
          if (!got) throw std::runtime_error(requests[i].key + " is missing");
          const std::uint64_t off = i * chunk_bytes;
          if (off + got->size() > bytes) throw std::runtime_error("chunks larger than the array");
          std::memcpy(out.data() + off, got->data(), got->size());
          total += got->size();
        });
        if (total != bytes) throw std::runtime_error("chunks do not add up to the array");
      }
      per_run.push_back(stats_delta(before, loc.store->stats()));
    });
    nlohmann::json r = result_json(mode, url, t, bytes, checksum(out.view()));
    r["variable"] = variable;
    r["chunks"] = chunks;
    r["options"] = options;
    r["stats"] = per_run;
    std::cout << r.dump() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "lazycube_bench_http " << mode << " " << url << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
