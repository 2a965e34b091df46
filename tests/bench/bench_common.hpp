// Shared helpers of the read benchmark: timing, peak RSS, an order-sensitive checksum and the
// one-line JSON result every mode prints.
#pragma once

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lazycube::bench {

struct Timings {
  std::vector<double> runs;  // seconds, in run order
  double best() const {
    double b = std::numeric_limits<double>::infinity();
    for (double s : runs) b = b < s ? b : s;
    return b;
  }
};

// The value after `--name` among the command's arguments, or `def`.
inline std::string arg(int argc, char** argv, const std::string& name, const std::string& def) {
  for (int i = 0; i + 1 < argc; ++i)
    if (argv[i] == name) return argv[i + 1];
  return def;
}

// Calls `body` `runs` times and records the wall time of each call.
inline Timings time_runs(int runs, const std::function<void()>& body) {
  Timings t;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    body();
    const std::chrono::duration<double> d = std::chrono::steady_clock::now() - start;
    t.runs.push_back(d.count());
  }
  return t;
}

// Peak resident set size of this process in MiB (Linux ru_maxrss is in KiB).
inline double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

// sum over 32-bit little-endian words w_i of w_i * (2i + 1), mod 2^64: cheap, and unlike a plain
// sum it notices data landing in the wrong place. run_read_bench.py computes the same in numpy.
inline std::uint64_t checksum(std::span<const std::byte> bytes) {
  std::uint64_t h = 0;
  const std::size_t n = bytes.size() / 4;
  const std::byte* p = bytes.data();
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t w;
    std::memcpy(&w, p + 4 * i, 4);
    h += static_cast<std::uint64_t>(w) * (2 * static_cast<std::uint64_t>(i) + 1);
  }
  return h;
}

inline std::string hex(std::uint64_t v) {
  char s[17];
  std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(v));
  return s;
}

// The common fields of a result line; GB are 10^9 bytes, RSS in MiB.
inline nlohmann::json result_json(const std::string& mode, const std::string& store,
                                  const Timings& t, std::uint64_t bytes, std::uint64_t sum) {
  const double best = t.best();
  return {{"mode", mode},
          {"store", store},
          {"seconds", best},
          {"gb_per_s", static_cast<double>(bytes) / best / 1e9},
          {"bytes", bytes},
          {"runs", t.runs},
          {"checksum", hex(sum)},
          {"peak_rss_mb", peak_rss_mib()}};
}

}  // namespace lazycube::bench
