#include "lazycube/array.hpp"

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

}  // namespace lazycube
