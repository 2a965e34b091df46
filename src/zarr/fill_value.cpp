// Fill values in every form the Zarr v2 and v3 specs (and zarr-python) write them.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <nlohmann/json.hpp>

#include "array_metadata.hpp"
#include "lazycube/error.hpp"
#include "util/element_cast.hpp"
#include "util/half.hpp"
#include "narrow_float.hpp"
#include "util/text.hpp"

namespace lazycube::zarr {

namespace {

using nlohmann::json;

MetadataError bad_fill(const std::string& where, const json& v, const DataType& t,
                       const std::string& why = "") {
  return MetadataError(where + ": fill_value " + v.dump() + " is not valid for " + t.name() +
                       (why.empty() ? "" : " (" + why + ")"));
}

template <class T>
void put(Buffer& b, T value) {
  b.resize(sizeof(T));
  std::memcpy(b.data(), &value, sizeof(T));
}

// "0x7fc00000"-style bit patterns (v3), most significant byte first.
bool parse_hex_bits(const std::string& s, std::size_t nbytes, std::uint64_t& bits) {
  if (s.size() != 2 + 2 * nbytes || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return false;
  bits = 0;
  for (std::size_t i = 2; i < s.size(); ++i) {
    char c = s[i];
    int d = (c >= '0' && c <= '9')   ? c - '0'
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                     : -1;
    if (d < 0) return false;
    bits = (bits << 4) | static_cast<std::uint64_t>(d);
  }
  return true;
}

// One float component (F: float16, float or double) from a JSON number or special string.
template <class F>
void put_float(Buffer& b, const json& v, const std::string& where, const DataType& t, bool allow_hex) {
  constexpr std::size_t size = sizeof(F);
  double d;
  if (v.is_number()) {
    d = v.get<double>();
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    std::uint64_t bits;
    if (s == "NaN" || s == "nan") {
      d = std::numeric_limits<double>::quiet_NaN();
    } else if (s == "Infinity" || s == "inf") {
      d = std::numeric_limits<double>::infinity();
    } else if (s == "-Infinity" || s == "-inf") {
      d = -std::numeric_limits<double>::infinity();
    } else if (allow_hex && parse_hex_bits(s, size, bits)) {
      // Exact bit pattern (keeps NaN payloads).
      if constexpr (size == 2) put(b, static_cast<std::uint16_t>(bits));
      else if constexpr (size == 4) put(b, static_cast<std::uint32_t>(bits));
      else put(b, bits);
      return;
    } else {
      throw bad_fill(where, v, t, "unknown special value");
    }
  } else {
    throw bad_fill(where, v, t);
  }
  if constexpr (std::is_same_v<F, float16>) put(b, to_float16(static_cast<float>(d)));
  else put(b, static_cast<F>(d));
}

// Calls f(std::type_identity<F>{}) with the C++ type of one component of a complex dtype.
template <class G>
void with_component_type(const DataType& t, G&& g) {
  lazycube::detail::visit_dtype<lazycube::detail::dtype_set::kFloat>(DataType::float_(t.itemsize / 2), g);
}

template <class T>
void put_integer(Buffer& b, const json& v, const std::string& where, const DataType& t) {
  if (v.is_number_integer()) {
    if constexpr (std::is_signed_v<T>) {
      if (v.is_number_unsigned()) {
        auto u = v.get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
          throw bad_fill(where, v, t, "out of range");
        put(b, static_cast<T>(u));
        return;
      }
      auto i = v.get<std::int64_t>();
      if (i < std::numeric_limits<T>::min() || i > std::numeric_limits<T>::max())
        throw bad_fill(where, v, t, "out of range");
      put(b, static_cast<T>(i));
    } else {
      // JSON text parses non-negative integers as unsigned; metadata built in memory (the
      // writer's, a test's) may hold them signed.
      if (!v.is_number_unsigned() && v.get<std::int64_t>() < 0) throw bad_fill(where, v, t, "negative for unsigned type");
      auto u = v.get<std::uint64_t>();
      if (u > std::numeric_limits<T>::max()) throw bad_fill(where, v, t, "out of range");
      put(b, static_cast<T>(u));
    }
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (d != std::floor(d) || d < static_cast<double>(std::numeric_limits<T>::lowest()) ||
        d > static_cast<double>(std::numeric_limits<T>::max()))
      throw bad_fill(where, v, t, "not an integer in range");
    put(b, static_cast<T>(d));
  } else if (v.is_boolean()) {
    put(b, static_cast<T>(v.get<bool>() ? 1 : 0));
  } else if (v.is_string()) {
    std::uint64_t bits;
    if (!parse_hex_bits(v.get<std::string>(), sizeof(T), bits)) throw bad_fill(where, v, t);
    put(b, static_cast<T>(bits));
  } else {
    throw bad_fill(where, v, t);
  }
}

void put_fixed_text(Buffer& b, const DataType& t, const std::string& utf8_or_bytes) {
  b.resize(t.itemsize);
  std::memset(b.data(), 0, t.itemsize);
  if (t.kind == DTypeKind::Unicode) {
    std::u32string u = utf8_to_utf32(utf8_or_bytes);
    std::memcpy(b.data(), u.data(), std::min(u.size() * 4, t.itemsize));
  } else {
    std::memcpy(b.data(), utf8_or_bytes.data(), std::min(utf8_or_bytes.size(), t.itemsize));
  }
}

FillValue zero_fill(const DataType& t) {
  FillValue f;
  if (!t.is_variable_length()) {
    f.bytes.resize(t.itemsize);
    std::memset(f.bytes.data(), 0, t.itemsize);
  }
  return f;
}

// Shared by v2 and v3 for the numeric kinds.
void parse_numeric(FillValue& f, const json& v, const DataType& t, const std::string& where,
                   bool allow_hex) {
  if (t.kind == DTypeKind::Complex) {
    if (!v.is_array() || v.size() != 2) throw bad_fill(where, v, t, "expected [real, imag]");
    Buffer re, im;
    with_component_type(t, [&](auto tag) {
      using F = typename decltype(tag)::type;
      put_float<F>(re, v[0], where, t, allow_hex);
      put_float<F>(im, v[1], where, t, allow_hex);
    });
    f.bytes.resize(t.itemsize);
    std::memcpy(f.bytes.data(), re.data(), t.itemsize / 2);
    std::memcpy(f.bytes.data() + t.itemsize / 2, im.data(), t.itemsize / 2);
    return;
  }
  if ((t.kind == DTypeKind::DateTime || t.kind == DTypeKind::TimeDelta) && v.is_string() &&
      v.get<std::string>() == "NaT") {
    put(f.bytes, std::numeric_limits<std::int64_t>::min());
    return;
  }
  const bool numeric = lazycube::detail::visit_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      if (v.is_boolean()) put(f.bytes, static_cast<std::uint8_t>(v.get<bool>()));
      else if (v.is_number()) put(f.bytes, static_cast<std::uint8_t>(v.get<double>() != 0));
      else throw bad_fill(where, v, t);
    } else if constexpr (std::is_same_v<T, float16> || std::is_floating_point_v<T>) {
      put_float<T>(f.bytes, v, where, t, allow_hex);
    } else {
      put_integer<T>(f.bytes, v, where, t);
    }
  });
  if (!numeric) throw bad_fill(where, v, t);
}

