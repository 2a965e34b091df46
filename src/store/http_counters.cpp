#include "http_counters.hpp"

#include <algorithm>
#include <cmath>

namespace lazycube::http {

void Counters::attempt(std::uint64_t bytes, double latency_ms) {
  std::lock_guard lock(mutex_);
  ++totals_.requests;
  totals_.bytes += bytes;
  totals_.latency_ms_max = std::max(totals_.latency_ms_max, latency_ms);
  if (latencies_.size() < kWindow) {
    latencies_.push_back(latency_ms);
  } else {
    latencies_[next_] = latency_ms;
    next_ = (next_ + 1) % kWindow;
  }
}

void Counters::retry(const std::string& cause) {
  std::lock_guard lock(mutex_);
  ++totals_.retries;
  ++totals_.retries_by_cause[cause];
}

void Counters::error() {
  std::lock_guard lock(mutex_);
  ++totals_.errors;
}

StoreStats Counters::snapshot() const {
  std::vector<double> sorted;
  StoreStats out;
  {
    std::lock_guard lock(mutex_);
    out = totals_;
    sorted = latencies_;
  }
  if (sorted.empty()) return out;
  std::sort(sorted.begin(), sorted.end());
  auto pct = [&](double p) {
    auto i = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size()))) ;
    return sorted[std::min(sorted.size() - 1, i == 0 ? 0 : i - 1)];
  };
  out.latency_ms_p50 = pct(0.50);
  out.latency_ms_p90 = pct(0.90);
  out.latency_ms_p99 = pct(0.99);
  return out;
}

}  // namespace lazycube::http
