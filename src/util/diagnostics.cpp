#include "util/diagnostics.hpp"

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <utility>

namespace lazycube::diagnostics {

namespace {

// A process that never drains (a Python session opening many files) keeps at most this many.
constexpr std::size_t kMaxPending = 100;

std::mutex mutex;
std::vector<std::string> pending;  // few and short: a linear duplicate check is enough
std::size_t dropped = 0;           // warnings beyond kMaxPending since the last take

}  // namespace

void warn(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.empty()) return;
  std::lock_guard lock(mutex);
  if (std::find(pending.begin(), pending.end(), text) != pending.end()) return;
  if (pending.size() >= kMaxPending) {
    ++dropped;
    return;
  }
  pending.push_back(std::move(text));
}

std::vector<std::string> take_warnings() {
  std::lock_guard lock(mutex);
  std::vector<std::string> out = std::exchange(pending, {});
  if (dropped > 0) out.push_back(std::to_string(std::exchange(dropped, 0)) + " more warnings not kept");
  return out;
}

}  // namespace lazycube::diagnostics
