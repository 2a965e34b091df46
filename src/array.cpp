#include "lazycube/array.hpp"

#include <algorithm>

#include "lazycube/error.hpp"
#include "util/thread_pool.hpp"

namespace lazycube {

NDArray Array::read(const ArraySelection& selection) const {
  NDArray out;
  out.dtype = dtype();
  out.shape.reserve(selection.size());
  for (const auto& r : selection) out.shape.push_back(r.count);
  if (out.dtype.is_variable_length()) {
    read_strings(selection, out.strings);
  } else {
    out.data.resize(out.size() * out.dtype.itemsize);
    read(selection, out.data.span());
  }
  return out;
}

NDArray Array::read_all() const {
  ArraySelection all;
  for (auto n : shape()) all.push_back(IndexRange::all(n));
  return read(all);
}

std::uint64_t Array::converted_count(const ArraySelection& selection, MutableByteView dest,
                                     const ElementConversion& conversion) const {
  const Array& array = *this;
  if (conversion.input_dtype() != array.dtype() || array.dtype().is_variable_length() ||
      conversion.output_dtype().is_variable_length())
    throw UsageError(array.describe() + ": cannot convert its " + array.dtype().name() + " elements as " +
                     conversion.input_dtype().name() + " -> " + conversion.output_dtype().name());
  std::uint64_t n = 1;
  for (const auto& r : selection) n *= r.count;
  if (dest.size() != n * conversion.output_dtype().itemsize)
    throw UsageError(array.describe() + ": destination holds " + std::to_string(dest.size()) +
                     " bytes, the converted selection needs " + std::to_string(n * conversion.output_dtype().itemsize));
  return n;
}

void Array::read_converted(const ArraySelection& selection, MutableByteView dest,
                           const ElementConversion& conversion) const {
  const std::uint64_t n = converted_count(selection, dest, conversion);
  if (n == 0) return;
  Buffer raw(n * dtype().itemsize);
  read(selection, raw.span());
  // Convert in blocks of ~1 MiB of input across the pool.
  const std::size_t in = dtype().itemsize, out = conversion.output_dtype().itemsize;
  const std::uint64_t block = std::max<std::uint64_t>(1, (std::uint64_t{1} << 20) / in);
  parallel_for((n + block - 1) / block, [&](std::size_t b) {
    const std::uint64_t first = b * block, count = std::min(block, n - first);
    conversion.convert(raw.data() + first * in, count, dest.data() + first * out);
  });
}

void Array::read_cached(std::span<const ArraySelection> selections,
                        std::span<const MutableByteView> dests, ChunkCache&) const {
  if (selections.size() != dests.size())
    throw UsageError(describe() + ": read_cached got " + std::to_string(selections.size()) +
                     " selections and " + std::to_string(dests.size()) + " destinations");
  for (std::size_t i = 0; i < selections.size(); ++i) read(selections[i], dests[i]);
}

std::vector<std::vector<std::uint64_t>> Array::read_units(std::span<const ArraySelection>) const { return {}; }

ChunkGrid Array::chunk_grid() const { return ChunkGrid::regular(shape(), chunk_shape()); }

ChunkGrid Array::read_grid() const { return ChunkGrid::regular(shape(), read_chunk_shape()); }

std::vector<std::uint64_t> Array::chunk_starts(std::size_t dim) const {
  if (dim >= shape().size())
    throw UsageError(describe() + ": chunk_starts of dim " + std::to_string(dim) + " of a " +
                     std::to_string(shape().size()) + "-d array");
  std::vector<std::uint64_t> starts = chunk_grid().starts(dim);
  if (starts.empty()) starts.push_back(0);
  return starts;
}

std::uint64_t Array::read_unit_bytes() const {
  const Shape& unit = read_chunk_shape();
  if (unit.empty() && !shape().empty()) return 0;
  return shape_size(read_grid().regular_shape()) * dtype().itemsize;
}

std::uint64_t Array::read_unit_bytes(const std::vector<std::uint64_t>& unit) const {
  if (read_chunk_shape().empty() && !shape().empty()) return 0;
  const ChunkGrid grid = read_grid();
  if (grid.is_regular() || unit.size() != grid.rank()) return shape_size(grid.regular_shape()) * dtype().itemsize;
  return grid.decoded_elements(unit) * dtype().itemsize;
}

std::vector<std::shared_ptr<const Buffer>> Array::load_units(const std::vector<std::vector<std::uint64_t>>&,
                                                             ChunkCache&, const std::atomic<bool>*) const {
  return {};
}

std::vector<std::shared_ptr<const Buffer>> Array::pin_cached(const std::vector<std::vector<std::uint64_t>>& units,
                                                             ChunkCache&,
                                                             std::vector<std::vector<std::uint64_t>>& missing) const {
  missing.insert(missing.end(), units.begin(), units.end());
  return {};
}

}  // namespace lazycube
