#include "progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

namespace lazycube::cli {

namespace {

double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

ProgressBar::ProgressBar(ProgressMode mode, std::uint64_t total, std::string unit, double divisor)
    : enabled_(mode == ProgressMode::On || (mode == ProgressMode::Auto && ::isatty(STDERR_FILENO) == 1)),
      delay_s_(mode == ProgressMode::On ? 0.0 : 1.0),
      total_(total),
      unit_(std::move(unit)),
      divisor_(divisor),
      start_(Clock::now()) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(std::uint64_t done) {
  if (!enabled_) return;
  const auto now = Clock::now();
  const double elapsed = seconds_between(start_, now);
  if (elapsed < delay_s_) return;
  if (drawn_ && done < total_ && seconds_between(last_, now) < 0.1) return;
  last_ = now;
  drawn_ = true;
  constexpr int kWidth = 30;
  std::string bar;
  if (total_ > 0) {
    const auto filled = static_cast<int>(kWidth * std::min(1.0, double(done) / double(total_)));
    bar = "[" + std::string(filled, '#') + std::string(kWidth - filled, '.') + "] ";
  }
  const double shown_done = double(done) / divisor_;
  const double shown_total = double(total_) / divisor_;
  const double rate = elapsed > 0 ? shown_done / elapsed : 0.0;
  const int digits = divisor_ == 1.0 ? 0 : 1;
  char text[160];
  std::snprintf(text, sizeof text, "%.*f/%.*f %s, %.1f %s/s", digits, shown_done, digits, shown_total,
                unit_.c_str(), rate, unit_.c_str());
  std::cerr << "\r" << bar << text << "\033[K" << std::flush;
}

void ProgressBar::finish() {
  if (!drawn_) return;
  std::cerr << "\r\033[K" << std::flush;
  drawn_ = false;
  enabled_ = false;
}

}  // namespace lazycube::cli
