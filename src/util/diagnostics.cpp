#include "lazycube/util/diagnostics.hpp"

#include <algorithm>
#include <mutex>
#include <utility>

namespace lazycube::diagnostics {

namespace {

std::mutex mutex;
std::vector<std::string> pending;  // few and short: a linear duplicate check is enough

}  // namespace

void warn(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.empty()) return;
  std::lock_guard lock(mutex);
  if (std::find(pending.begin(), pending.end(), text) == pending.end()) pending.push_back(std::move(text));
}

std::vector<std::string> take_warnings() {
  std::lock_guard lock(mutex);
  return std::exchange(pending, {});
}

}  // namespace lazycube::diagnostics
