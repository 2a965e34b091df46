// How CF attribute values are spelled in JSON, shared by the decoding (cf.cpp) and the
// encoding (cf_encode.cpp): numbers, booleans, and zarr-python's "NaN" / "Infinity" /
// "-Infinity" strings for non-finite floats.
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace lazycube::cf {

inline std::optional<double> json_number(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "NaN" || s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity" || s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

// A float value as JSON: the number, or its zarr-python string when not finite.
inline nlohmann::json float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return d;
}

}  // namespace lazycube::cf
