// Traffic counters of one store (requests, bytes, retries by cause, latency). Lock-free (atomics
// only), so a fork() while the engine thread is updating them cannot leave the child a locked
// mutex.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "lazycube/store/store.hpp"

namespace lazycube::http {

class Counters {
 public:
  // One HTTP attempt finished (whatever its outcome) after `latency_ms`, delivering `bytes`.
  void attempt(std::uint64_t bytes, double latency_ms);
  // An attempt is being retried because of `cause`: "http_<status>" for 408/429/500/502/503/504,
  // "timeout", "connection", "short_body", "body_length"; anything else counts as "other".
  void retry(const std::string& cause);
  // A request failed for good.
  void error();
  StoreStats snapshot() const;

  static constexpr std::array<const char*, 11> kCauses = {
      "http_408", "http_429", "http_500", "http_502", "http_503", "http_504",
      "timeout",  "connection", "short_body", "body_length", "other"};

 private:
  static constexpr std::size_t kWindow = 8192;  // latency samples kept (most recent)
  std::atomic<std::uint64_t> requests_{0}, bytes_{0}, retries_{0}, errors_{0};
  std::array<std::atomic<std::uint64_t>, kCauses.size()> by_cause_{};
  std::atomic<std::uint64_t> max_us_{0};
  std::atomic<std::uint64_t> samples_{0};                  // attempts recorded so far
  std::array<std::atomic<std::uint32_t>, kWindow> latency_us_{};  // ring of the last kWindow
};

}  // namespace lazycube::http