// zarr-python 2 stores an object array's fill value as base64 of the object codec's encoding
// of a one-element array; vlen-utf8/vlen-bytes: u32 count (1), u32 length, bytes.
std::optional<std::string> decode_v2_object_fill(const std::string& text) {
  auto raw = base64_decode(text);
  if (!raw || raw->size() < 8) return std::nullopt;
  auto u32 = [&](std::size_t off) {
    std::uint32_t x;
    std::memcpy(&x, raw->data() + off, 4);
    return x;
  };
  if (u32(0) != 1 || 8 + std::uint64_t(u32(4)) != raw->size()) return std::nullopt;
  return raw->substr(8);
}

}  // namespace

FillValue parse_v2_fill_value(const json& v, const DataType& t, const std::string& where) {
  FillValue f = zero_fill(t);
  if (v.is_null()) return f;  // no fill value: absent chunks read as zero / "" / False
  f.specified = true;
  switch (t.kind) {
    case DTypeKind::Record: {  // base64 of the record as stored
      auto raw = v.is_string() ? base64_decode(v.get<std::string>()) : std::nullopt;
      if (!raw || raw->size() != t.itemsize) throw bad_fill(where, v, t, "expected base64 of one record");
      std::memcpy(f.bytes.data(), raw->data(), raw->size());
      return f;
    }
    case DTypeKind::Bytes: {
      if (!v.is_string()) throw bad_fill(where, v, t, "expected base64 text");
      auto raw = base64_decode(v.get<std::string>());
      if (!raw) throw bad_fill(where, v, t, "invalid base64");
      put_fixed_text(f.bytes, t, *raw);
      return f;
    }
    case DTypeKind::Unicode:
      if (!v.is_string()) throw bad_fill(where, v, t, "expected a string");
      put_fixed_text(f.bytes, t, v.get<std::string>());
      return f;
    case DTypeKind::String:
    case DTypeKind::VlenBytes:
      if (v.is_string()) {
        const std::string s = v.get<std::string>();
        auto decoded = decode_v2_object_fill(s);
        f.string = decoded ? *decoded : s;
      } else if (v.is_number() && v.get<double>() == 0) {
        // zarr-python 3 writes 0 for string arrays; read it as the empty string like zarrs.
        f.string.clear();
      } else {
        throw bad_fill(where, v, t);
      }
      return f;
    default:
      parse_numeric(f, v, t, where, /*allow_hex=*/false);
      return f;
  }
}

