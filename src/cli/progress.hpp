// The progress bar of long commands (read, bench) on stderr: "\r[#####.....] 12/40 batches,
// 3.1 batches/s", rewritten in place at most ten times a second and erased at the end.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace lazycube::cli {

// --progress (On), --no-progress (Off), neither (Auto: on when stderr is a terminal, drawn
// only once the operation has run for a second, so quick commands print nothing).
enum class ProgressMode { Auto, On, Off };

class ProgressBar {
 public:
  // `unit` names what is counted ("batches", "MB"); counts are divided by `divisor` for display.
  ProgressBar(ProgressMode mode, std::uint64_t total, std::string unit, double divisor = 1.0);
  ~ProgressBar();  // erases the bar (finish())
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Whether a bar can be drawn at all (mode, terminal); the command may skip the bookkeeping.
  bool enabled() const { return enabled_; }
  void update(std::uint64_t done);
  // Erases the bar if one was drawn (the command's own output follows on stdout/stderr).
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_;
  double delay_s_;  // seconds before the first draw
  std::uint64_t total_;
  std::string unit_;
  double divisor_;
  Clock::time_point start_;
  Clock::time_point last_{};
  bool drawn_ = false;
};

}  // namespace lazycube::cli
