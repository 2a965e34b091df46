// The registry of window orders, and the Shuffle names that select them.
#include "sample_order.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "lazycube/error.hpp"

namespace lazycube::batch {

const SampleOrderRegistry& SampleOrderRegistry::instance() {
  static const SampleOrderRegistry registry = [] {
    SampleOrderRegistry r;
    register_all_sample_orders(r);
    std::stable_sort(r.entries_.begin(), r.entries_.end(), [](const auto& a, const auto& b) {
      return a.listed != b.listed ? a.listed < b.listed : std::string_view(a.name) < b.name;
    });
    return r;
  }();
  return registry;
}

void SampleOrderRegistry::add(SampleOrderEntry entry) {
  if (entry.name == nullptr || *entry.name == '\0' || entry.make == nullptr)
    throw std::logic_error("sample order registered without a name or factory");
  if (find(entry.name) != nullptr)
    throw std::logic_error(std::string("sample order '") + entry.name + "' registered twice");
  entries_.push_back(entry);
}

const SampleOrderEntry* SampleOrderRegistry::find(std::string_view name) const {
  for (const auto& e : entries_)
    if (name == e.name) return &e;
  return nullptr;
}

const SampleOrderEntry& SampleOrderRegistry::get(std::string_view name) const {
  if (const SampleOrderEntry* e = find(name)) return *e;
  throw UsageError("shuffle: unknown value '" + std::string(name) + "' (choices: " + choices() + ")");
}

std::string SampleOrderRegistry::choices() const {
  std::string out;
  for (const auto& e : entries_) out += (out.empty() ? "" : ", ") + std::string(e.name);
  return out;
}

Shuffle parse_shuffle(const std::string& text) {
  return Shuffle(SampleOrderRegistry::instance().get(text).name);
}

const char* shuffle_name(Shuffle shuffle) { return shuffle.name(); }

std::vector<Shuffle> registered_shuffles() {
  std::vector<Shuffle> out;
  for (const auto& e : SampleOrderRegistry::instance().entries()) out.push_back(parse_shuffle(e.name));
  return out;
}

}  // namespace lazycube::batch
