// The measurement modes of lazycube_bench_read; each returns its JSON result line.
#pragma once

#include <string>
#include <nlohmann/json.hpp>

#include "bench_common.hpp"

namespace lazycube::bench {

// Whole-array lazycube::Array::read into one buffer allocated once; best of `runs`.
nlohmann::json run_lazycube(const std::string& store, int runs);
// Every chunk decoded single-threaded into its place in one array-sized buffer (encoded bytes
// loaded beforehand, untimed); best of `runs`, plus the bound = single-thread rate x `cores`.
nlohmann::json run_decode_bound(const std::string& store, int runs, unsigned cores);
// GDAL multidim Read of the whole array (GDAL_NUM_THREADS=ALL_CPUS); best of `runs`.
nlohmann::json run_gdal(const std::string& store, int runs);

}  // namespace lazycube::bench