FillValue parse_v3_fill_value(const json& v, const DataType& t, const std::string& where) {
  FillValue f = zero_fill(t);
  if (v.is_null()) return f;  // zarr-python 3 reads a null fill as zero / "" / False
  f.specified = true;
  switch (t.kind) {
    case DTypeKind::Bytes:
    case DTypeKind::Unicode:
    case DTypeKind::String:
    case DTypeKind::VlenBytes: {
      std::string s;
      if (v.is_string() && t.kind == DTypeKind::Bytes) {
        // fixed-length bytes (null_terminated_bytes, fixed_length_bytes): base64 text, as
        // zarr-python 3 writes and reads it (b"none" is "bm9uZQ==")
        auto decoded = base64_decode(v.get<std::string>());
        if (!decoded) throw bad_fill(where, v, t, "expected base64 text");
        s = std::move(*decoded);
      } else if (v.is_string()) {
        s = v.get<std::string>();
      } else if (v.is_array()) {  // bytes as a list of integers
        for (const auto& x : v) {
          if (!x.is_number_unsigned() || x.get<std::uint64_t>() > 255)
            throw bad_fill(where, v, t, "expected byte values 0-255");
          s.push_back(static_cast<char>(x.get<std::uint64_t>()));
        }
      } else {
        throw bad_fill(where, v, t);
      }
      if (t.is_variable_length()) f.string = s;
      else put_fixed_text(f.bytes, t, s);
      return f;
    }
    default:
      parse_numeric(f, v, t, where, /*allow_hex=*/true);
      return f;
  }
}

FillValue parse_v3_fill_value(const json& v, const V3DataType& data_type, const std::string& where) {
  const DataType& t = data_type.dtype;
  if (data_type.narrow != nullptr && !v.is_null()) {
    FillValue f;
    f.specified = true;
    put(f.bytes, parse_narrow_float_fill(*data_type.narrow, v, where));
    return f;
  }
  if (data_type.fill == V3DataType::Fill::AsciiText && v.is_string()) {
    const std::string s = v.get<std::string>();
    for (char c : s)
      if (static_cast<unsigned char>(c) > 0x7f) throw bad_fill(where, v, t, "not ASCII text");
    if (s.size() > t.itemsize) throw bad_fill(where, v, t, "longer than the item size");
    FillValue f;
    f.specified = true;
    put_fixed_text(f.bytes, t, s);
    return f;
  }
  return parse_v3_fill_value(v, t, where);
}

