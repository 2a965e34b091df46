// Element-wise access and numpy-like casts over raw bytes of a numeric DataType, and the dtype
// dispatch (visit_dtype) every layer uses to find the C++ type of a DataType's elements.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "lazycube/dtype.hpp"
#include "util/half.hpp"

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

// The one place that maps a DataType (kind + itemsize) to the C++ type holding its elements;
// every layer dispatches through it. The sets of dtypes a caller accepts (bit flags, combined
// with |):
namespace dtype_set {
inline constexpr unsigned kBool = 1u << 0;      // bool
inline constexpr unsigned kSigned = 1u << 1;    // int8, int16, int32, int64
inline constexpr unsigned kUnsigned = 1u << 2;  // uint8, uint16, uint32, uint64
inline constexpr unsigned kHalf = 1u << 3;      // float16, as lazycube::float16 (its bits)
inline constexpr unsigned kFloat = 1u << 4;     // float32, float64 (float, double)
inline constexpr unsigned kTime = 1u << 5;      // datetime64, timedelta64 (their int64 counts)
inline constexpr unsigned kInteger = kSigned | kUnsigned;
inline constexpr unsigned kReal = kInteger | kFloat;                 // numbers C++ computes with
inline constexpr unsigned kNumeric = kBool | kReal | kTime;           // all but float16
inline constexpr unsigned kAll = kNumeric | kHalf;                    // every fixed-size non-complex number
}  // namespace dtype_set

namespace dtype_dispatch {
template <unsigned Accept, unsigned Set, class T, class F>
bool call([[maybe_unused]] F& f) {
  if constexpr ((Accept & Set) != 0) {
    f(std::type_identity<T>{});
    return true;
  } else {
    return false;
  }
}
}  // namespace dtype_dispatch

// Calls f(std::type_identity<T>{}) with the C++ type T holding elements of `t` and returns true
// when `t` is in the set `Accept`; returns false (f not called) otherwise, and for complex,
// string and byte-string dtypes, which have no such type. f is instantiated only for the types
// of `Accept`, so a visitor that cannot compute in float16 leaves kHalf out (or converts
// lazycube::float16 with half_to_float).
template <unsigned Accept = dtype_set::kAll, class F>
bool visit_dtype(const DataType& t, F&& f) {
  using namespace dtype_set;
  using dtype_dispatch::call;
  switch (t.kind) {
    case DTypeKind::Bool:
      if (t.itemsize == 1) return call<Accept, kBool, bool>(f);
      break;
    case DTypeKind::Int:
      switch (t.itemsize) {
        case 1: return call<Accept, kSigned, std::int8_t>(f);
        case 2: return call<Accept, kSigned, std::int16_t>(f);
        case 4: return call<Accept, kSigned, std::int32_t>(f);
        case 8: return call<Accept, kSigned, std::int64_t>(f);
      }
      break;
    case DTypeKind::UInt:
      switch (t.itemsize) {
        case 1: return call<Accept, kUnsigned, std::uint8_t>(f);
        case 2: return call<Accept, kUnsigned, std::uint16_t>(f);
        case 4: return call<Accept, kUnsigned, std::uint32_t>(f);
        case 8: return call<Accept, kUnsigned, std::uint64_t>(f);
      }
      break;
    case DTypeKind::Float:
      switch (t.itemsize) {
        case 2: return call<Accept, kHalf, float16>(f);
        case 4: return call<Accept, kFloat, float>(f);
        case 8: return call<Accept, kFloat, double>(f);
      }
      break;
    case DTypeKind::DateTime:
    case DTypeKind::TimeDelta:
      if (t.itemsize == 8) return call<Accept, kTime, std::int64_t>(f);
      break;
    default: break;
  }
  return false;
}

// Whether visit_dtype<Accept> has a C++ type for `t`.
template <unsigned Accept = dtype_set::kAll>
bool has_element_type(const DataType& t) {
  return visit_dtype<Accept>(t, [](auto) {});
}

// An element value as a double: float16 through half_to_float, bool as 0/1 (exact except for
// |integers| > 2^53).
template <class T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, float16>) {
    return half_to_float(v);
  } else {
    return static_cast<double>(v);
  }
}

}  // namespace lazycube::detail
