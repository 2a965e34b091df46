#include "lazycube/array.hpp"

#include "lazycube/error.hpp"

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

void Array::read_cached(std::span<const ArraySelection> selections,
                        std::span<const MutableByteView> dests, ChunkCache&) const {
  if (selections.size() != dests.size())
    throw UsageError(describe() + ": read_cached got " + std::to_string(selections.size()) +
                     " selections and " + std::to_string(dests.size()) + " destinations");
  for (std::size_t i = 0; i < selections.size(); ++i) read(selections[i], dests[i]);
}

std::vector<std::vector<std::uint64_t>> Array::read_units(std::span<const ArraySelection>) const { return {}; }

std::uint64_t Array::read_unit_bytes() const {
  const Shape& unit = read_chunk_shape();
  if (unit.empty() && !shape().empty()) return 0;
  return shape_size(unit) * dtype().itemsize;
}

std::vector<std::shared_ptr<const Buffer>> Array::load_units(const std::vector<std::vector<std::uint64_t>>&,
                                                             ChunkCache&) const {
  return {};
}

}  // namespace lazycube
