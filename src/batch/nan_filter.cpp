#include "nan_filter.hpp"

#include <algorithm>
#include <string>

#include "batch_assembly.hpp"
#include "lazycube/dataset/selection.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"

namespace lazycube::batch {

Indexers window_indexers(const std::vector<std::string>& dims, const ArraySelection& window) {
  Indexers out;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    const auto start = static_cast<std::int64_t>(window[d].start);
    out.emplace(dims[d], Slice{start, start + static_cast<std::int64_t>(window[d].count), 1});
  }
  return out;
}

NanFilter::NanFilter(Variable variable, double max_nan_fraction, std::shared_ptr<ChunkCache> cache)
    : variable_(std::move(variable)),
      whole_(variable_.name(), variable_.array(), dims_of(*variable_.array()), variable_.cf()),
      max_fraction_(max_nan_fraction),
      cache_(std::move(cache)),
      can_hold_nan_(variable_.dtype().kind == DTypeKind::Float) {
  if (!(max_nan_fraction >= 0.0 && max_nan_fraction <= 1.0))
    throw UsageError("filter: max_nan_fraction must lie in [0, 1], got " + std::to_string(max_nan_fraction));
}

NanFilter::Summary NanFilter::chunk_summary(const std::vector<std::uint64_t>& chunk) const {
  {
    std::lock_guard lock(mutex_);
    if (auto it = summaries_.find(chunk); it != summaries_.end()) return it->second;
  }
  const Array& array = *variable_.array();
  const ChunkGrid units = array.read_grid();
  ArraySelection region(chunk.size());
  for (std::size_t d = 0; d < chunk.size(); ++d) region[d] = {units.start(d, chunk[d]), units.extent(d, chunk[d]), 1};
  std::uint64_t n = 1;
  for (const auto& r : region) n *= r.count;
  Buffer values(n * whole_.dtype().itemsize);
  const MutableByteView dest = values.span();
  whole_.read_windows_into({&region, 1}, {&dest, 1}, cache_.get());
  const Summary s{count_nans(values.data(), whole_.dtype(), n), n};
  std::lock_guard lock(mutex_);
  summaries_.emplace(chunk, s);
  return s;
}

bool NanFilter::passes(const ArraySelection& window) const {
  if (!can_hold_nan_) return true;
  const Variable selected = variable_.isel(window_indexers(variable_.dims(), window));
  const std::uint64_t n = selected.size();
  if (n == 0) return true;
  // The chunks the window touches: per array dim, those between its first and last index.
  const ArraySelection sel = selected.array_selection();
  const ChunkGrid units = variable_.array()->read_grid();
  std::vector<std::uint64_t> lo(sel.size()), hi(sel.size());
  std::uint64_t chunks = 1;
  for (std::size_t d = 0; d < sel.size(); ++d) {
    const std::uint64_t a = sel[d].at(0), b = sel[d].at(sel[d].count - 1);
    lo[d] = units.index_of(d, std::min(a, b));
    hi[d] = units.index_of(d, std::max(a, b));
    chunks *= hi[d] - lo[d] + 1;
  }
  bool all_clean = true, all_nan = true;
  std::vector<std::uint64_t> chunk = lo;
  for (std::uint64_t k = 0; k < chunks; ++k) {
    const Summary s = chunk_summary(chunk);
    all_clean = all_clean && s.nans == 0;
    all_nan = all_nan && s.nans == s.total;
    for (std::size_t d = chunk.size(); d-- > 0;) {
      if (++chunk[d] <= hi[d]) break;
      chunk[d] = lo[d];
    }
  }
  if (all_clean) return true;
  if (all_nan) return max_fraction_ >= 1.0;
  // Mixed chunks: count exactly in the window (its chunks are in the cache by now).
  Buffer values(n * variable_.dtype().itemsize);
  const MutableByteView dest = values.span();
  variable_.read_windows_into({&window, 1}, {&dest, 1}, cache_.get());
  const double fraction = static_cast<double>(count_nans(values.data(), variable_.dtype(), n)) /
                          static_cast<double>(n);
  return fraction <= max_fraction_;
}

}  // namespace lazycube::batch
