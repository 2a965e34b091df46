#include "gdal_metadata.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace lazycube::netcdf {

std::optional<DataType> dtype_of(const GDALExtendedDataType& type) {
  if (type.GetClass() == GEDTC_STRING) return DataType::string();
  if (type.GetClass() != GEDTC_NUMERIC) return std::nullopt;
  switch (type.GetNumericDataType()) {
    case GDT_Byte: return DataType::uint(1);
    case GDT_UInt16: return DataType::uint(2);
    case GDT_Int16: return DataType::int_(2);
    case GDT_UInt32: return DataType::uint(4);
    case GDT_Int32: return DataType::int_(4);
    case GDT_UInt64: return DataType::uint(8);
    case GDT_Int64: return DataType::int_(8);
    case GDT_Float32: return DataType::float_(4);
    case GDT_Float64: return DataType::float_(8);
    case GDT_CFloat32: return DataType::complex(8);
    case GDT_CFloat64: return DataType::complex(16);
    default: return std::nullopt;  // complex integers, unknown
  }
}

namespace {

nlohmann::json number_json(double v, bool integral) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  if (integral) return static_cast<std::int64_t>(v);
  return v;
}

bool is_integral(GDALDataType t) {
  return t == GDT_Byte || t == GDT_UInt16 || t == GDT_Int16 || t == GDT_UInt32 || t == GDT_Int32 ||
         t == GDT_UInt64 || t == GDT_Int64;
}

}  // namespace

nlohmann::json attributes_json(const std::vector<std::shared_ptr<GDALAttribute>>& attributes) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& attr : attributes) {
    if (!attr) continue;
    const auto& type = attr->GetDataType();
    const GUInt64 n = attr->GetTotalElementsCount();
    if (type.GetClass() == GEDTC_STRING) {
      if (n <= 1) {
        const char* s = attr->ReadAsString();
        out[attr->GetName()] = s ? s : "";
      } else {
        const CPLStringList list(attr->ReadAsStringArray());
        nlohmann::json arr = nlohmann::json::array();
        for (int i = 0; i < list.size(); ++i) arr.push_back(list[i]);
        out[attr->GetName()] = std::move(arr);
      }
    } else if (type.GetClass() == GEDTC_NUMERIC) {
      const bool integral = is_integral(type.GetNumericDataType());
      // Complex attributes keep their real part (CF attributes are never complex).
      const std::vector<double> values = attr->ReadAsDoubleArray();
      if (values.size() == 1) {
        out[attr->GetName()] = number_json(values.front(), integral);
      } else {
        nlohmann::json arr = nlohmann::json::array();
        for (double v : values) arr.push_back(number_json(v, integral));
        out[attr->GetName()] = std::move(arr);
      }
    }
  }
  return out;
}

Shape read_unit_shape(const Shape& shape, const std::vector<GUInt64>& block, std::size_t itemsize,
                      std::uint64_t target_bytes) {
  const std::size_t nd = shape.size();
  Shape unit(nd, 1);
  const bool known = block.size() == nd && nd > 0 &&
                     std::all_of(block.begin(), block.end(), [](GUInt64 b) { return b > 0; });
  if (known) {
    for (std::size_t d = 0; d < nd; ++d) unit[d] = std::clamp<std::uint64_t>(block[d], 1, std::max<std::uint64_t>(shape[d], 1));
    return unit;
  }
  for (std::size_t d = 0; d < nd; ++d) unit[d] = std::max<std::uint64_t>(shape[d], 1);
  const std::uint64_t item = std::max<std::size_t>(itemsize, 1);
  // Outermost dim: one step at a time (a GRIB message, a record), unless the array is 1-D.
  std::size_t first = 0;
  if (nd >= 2) {
    unit[0] = 1;
    first = 1;
  }
  for (std::size_t d = first; d < nd; ++d) {
    std::uint64_t rest = item;  // bytes of one step along d
    for (std::size_t e = d + 1; e < nd; ++e) rest *= unit[e];
    if (rest * unit[d] <= target_bytes) break;
    unit[d] = std::max<std::uint64_t>(1, target_bytes / rest);
    if (rest <= target_bytes) break;
  }
  return unit;
}

}  // namespace lazycube::netcdf
