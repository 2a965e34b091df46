// Element-wise access and numpy-like casts over raw bytes of a numeric DataType: what the
// element filters of the codec layer and the batch layer's dtype casts compute with.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "lazycube/dtype.hpp"

namespace lazycube::detail {

template <class T>
T load_element(const std::byte* base, std::size_t i) {
  if constexpr (std::is_same_v<T, bool>) {
    return base[i] != std::byte{0};
  } else {
    T v;
    std::memcpy(&v, base + i * sizeof(T), sizeof(T));
    return v;
  }
}

template <class T>
void store_element(std::byte* base, std::size_t i, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    base[i] = std::byte{v ? std::uint8_t{1} : std::uint8_t{0}};
  } else {
    std::memcpy(base + i * sizeof(T), &v, sizeof(T));
  }
}

// numpy's astype for one value, except that float->int of NaN gives 0 and out-of-range values
// saturate (numpy leaves those platform-defined; C++ would make them undefined behaviour).
template <class To, class From>
To cast_value(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From{};
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (std::isnan(v)) return To{0};
    if (v <= static_cast<From>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    if (v >= static_cast<From>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// Calls f(std::type_identity<T>{}) with the C++ type holding elements of `t` and returns true;
// false (f not called) when `t` is not bool, a 1..8-byte integer, float32/64 or datetime64/
// timedelta64 (int64).
template <class F>
bool visit_numeric_type(const DataType& t, F&& f) {
  auto call = [&](auto tag) {
    f(tag);
    return true;
  };
  switch (t.kind) {
    case DTypeKind::Bool: return call(std::type_identity<bool>{});
    case DTypeKind::Int:
      switch (t.itemsize) {
        case 1: return call(std::type_identity<std::int8_t>{});
        case 2: return call(std::type_identity<std::int16_t>{});
        case 4: return call(std::type_identity<std::int32_t>{});
        case 8: return call(std::type_identity<std::int64_t>{});
      }
      break;
    case DTypeKind::UInt:
      switch (t.itemsize) {
        case 1: return call(std::type_identity<std::uint8_t>{});
        case 2: return call(std::type_identity<std::uint16_t>{});
        case 4: return call(std::type_identity<std::uint32_t>{});
        case 8: return call(std::type_identity<std::uint64_t>{});
      }
      break;
    case DTypeKind::Float:
      if (t.itemsize == 4) return call(std::type_identity<float>{});
      if (t.itemsize == 8) return call(std::type_identity<double>{});
      break;
    case DTypeKind::DateTime:
    case DTypeKind::TimeDelta: return call(std::type_identity<std::int64_t>{});
    default: break;
  }
  return false;
}


}  // namespace lazycube::detail
