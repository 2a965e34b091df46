#include "http_counters.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace lazycube::http {

void Counters::attempt(std::uint64_t bytes, double latency_ms) {
  requests_.fetch_add(1, std::memory_order_relaxed);
  bytes_.fetch_add(bytes, std::memory_order_relaxed);
  const auto us = static_cast<std::uint64_t>(std::max(0.0, latency_ms) * 1000.0);
  std::uint64_t seen = max_us_.load(std::memory_order_relaxed);
  while (us > seen && !max_us_.compare_exchange_weak(seen, us, std::memory_order_relaxed)) {
  }
  const std::uint64_t slot = samples_.fetch_add(1, std::memory_order_relaxed) % kWindow;
  latency_us_[slot].store(static_cast<std::uint32_t>(std::min<std::uint64_t>(us, UINT32_MAX)),
                          std::memory_order_relaxed);
}

void Counters::retry(const std::string& cause) {
  retries_.fetch_add(1, std::memory_order_relaxed);
  std::size_t i = 0;
  while (i + 1 < kCauses.size() && cause != kCauses[i]) ++i;
  by_cause_[i].fetch_add(1, std::memory_order_relaxed);
}

void Counters::error() { errors_.fetch_add(1, std::memory_order_relaxed); }

StoreStats Counters::snapshot() const {
  StoreStats out;
  out.requests = requests_.load(std::memory_order_relaxed);
  out.bytes = bytes_.load(std::memory_order_relaxed);
  out.retries = retries_.load(std::memory_order_relaxed);
  out.errors = errors_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < kCauses.size(); ++i)
    if (auto n = by_cause_[i].load(std::memory_order_relaxed)) out.retries_by_cause[kCauses[i]] = n;
  out.latency_ms_max = static_cast<double>(max_us_.load(std::memory_order_relaxed)) / 1000.0;
  const std::size_t n = std::min<std::uint64_t>(samples_.load(std::memory_order_relaxed), kWindow);
  if (n == 0) return out;
  std::vector<std::uint32_t> sorted(n);
  for (std::size_t i = 0; i < n; ++i) sorted[i] = latency_us_[i].load(std::memory_order_relaxed);
  std::sort(sorted.begin(), sorted.end());
  auto pct = [&](double p) {
    const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(n)));
    return static_cast<double>(sorted[std::min(n - 1, rank == 0 ? 0 : rank - 1)]) / 1000.0;
  };
  out.latency_ms_p50 = pct(0.50);
  out.latency_ms_p90 = pct(0.90);
  out.latency_ms_p99 = pct(0.99);
  return out;
}

}  // namespace lazycube::http
