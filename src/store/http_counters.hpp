// Thread-safe traffic counters of one store (requests, bytes, retries by cause, latency).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "lazycube/store/store.hpp"

namespace lazycube::http {

class Counters {
 public:
  // One HTTP attempt finished (whatever its outcome) after `latency_ms`, delivering `bytes`.
  void attempt(std::uint64_t bytes, double latency_ms);
  // An attempt is being retried because of `cause` ("http_503", "timeout", ...).
  void retry(const std::string& cause);
  // A request failed for good.
  void error();
  StoreStats snapshot() const;

 private:
  static constexpr std::size_t kWindow = 8192;  // latency samples kept (most recent)
  mutable std::mutex mutex_;
  StoreStats totals_;
  std::vector<double> latencies_;  // ring buffer of the last kWindow attempts
  std::size_t next_ = 0;
};

}  // namespace lazycube::http
