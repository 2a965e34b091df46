// Optional xtensor views of results: include only where xtensor is wanted.
#pragma once

#include <complex>
#include <cstring>
#include <type_traits>

#include <xtensor/xarray.hpp>

#include "lazycube/dataset/variable.hpp"
#include "lazycube/error.hpp"
#include "lazycube/ndarray.hpp"

namespace lazycube {

namespace detail {
template <class T>
struct is_complex : std::false_type {};
template <class T>
struct is_complex<std::complex<T>> : std::true_type {};

// Whether elements of `dtype` may be viewed as T (datetime/timedelta as std::int64_t).
template <class T>
bool element_matches(const DataType& dtype) {
  if (dtype.is_variable_length() || sizeof(T) != dtype.itemsize) return false;
  if constexpr (std::is_same_v<T, bool>) return dtype.kind == DTypeKind::Bool;
  else if constexpr (is_complex<T>::value) return dtype.kind == DTypeKind::Complex;
  else if constexpr (std::is_floating_point_v<T>) return dtype.kind == DTypeKind::Float;
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
    return dtype.kind == DTypeKind::Int ||
           (sizeof(T) == 8 && (dtype.kind == DTypeKind::DateTime ||
                               dtype.kind == DTypeKind::TimeDelta));
  else if constexpr (std::is_integral_v<T>) return dtype.kind == DTypeKind::UInt;
  else return false;
}
}  // namespace detail

// Copies `array` into an xt::xarray<T>; UsageError when T does not match its dtype.
template <class T>
xt::xarray<T> to_xtensor(const NDArray& array) {
  if (!detail::element_matches<T>(array.dtype))
    throw UsageError("cannot view " + array.dtype.name() + " data as a C++ element of " +
                     std::to_string(sizeof(T)) + " bytes of another kind");
  typename xt::xarray<T>::shape_type shape(array.shape.begin(), array.shape.end());
  xt::xarray<T> out(shape);
  if (array.size() > 0) std::memcpy(out.data(), array.data.data(), array.data.size());
  return out;
}

// Reads a variable (CF-decoded) as an xt::xarray<T>.
template <class T>
xt::xarray<T> read_as(const Variable& variable) {
  return to_xtensor<T>(variable.read());
}

}  // namespace lazycube
