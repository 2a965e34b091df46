// Byte views and an owning, 64-byte aligned, uninitialised byte buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>

namespace lazycube {

using ByteView = std::span<const std::byte>;
using MutableByteView = std::span<std::byte>;

namespace detail {
// Blocks of 1 MiB and more are mapped directly (freeing returns them to the system) and, when
// whole 2 MiB pages fit them closely, aligned and advised for transparent huge pages: first-touch
// page faults on fresh outputs and cached chunks then cost 512x fewer faults (src/util/buffer.cpp).
std::byte* allocate_bytes(std::size_t size);
void free_bytes(std::byte* p, std::size_t size) noexcept;
}  // namespace detail

// Owning byte buffer. Unlike std::vector<std::byte>, resizing does not zero the memory:
// decoders overwrite every byte, and zeroing gigabytes of output would cost real time.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::size_t size) { resize(size); }
  Buffer(const Buffer& other) : Buffer(other.size_) {
    if (size_ != 0) std::memcpy(data_, other.data_, size_);
  }
  Buffer& operator=(const Buffer& other) {
    if (this != &other) {
      resize(other.size_);
      if (size_ != 0) std::memcpy(data_, other.data_, size_);
    }
    return *this;
  }
  Buffer(Buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }
  ~Buffer() { release(); }

  static Buffer copy_of(ByteView bytes) {
    Buffer b(bytes.size());
    if (!bytes.empty()) std::memcpy(b.data_, bytes.data(), bytes.size());
    return b;
  }

  // Grows capacity if needed; keeps existing contents up to min(old, new) size.
  void resize(std::size_t size) {
    if (size > capacity_) {
      std::byte* fresh = detail::allocate_bytes(size);
      if (size_ != 0) std::memcpy(fresh, data_, size_);
      release();
      data_ = fresh;
      capacity_ = size;
    }
    size_ = size;
  }
  void clear() { size_ = 0; }

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  MutableByteView span() { return {data_, size_}; }
  ByteView span() const { return {data_, size_}; }
  ByteView view() const { return {data_, size_}; }

 private:
  void release() {
    if (data_ != nullptr) detail::free_bytes(data_, capacity_);
    data_ = nullptr;
    capacity_ = 0;
    size_ = 0;
  }
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace lazycube
