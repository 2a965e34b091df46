#include <nlohmann/json.hpp>

#include "array_metadata.hpp"
#include "lazycube/error.hpp"

namespace lazycube::zarr {

using nlohmann::json;

const json& require(const json& obj, const char* key, const std::string& where) {
  if (!obj.is_object()) throw MetadataError(where + ": metadata is not a JSON object");
  auto it = obj.find(key);
  if (it == obj.end()) throw MetadataError(where + ": missing required key '" + key + "'");
  return *it;
}

std::string string_member(const json& obj, const char* key, const std::string& where, const std::string& fallback) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  if (it == obj.end()) return fallback;
  if (!it->is_string()) throw MetadataError(where + ": '" + key + "' must be a string, got " + it->dump());
  return it->get<std::string>();
}

Shape parse_shape(const json& v, const char* key, const std::string& where, bool allow_zero) {
  if (!v.is_array())
    throw MetadataError(where + ": '" + key + "' must be a list of integers, got " + v.dump());
  Shape out;
  out.reserve(v.size());
  for (const auto& x : v) {
    if (!x.is_number_integer())
      throw MetadataError(where + ": '" + key + "' must hold integers, got " + x.dump());
    if (x.is_number_unsigned() || x.get<std::int64_t>() >= 0) {
      auto n = x.get<std::uint64_t>();
      if (n == 0 && !allow_zero)
        throw MetadataError(where + ": '" + key + "' entries must be positive, got 0");
      // Guard against sizes whose byte counts overflow 64 bits.
      if (n > (std::uint64_t{1} << 48))
        throw MetadataError(where + ": '" + key + "' entry " + x.dump() + " is too large");
      out.push_back(n);
    } else {
      throw MetadataError(where + ": '" + key + "' entries must not be negative, got " + x.dump());
    }
  }
  return out;
}

std::string join_node_path(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "/" + b;
}

}  // namespace lazycube::zarr