float parse_narrow_float_fill(const NarrowFloatFormat& format, const json& v, const std::string& where) {
  auto bad = [&](const std::string& why) {
    return MetadataError(where + ": fill_value " + v.dump() + " is not valid for " + std::string(format.name) +
                         " (" + why + ")");
  };
  if (v.is_number()) {
    const auto x = static_cast<float>(v.get<double>());
    if (!format.has_nan()) {  // finite formats saturate when encoding: a fill past the largest value is refused
      const float max = narrow_to_float(format, (1u << (format.bits() - 1)) - 1);
      if (std::fabs(x) > max) throw bad("out of range: its largest value is " + std::to_string(max));
    }
    const float r = narrow_to_float(format, float_to_narrow(format, x));
    if (std::isnan(r)) throw bad(format.special == NarrowFloatFormat::Special::E8M0 ? "only positive powers of two"
                                                                                   : "out of range");
    return r;
  }
  if (!v.is_string())
    throw bad("expected a number, \"NaN\", \"Infinity\", \"-Infinity\" or a hex bit pattern");
  const std::string s = v.get<std::string>();
  if (s == "NaN") {
    if (!format.has_nan()) throw bad(std::string(format.name) + " has no NaN");
    return std::numeric_limits<float>::quiet_NaN();
  }
  if (s == "Infinity" || s == "-Infinity") {
    if (!format.has_infinity()) throw bad(std::string(format.name) + " has no infinity");
    return s == "Infinity" ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
  }
  std::uint64_t bits;
  if (!parse_hex_bits(s, format.bytes, bits))
    throw bad("expected a number, \"NaN\", \"Infinity\", \"-Infinity\" or \"0x\" and " +
              std::to_string(2 * format.bytes) + " hex digits");
  return narrow_to_float(format, static_cast<std::uint32_t>(bits));
}

namespace {

template <class T>
T get(const Buffer& b, std::size_t offset = 0) {
  T value;
  std::memcpy(&value, b.data() + offset, sizeof(T));
  return value;
}

// One float component as zarr-python writes it: a number, or "NaN" / "Infinity" / "-Infinity".
json float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return d;
}

// A bool, integer (datetime64/timedelta64: the int64 count, NaT too, as zarr-python 2 and 3
// write it) or float (float16 included) fill value as zarr-python writes it; null for other
// dtypes.
json fill_number_json(const Buffer& b, const DataType& t) {
  json out;
  lazycube::detail::visit_dtype(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) out = get<std::uint8_t>(b) != 0;
    else if constexpr (std::is_same_v<T, float16> || std::is_floating_point_v<T>) out = float_json(lazycube::detail::as_double(get<T>(b)));
    else out = json(get<T>(b));
  });
  return out;
}

}  // namespace

json fill_value_json(const FillValue& f, const DataType& t, int zarr_format, const std::string& where) {
  if (!f.specified && zarr_format == 2) return nullptr;
  switch (t.kind) {
    case DTypeKind::Bool:
    case DTypeKind::Int:
    case DTypeKind::UInt:
    case DTypeKind::DateTime:
    case DTypeKind::TimeDelta:
    case DTypeKind::Float:
      return fill_number_json(f.bytes, t);
    case DTypeKind::Complex: {
      json out;
      with_component_type(t, [&](auto tag) {
        using F = typename decltype(tag)::type;
        out = json::array({float_json(get<F>(f.bytes, 0)), float_json(get<F>(f.bytes, t.itemsize / 2))});
      });
      return out;
    }
    case DTypeKind::Bytes:
    case DTypeKind::Unicode:
      for (std::size_t i = 0; i < f.bytes.size(); ++i)
        if (f.bytes.data()[i] != std::byte{0})
          throw MetadataError(where + ": a fill value other than the empty string is not supported for " +
                              t.name() + " by the writer");
      return "";  // empty: the same in base64 (v2 bytes) and as text
    case DTypeKind::String:
    case DTypeKind::VlenBytes:
      if (zarr_format == 2) throw MetadataError(where + ": the writer has no Zarr v2 fill value for " + t.name());
      return f.string;
    case DTypeKind::Record: {
      // v3 struct: an object of the fields' fill values, nested records as objects.
      if (zarr_format != 3 || !t.fields) break;
      json out = json::object();
      for (const RecordField& field : *t.fields) {
        FillValue part;
        part.specified = true;
        part.bytes = Buffer::copy_of(f.bytes.view().subspan(field.offset, field.dtype.itemsize));
        out[field.name] = fill_value_json(part, field.dtype, 3, where);
      }
      return out;
    }
  }
  throw MetadataError(where + ": no fill value encoding for " + t.name());
}

}  // namespace lazycube::zarr
