#include "v3_scalar.hpp"

#include <bit>
#include <cmath>
#include <cstring>

namespace lazycube::codec::detail {

bool is_real_number_dtype(const DataType& t) {
  switch (t.kind) {
    case DTypeKind::Int:
    case DTypeKind::UInt:
      return t.itemsize == 1 || t.itemsize == 2 || t.itemsize == 4 || t.itemsize == 8;
    case DTypeKind::Float: return t.itemsize == 2 || t.itemsize == 4 || t.itemsize == 8;
    default: return false;
  }
}

DataType v3_real_dtype(const ConfigReader& cfg, std::string_view key, const nlohmann::json& v) {
  const nlohmann::json* name = &v;
  if (v.is_object() && v.contains("name")) name = &v["name"];
  if (!name->is_string()) cfg.bad(key, "expected a data type name, got " + v.dump());
  const std::string text = name->get<std::string>();
  const auto sized = [&](std::string_view prefix, DTypeKind kind) -> std::optional<DataType> {
    if (!text.starts_with(prefix)) return std::nullopt;
    const std::string_view bits = std::string_view(text).substr(prefix.size());
    for (const auto& [digits, size] : {std::pair{"8", 1}, {"16", 2}, {"32", 4}, {"64", 8}})
      if (bits == digits) return DataType{kind, static_cast<std::size_t>(size), {}, 1};
    return std::nullopt;
  };
  std::optional<DataType> t = sized("uint", DTypeKind::UInt);
  if (!t) t = sized("int", DTypeKind::Int);
  if (!t) t = sized("float", DTypeKind::Float);
  if (!t || !is_real_number_dtype(*t))
    cfg.bad(key, "data type " + v.dump() + " is not one of int8..int64, uint8..uint64, float16, float32, float64");
  return *t;
}

__int128 v3_integer_scalar(const ConfigReader& cfg, std::string_view key, const nlohmann::json& v) {
  if (v.is_number_unsigned()) return static_cast<__int128>(v.get<std::uint64_t>());
  if (v.is_number_integer()) return static_cast<__int128>(v.get<std::int64_t>());
  cfg.bad(key, "expected an integer, got " + v.dump());
}

double v3_float_scalar(const ConfigReader& cfg, std::string_view key, const nlohmann::json& v,
                       std::size_t float_bytes) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) cfg.bad(key, "expected a number, \"NaN\", \"Infinity\", \"-Infinity\" or hex bits, got " + v.dump());
  const std::string s = v.get<std::string>();
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "Infinity" || s == "+Infinity") return std::numeric_limits<double>::infinity();  // "+": cast_value's example
  if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  if (s.size() == 2 + 2 * float_bytes && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    std::uint64_t bits = 0;
    for (std::size_t i = 2; i < s.size(); ++i) {
      const char c = s[i];
      const int d = (c >= '0' && c <= '9')   ? c - '0'
                    : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                             : -1;
      if (d < 0) cfg.bad(key, "bad hex digit in " + v.dump());
      bits = (bits << 4) | static_cast<std::uint64_t>(d);
    }
    if (float_bytes == 2) return half_to_float(static_cast<std::uint16_t>(bits));
    if (float_bytes == 4) return std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    return std::bit_cast<double>(bits);
  }
  cfg.bad(key, "unknown special value " + v.dump());
}

}  // namespace lazycube::codec::detail
