// An in-memory lazycube::Array for dataset-layer unit tests (no store, no codecs).
#pragma once

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "lazycube/array.hpp"

namespace lazycube::testing {

class FakeArray : public Array {
 public:
  FakeArray(DataType dtype, Shape shape, Buffer data) : dtype_(std::move(dtype)), shape_(std::move(shape)), data_(std::move(data)) {
    chunks_ = shape_;
  }
  template <class T>
  static std::shared_ptr<FakeArray> of(DataType dtype, Shape shape, const std::vector<T>& values) {
    Buffer b(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(b.data(), values.data(), b.size());
    return std::make_shared<FakeArray>(std::move(dtype), std::move(shape), std::move(b));
  }
  static std::shared_ptr<FakeArray> strings(Shape shape, std::vector<std::string> values) {
    auto a = std::make_shared<FakeArray>(DataType::string(), std::move(shape), Buffer());
    a->strings_ = std::move(values);
    return a;
  }

  FakeArray& with_dims(std::vector<std::string> names) { dims_ = std::move(names); return *this; }
  FakeArray& with_attrs(nlohmann::json attrs) { attrs_ = std::move(attrs); return *this; }
  FakeArray& with_chunks(Shape chunks) { chunks_ = std::move(chunks); return *this; }
  template <class T>
  FakeArray& with_fill(T value) {
    fill_ = Buffer(sizeof(T));
    std::memcpy(fill_.data(), &value, sizeof(T));
    has_fill_ = true;
    return *this;
  }

  std::string path() const override { return "fake"; }
  std::string describe() const override { return "memory://fake"; }
  const Shape& shape() const override { return shape_; }
  const DataType& dtype() const override { return dtype_; }
  const Shape& chunk_shape() const override { return chunks_; }
  const std::vector<std::string>& dimension_names() const override { return dims_; }
  const nlohmann::json& attrs() const override { return attrs_; }
  const Buffer& fill_value_bytes() const override { return fill_; }
  const std::string& fill_value_string() const override { return fill_string_; }
  bool has_fill_value() const override { return has_fill_; }
  nlohmann::json codecs_json() const override { return nlohmann::json::array(); }

  void read(const ArraySelection& sel, MutableByteView dest) const override {
    ++reads;
    const std::size_t item = dtype_.itemsize;
    std::size_t k = 0;
    visit(sel, [&](std::uint64_t flat) {
      std::memcpy(dest.data() + k * item, data_.data() + flat * item, item);
      ++k;
    });
  }
  void read_strings(const ArraySelection& sel, std::vector<std::string>& dest) const override {
    ++reads;
    dest.clear();
    visit(sel, [&](std::uint64_t flat) { dest.push_back(strings_[flat]); });
  }
  using Array::read;

  mutable std::atomic<int> reads{0};

 private:
  template <class F>
  void visit(const ArraySelection& sel, F&& f) const {
    std::uint64_t total = 1;
    for (const auto& r : sel) total *= r.count;
    std::vector<std::uint64_t> idx(sel.size(), 0);
    for (std::uint64_t n = 0; n < total; ++n) {
      std::uint64_t flat = 0;
      for (std::size_t d = 0; d < sel.size(); ++d) flat = flat * shape_[d] + sel[d].at(idx[d]);
      f(flat);
      for (std::size_t d = sel.size(); d-- > 0;) {
        if (++idx[d] < sel[d].count) break;
        idx[d] = 0;
      }
    }
  }

  DataType dtype_;
  Shape shape_;
  Shape chunks_;
  Buffer data_;
  std::vector<std::string> strings_;
  std::vector<std::string> dims_;
  nlohmann::json attrs_ = nlohmann::json::object();
  Buffer fill_;
  std::string fill_string_;
  bool has_fill_ = false;
};

}  // namespace lazycube::testing
