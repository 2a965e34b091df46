// Support for the numcodecs filters that work element by element (delta, fixedscaleoffset,
// quantize, astype): numeric type dispatch, numpy-like casts, and a base class that handles
// the byte order written in the filter's dtype strings.
#pragma once

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "codec_util.hpp"

namespace lazycube::codec::detail {

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

// Calls f(std::type_identity<T>{}) with the C++ type holding elements of `t`.
template <class F>
void with_numeric_type(const DataType& t, const std::string& codec, F&& f) {
  auto unsupported = [&] { fail(codec + ": unsupported dtype " + t.name()); };
  switch (t.kind) {
    case DTypeKind::Bool: return f(std::type_identity<bool>{});
    case DTypeKind::Int:
      switch (t.itemsize) {
        case 1: return f(std::type_identity<std::int8_t>{});
        case 2: return f(std::type_identity<std::int16_t>{});
        case 4: return f(std::type_identity<std::int32_t>{});
        case 8: return f(std::type_identity<std::int64_t>{});
      }
      break;
    case DTypeKind::UInt:
      switch (t.itemsize) {
        case 1: return f(std::type_identity<std::uint8_t>{});
        case 2: return f(std::type_identity<std::uint16_t>{});
        case 4: return f(std::type_identity<std::uint32_t>{});
        case 8: return f(std::type_identity<std::uint64_t>{});
      }
      break;
    case DTypeKind::Float:
      if (t.itemsize == 4) return f(std::type_identity<float>{});
      if (t.itemsize == 8) return f(std::type_identity<double>{});
      break;
    case DTypeKind::DateTime:
    case DTypeKind::TimeDelta: return f(std::type_identity<std::int64_t>{});
    default: break;
  }
  unsupported();
}

// A filter mapping elements of `astype` (encoded side) to elements of `dtype` (decoded side),
// each in the byte order its configuration names.
class ElementFilter : public BytesToBytesCodec {
 public:
  ElementFilter(std::string name, ParsedNumpyDType dtype, ParsedNumpyDType astype,
                nlohmann::json config);

  std::string name() const override { return name_; }
  ByteView decode(ByteView in, Buffer& scratch, const DecodeLimits& limits) const override;
  Buffer encode(ByteView in) const override;
  std::optional<DataType> encoded_dtype(const DataType&) const override { return astype_.dtype; }
  nlohmann::json to_json() const override;

 protected:
  // Native-order kernels over n elements.
  virtual void decode_native(const std::byte* in, std::byte* out, std::size_t n) const = 0;
  virtual void encode_native(const std::byte* in, std::byte* out, std::size_t n) const = 0;

  std::string name_;
  ParsedNumpyDType dtype_, astype_;
  nlohmann::json config_;
};

// Checks that dtype is a type element filters can compute with; throws naming the key.
void require_numeric(const ConfigReader& cfg, std::string_view key, const ParsedNumpyDType& t);

}  // namespace lazycube::codec::detail
