// window_footprint: what the windows of each position along a grid's first dim read, for the
// epoch planner (window_footprint.hpp).
#include "window_footprint.hpp"

#include <algorithm>

namespace lazycube::batch {

std::shared_ptr<const SampleFootprint> window_footprint(const WindowGrid& grid, const WindowAxis& axis) {
  if (grid.ndim() == 0 || grid.size() == 0 || axis.chunk_starts.size() < 2) return nullptr;
  const DimWindows& w = grid.dims()[0];
  if (w.count == 0 || w.count > kMostFootprintPositions) return nullptr;
  auto fp = std::make_shared<SampleFootprint>();
  fp->samples_per_position = grid.size() / w.count;
  fp->unit_bytes = axis.unit_bytes;
  fp->first_unit.reserve(w.count);
  fp->last_unit.reserve(w.count);
  const auto& starts = axis.chunk_starts;
  auto unit_of = [&](std::uint64_t element) {
    return static_cast<std::uint64_t>(std::upper_bound(starts.begin(), starts.end(), element) - starts.begin()) - 1;
  };
  const std::uint64_t before = axis.shift < 0 ? static_cast<std::uint64_t>(-axis.shift) : 0;
  const std::uint64_t after = axis.shift > 0 ? static_cast<std::uint64_t>(axis.shift) : 0;
  bool spans = false;
  for (std::uint64_t q = 0; q < w.count; ++q) {
    const std::uint64_t start = w.start(q) + axis.lead;
    const std::uint64_t first = unit_of(start - std::min(before, start));
    const std::uint64_t last = std::max(first, unit_of(start + std::max<std::uint64_t>(w.length, 1) - 1 + after));
    spans = spans || last > first;
    fp->first_unit.push_back(first);
    fp->last_unit.push_back(last);
  }
  if (!spans) return nullptr;
  return fp;
}

}  // namespace lazycube::batch
