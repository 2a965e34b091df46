// An owned n-dimensional result: C-order, native-endian bytes for fixed-size types, or one
// std::string per element for variable-length strings/bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lazycube/dtype.hpp"
#include "lazycube/error.hpp"
#include "lazycube/util/buffer.hpp"

namespace lazycube {

using Shape = std::vector<std::uint64_t>;

inline std::uint64_t shape_size(const Shape& shape) {
  std::uint64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

struct NDArray {
  DataType dtype;
  Shape shape;
  Buffer data;                       // fixed-size types: shape_size(shape) * dtype.itemsize bytes
  std::vector<std::string> strings;  // variable-length types: shape_size(shape) entries

  std::uint64_t size() const { return shape_size(shape); }

  // Typed view of the elements; the caller picks T matching dtype.itemsize.
  template <class T>
  std::span<T> values() {
    check_item<T>();
    return {reinterpret_cast<T*>(data.data()), static_cast<std::size_t>(size())};
  }
  template <class T>
  std::span<const T> values() const {
    check_item<T>();
    return {reinterpret_cast<const T*>(data.data()), static_cast<std::size_t>(size())};
  }

 private:
  template <class T>
  void check_item() const {
    if (dtype.is_variable_length() || sizeof(T) != dtype.itemsize)
      throw UsageError("NDArray of " + dtype.name() + " viewed with an element of " +
                       std::to_string(sizeof(T)) + " bytes");
  }
};

}  // namespace lazycube
