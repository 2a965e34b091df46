#include "channel_plan.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "lazycube/error.hpp"

namespace lazycube::cuda::detail {

namespace {

// A double for messages, shortest-ish ("1e-09", "-3", "nan").
std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Stores `value` converted to T in `bits` and returns true when the conversion is exact
// (an integer in T's range for integer types, a value float32 represents for float32).
template <class T>
bool exact_bits(double value, std::uint64_t& bits) {
  T v{};
  if constexpr (std::is_floating_point_v<T>) {
    v = static_cast<T>(value);
    if (std::isnan(value) || static_cast<double>(v) != value) return false;
  } else {
    // [lo, hi) as doubles: both bounds are powers of two (or 0), hence exact.
    const double lo = static_cast<double>(std::numeric_limits<T>::min());
    const double hi = 2.0 * (static_cast<double>(std::numeric_limits<T>::max() / 2) + 1.0);
    if (!(value >= lo && value < hi) || std::trunc(value) != value) return false;
    v = static_cast<T>(value);
  }
  bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return true;
}

// The kernel's name for input element type T.
template <class T>
constexpr InType in_type_of() {
  if constexpr (std::is_same_v<T, float>) return InType::F32;
  else if constexpr (std::is_same_v<T, double>) return InType::F64;
  else if constexpr (std::is_signed_v<T>)
    return sizeof(T) == 1 ? InType::I8 : sizeof(T) == 2 ? InType::I16 : sizeof(T) == 4 ? InType::I32 : InType::I64;
  else
    return sizeof(T) == 1 ? InType::U8 : sizeof(T) == 2 ? InType::U16 : sizeof(T) == 4 ? InType::U32 : InType::U64;
}

// InType back to its C++ type (the kernel ABI enum; the launch in unpack_normalize.cu has its own).
bool to_bits(InType type, double value, std::uint64_t& bits) {
  switch (type) {
    case InType::I8: return exact_bits<std::int8_t>(value, bits);
    case InType::U8: return exact_bits<std::uint8_t>(value, bits);
    case InType::I16: return exact_bits<std::int16_t>(value, bits);
    case InType::U16: return exact_bits<std::uint16_t>(value, bits);
    case InType::I32: return exact_bits<std::int32_t>(value, bits);
    case InType::U32: return exact_bits<std::uint32_t>(value, bits);
    case InType::I64: return exact_bits<std::int64_t>(value, bits);
    case InType::U64: return exact_bits<std::uint64_t>(value, bits);
    case InType::F32: return exact_bits<float>(value, bits);
    case InType::F64: return exact_bits<double>(value, bits);
  }
  return false;
}

}  // namespace

InType input_type(const DataType& dtype) {
  InType type{};
  if (!lazycube::detail::visit_dtype<kInputDTypes>(dtype, [&](auto tag) { type = in_type_of<typename decltype(tag)::type>(); }))
    throw UsageError("unpack_normalize: unsupported input dtype " + dtype.name() +
                     " (expected int8..int64, uint8..uint64, float32 or float64)");
  return type;
}

std::size_t input_size(InType type) {
  switch (type) {
    case InType::I8: case InType::U8: return 1;
    case InType::I16: case InType::U16: return 2;
    case InType::I32: case InType::U32: case InType::F32: return 4;
    case InType::I64: case InType::U64: case InType::F64: return 8;
  }
  return 0;
}

std::vector<ChannelParams> plan_channels(InType type, const BatchShape& shape,
                                         std::span<const ChannelTransform> channels) {
  if (channels.size() != shape.channels)
    throw UsageError("unpack_normalize: " + std::to_string(channels.size()) +
                     " channel transforms for " + std::to_string(shape.channels) + " channels");
  std::vector<ChannelParams> out(channels.size());
  for (std::size_t c = 0; c < channels.size(); ++c) {
    const ChannelTransform& t = channels[c];
    const std::string where = "unpack_normalize: channel " + std::to_string(c) + ": ";
    if (!(std::isfinite(t.std) && t.std > 0))
      throw UsageError(where + "std must be a finite number > 0, got " + number(t.std));
    if (!std::isfinite(t.scale) || !std::isfinite(t.offset) || !std::isfinite(t.mean))
      throw UsageError(where + "scale, offset and mean must be finite (got scale " +
                       number(t.scale) + ", offset " + number(t.offset) + ", mean " +
                       number(t.mean) + ")");
    ChannelParams& p = out[c];
    p.a = t.scale / t.std;
    p.b = (t.offset - t.mean) / t.std;
    if (t.fill && to_bits(type, *t.fill, p.fill_bits)) p.flags |= kHasFill;
    if (t.missing && to_bits(type, *t.missing, p.missing_bits)) p.flags |= kHasMissing;
  }
  return out;
}

}  // namespace lazycube::cuda::detail
