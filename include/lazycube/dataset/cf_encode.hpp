// CF encoding for writing: the inverse of CfDecoding (cf.hpp), as xarray 2023.01's
// conventions.encode_cf_variable does it for to_zarr. The rules are listed in
// src/dataset/cf_encode.cpp; the decoding rules they invert in src/dataset/cf.cpp.
#pragma once

#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "lazycube/dataset/cf.hpp"
#include "lazycube/dtype.hpp"
#include "lazycube/ndarray.hpp"

namespace lazycube {

namespace cf {
struct TimeReference;
}

class CfEncoding {
 public:
  // The encoding of a variable holding decoded values of `decoded` dtype with attributes
  // `attrs`, by an encoding dict in xarray's spelling: "dtype" (a numpy type string such as
  // "<i2"), "_FillValue" (null: no fill value), "missing_value", "scale_factor", "add_offset",
  // "units", "calendar"; "coordinates", "valid_range", "valid_min", "valid_max" go back to the
  // attributes as they are. Other keys (chunks, compressor, ...) belong to the array writer and
  // are ignored here. Datetime and timedelta variables need all their `values` unless the
  // encoding gives both "units" and "dtype" (xarray infers the units and the stored dtype from
  // the values). Errors name the variable (UsageError).
  static CfEncoding plan(const DataType& decoded, const nlohmann::json& attrs, const nlohmann::json& encoding,
                         const std::string& name, const NDArray* values = nullptr);

  // The encoding dict that writes a decoded variable back as it was stored: the decoding's
  // encoding (the CF attributes it consumed) plus "dtype", the stored numpy type string.
  static nlohmann::json encoding_of(const CfDecoding& decoding);

  // plan() with the values, then apply(): the stored values and the attributes to write.
  static std::pair<NDArray, nlohmann::json> encode(const NDArray& values, const nlohmann::json& attrs,
                                                   const nlohmann::json& encoding, const std::string& name);

  const DataType& decoded_dtype() const { return decoded_; }
  const DataType& stored_dtype() const { return stored_; }
  // The attributes to write: the variable's own plus the CF ones (_FillValue as a JSON number,
  // or "NaN"/"Infinity"/"-Infinity" for non-finite floats, as zarr-python spells them).
  const nlohmann::json& attrs() const { return attrs_; }
  const std::string& name() const { return name_; }

  // Encodes `values` (decoded dtype, any shape) into a new array of the stored dtype. UsageError
  // naming the variable when a value cannot be stored (NaN without a fill value in an integer
  // dtype, a value outside the stored integer range, a time not a whole number of the units the
  // plan chose from other values).
  NDArray apply(const NDArray& values) const;

 private:
  enum class Time { None, DateTime, TimeDelta };
  cf::TimeReference time_reference() const;

  std::string name_;
  DataType decoded_;
  DataType stored_;
  nlohmann::json attrs_ = nlohmann::json::object();
  // Times: (ns since the reference, in the calendar) / unit_ns_ after the input is scaled to
  // ns by input_ns_ (cf_encode_time.hpp; the reference's fields are those of cf::TimeReference).
  Time time_ = Time::None;
  std::int64_t input_ns_ = 1;
  std::int64_t unit_ns_ = 1;
  bool standard_calendar_ = true;
  std::string calendar_;
  std::int64_t reference_ns_ = 0;
  std::int64_t reference_day_ = 0;
  std::int64_t reference_time_ns_ = 0;
  // The values' type after each xarray coder ran, before the final cast to stored_.
  DataType mid_;
  // Scale/offset: (x - offset) / scale in float32 or float64 (mid_).
  bool has_scale_ = false, has_offset_ = false;
  double scale_ = 1, offset_ = 0;
  // NaN -> this fill value (as written: of the stored type, integers exact); null: none.
  nlohmann::json fill_;
};

}  // namespace lazycube
