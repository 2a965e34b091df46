#include "lazycube/memory_array.hpp"

#include <cstring>
#include <sstream>
#include <nlohmann/json.hpp>

#include "lazycube/error.hpp"

namespace lazycube {

MemoryArray::MemoryArray(std::string name, DataType dtype, Shape shape, std::vector<std::int64_t> byte_strides,
                         const std::byte* data, std::shared_ptr<const void> owner, std::vector<std::string> dims,
                         nlohmann::json attrs)
    : name_(std::move(name)),
      dtype_(std::move(dtype)),
      shape_(std::move(shape)),
      strides_(std::move(byte_strides)),
      data_(data),
      owner_(std::move(owner)),
      dims_(std::move(dims)),
      attrs_(std::move(attrs)) {
  if (dtype_.is_variable_length() || dtype_.itemsize == 0)
    throw UsageError(describe() + ": only fixed-size dtypes are read in place (got " + dtype_.name() + ")");
  if (strides_.size() != shape_.size() || dims_.size() != shape_.size())
    throw UsageError(describe() + ": " + std::to_string(shape_.size()) + " dims but " +
                     std::to_string(strides_.size()) + " strides and " + std::to_string(dims_.size()) + " names");
  if (data_ == nullptr && shape_size(shape_) > 0) throw UsageError(describe() + ": no data");
}

std::string MemoryArray::cache_id() const {
  std::ostringstream id;
  id << "memory://" << static_cast<const void*>(data_) << "/" << name_;
  return id.str();
}

void MemoryArray::read(const ArraySelection& selection, MutableByteView dest) const {
  const std::size_t n = shape_.size(), item = dtype_.itemsize;
  if (selection.size() != n)
    throw UsageError(describe() + ": selection has " + std::to_string(selection.size()) + " dims, the array " +
                     std::to_string(n));
  std::uint64_t count = 1;
  for (std::size_t d = 0; d < n; ++d) {
    const IndexRange& r = selection[d];
    if (r.count > 0 && (r.start >= shape_[d] || r.at(r.count - 1) >= shape_[d]))
      throw UsageError(describe() + ": selection out of bounds along '" + dims_[d] + "'");
    count *= r.count;
  }
  if (dest.size() != count * item)
    throw UsageError(describe() + ": destination holds " + std::to_string(dest.size()) + " bytes, the selection " +
                     std::to_string(count * item));
  if (count == 0) return;
  if (n == 0) {
    std::memcpy(dest.data(), data_, item);
    return;
  }
  // An odometer over every dim but the last; along the last one, one memcpy per row when it
  // is contiguous (step 1 over densely packed elements), else element by element.
  const std::size_t last = n - 1;
  const IndexRange& row = selection[last];
  const bool dense = row.step == 1 && strides_[last] == static_cast<std::int64_t>(item);
  std::vector<std::uint64_t> at(last, 0);
  std::byte* out = dest.data();
  for (;;) {
    const std::byte* base = data_;
    for (std::size_t d = 0; d < last; ++d)
      base += static_cast<std::int64_t>(selection[d].at(at[d])) * strides_[d];
    if (dense) {
      std::memcpy(out, base + static_cast<std::int64_t>(row.start) * strides_[last], row.count * item);
      out += row.count * item;
    } else {
      for (std::uint64_t k = 0; k < row.count; ++k, out += item)
        std::memcpy(out, base + static_cast<std::int64_t>(row.at(k)) * strides_[last], item);
    }
    std::size_t d = last;
    while (d > 0 && ++at[d - 1] == selection[d - 1].count) at[--d] = 0;
    if (d == 0) break;
  }
}

void MemoryArray::read_strings(const ArraySelection&, std::vector<std::string>&) const {
  throw UsageError(describe() + ": has a fixed-size dtype (" + dtype_.name() + "), not strings");
}

}  // namespace lazycube
