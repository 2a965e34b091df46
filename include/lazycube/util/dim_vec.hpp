// A vector of per-dimension values (indices, counts, strides) stored inline for up to 8
// dimensions, on the heap beyond. The batch and chunk-copy paths build a handful of these per
// window and chunk; as std::vectors they were ~4000 malloc/free pairs per batch of 32 windows
// x 4 variables, about a seventh of a warm epoch's CPU.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <type_traits>

namespace lazycube::detail {

template <class T, std::size_t N = 8>
class DimVec {
  static_assert(std::is_trivially_copyable_v<T>, "DimVec holds plain per-dimension values");

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  DimVec() = default;
  explicit DimVec(std::size_t n, T value = T()) { assign(n, value); }
  DimVec(std::initializer_list<T> values) { assign(values.begin(), values.end()); }
  template <class It, class = decltype(*std::declval<It>())>
  DimVec(It first, It last) { assign(first, last); }
  DimVec(const DimVec& other) { assign(other.begin(), other.end()); }
  DimVec(DimVec&& other) noexcept { take(other); }
  DimVec& operator=(const DimVec& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  DimVec& operator=(DimVec&& other) noexcept {
    if (this != &other) {
      heap_.reset();
      take(other);
    }
    return *this;
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return heap_ ? heap_.get() : inline_; }
  const T* data() const { return heap_ ? heap_.get() : inline_; }
  T& operator[](std::size_t i) { return data()[i]; }
  const T& operator[](std::size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

  void reserve(std::size_t n) {
    if (n <= capacity()) return;
    auto bigger = std::make_unique<T[]>(n);
    std::copy(begin(), end(), bigger.get());
    heap_ = std::move(bigger);
    heap_capacity_ = n;
  }
  void resize(std::size_t n, T value = T()) {
    reserve(n);
    if (n > size_) std::fill(data() + size_, data() + n, value);
    size_ = n;
  }
  void push_back(T value) {
    if (size_ == capacity()) reserve(std::max<std::size_t>(2 * capacity(), N));
    data()[size_++] = value;
  }
  void clear() { size_ = 0; }
  void assign(std::size_t n, T value) {
    size_ = 0;
    resize(n, value);
  }
  template <class It>
  void assign(It first, It last) {
    size_ = 0;
    for (; first != last; ++first) push_back(static_cast<T>(*first));
  }

  friend bool operator==(const DimVec& a, const DimVec& b) { return std::equal(a.begin(), a.end(), b.begin(), b.end()); }

 private:
  std::size_t capacity() const { return heap_ ? heap_capacity_ : N; }
  void take(DimVec& other) {
    size_ = other.size_;
    if (other.heap_) {
      heap_ = std::move(other.heap_);
      heap_capacity_ = other.heap_capacity_;
    } else {
      std::copy(other.inline_, other.inline_ + other.size_, inline_);
    }
    other.size_ = 0;
  }

  T inline_[N];
  std::unique_ptr<T[]> heap_;
  std::size_t heap_capacity_ = 0;
  std::size_t size_ = 0;
};

}  // namespace lazycube::detail
