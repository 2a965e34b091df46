// MemoryArray: an Array over memory someone else owns (a NumPy array handed over by the Python
// package), read in place: what lets in-memory xarray data go through the same window engine
// as stored data without copying whole arrays. Fixed-size dtypes in native byte order; any
// byte strides (negative ones too, as NumPy views have).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>  // attrs_ is held by value

#include "lazycube/array.hpp"

namespace lazycube {

class MemoryArray final : public Array {
 public:
  // `data` points at element (0, ..., 0); `byte_strides` has one stride per dim. `owner` keeps
  // the memory alive for as long as the array (and any copy of a Variable over it) lives.
  MemoryArray(std::string name, DataType dtype, Shape shape, std::vector<std::int64_t> byte_strides,
              const std::byte* data, std::shared_ptr<const void> owner, std::vector<std::string> dims,
              nlohmann::json attrs);

  std::string path() const override { return name_; }
  std::string describe() const override { return "in-memory array '" + name_ + "'"; }
  const Shape& shape() const override { return shape_; }
  const DataType& dtype() const override { return dtype_; }
  // One chunk: the whole array (there is nothing to fetch or decode).
  const Shape& chunk_shape() const override { return shape_; }
  const std::vector<std::string>& dimension_names() const override { return dims_; }
  const nlohmann::json& attrs() const override { return attrs_; }
  const Buffer& fill_value_bytes() const override { return no_fill_; }
  const std::string& fill_value_string() const override { return no_fill_string_; }
  bool has_fill_value() const override { return false; }
  nlohmann::json codecs_json() const override { return nlohmann::json::array(); }
  void read(const ArraySelection& selection, MutableByteView dest) const override;
  void read_strings(const ArraySelection& selection, std::vector<std::string>& dest) const override;
  // Unique per array: two in-memory arrays of one name are different data.
  std::string cache_id() const override;

 private:
  std::string name_;
  DataType dtype_;
  Shape shape_;
  std::vector<std::int64_t> strides_;
  const std::byte* data_;
  std::shared_ptr<const void> owner_;
  std::vector<std::string> dims_;
  nlohmann::json attrs_;
  Buffer no_fill_;
  std::string no_fill_string_;
};

}  // namespace lazycube
