// CF decoding as xarray 2023.01 does it when opening Zarr (mask_and_scale, decode_times,
// decode_timedelta): the plan is computed once from dtype + attributes, then applied to every
// array read from the variable. Its inverse, for writing, is CfEncoding (cf_encode.hpp).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lazycube/array.hpp"
#include "lazycube/dtype.hpp"
#include "lazycube/ndarray.hpp"

namespace lazycube {

// A fill value's native bytes as a CF attribute value in JSON: a number (zarr-python's "NaN" /
// "Infinity" strings when not finite), bytes (binary) or text; null when `bytes` is not one item.
nlohmann::json fill_value_json(const Buffer& bytes, const DataType& t);

// Inputs of the plan besides the stored dtype and attributes.
struct CfInputs {
  // The array's fill value acting as _FillValue (Zarr v2: xarray's zarr backend puts it in
  // the attributes; Zarr v3: only an explicit _FillValue attribute masks). Raw native bytes.
  std::optional<Buffer> array_fill_bytes;
  // OpenOptions::mask_valid_range: valid_range / valid_min / valid_max (in stored units) mask
  // values outside them to NaN, as netCDF4-python does (xarray never does). Only explicit
  // attributes: no range is derived from _FillValue.
  bool mask_valid_range = false;
  // The variable's name, for errors about its attributes.
  std::string name;
  // CF coordinate attributes (coordinates, bounds, ...) that move to the encoding, and those
  // dropped: the dataset decides (cf_coordinates.hpp, xarray's decode_coords). nullopt: a lone
  // variable moves its `coordinates`.
  std::optional<std::vector<std::string>> coordinate_keys;
  std::vector<std::string> dropped_keys;
  // The unit of decoded datetimes: "ns" (xarray's datetime64[ns]), or a coarser one ("s", ...)
  // for times datetime64[ns] cannot hold (the dataset chooses it from the first and last value).
  std::string datetime_unit = "ns";
  // A character array read as strings (concat_characters): the string dim's name, for the
  // encoding (xarray's char_dim_name).
  std::string char_dim_name;
  std::uint64_t char_dim_chunk = 0;  // the stored chunk length along it (encoding "chunks")
  // `_Encoding` decodes bytes to text (xarray does it under concat_characters only).
  bool decode_text = true;
  // The unpacked type of scale_factor/add_offset: "attributes" (xarray >= 2024.02, the type of
  // the attributes) or "stored" (xarray < 2024.02: from the stored type, promoted by masking,
  // alone: float32 for floats of <= 4 bytes and, without add_offset, integers of <= 2 bytes;
  // float64 otherwise). UsageError for anything else.
  std::string scale_dtype_rule = "attributes";
};

// The plan is also the element conversion of a decoded read (Array::read_converted): each
// decoding thread applies it to its chunk as it writes the caller's output.
class CfDecoding final : public ElementConversion {
 public:
  // An identity plan (decode_cf = false): dtype and attributes untouched.
  static CfDecoding identity(const DataType& stored, nlohmann::json attrs);
  // The xarray decoding of a variable with this stored dtype and these attributes.
  static CfDecoding plan(const DataType& stored, const nlohmann::json& attrs,
                         const CfInputs& inputs = {});

  const DataType& stored_dtype() const { return stored_; }
  const DataType& decoded_dtype() const { return decoded_; }
  // Attributes left visible after decoding, and those moved into the encoding.
  const nlohmann::json& attrs() const { return attrs_; }
  const nlohmann::json& encoding() const { return encoding_; }
  bool is_identity() const { return steps_ == 0; }
  // Fixed-length strings with a _FillValue: xarray decodes them to object arrays with NaN where
  // an element equals the fill (the values themselves are not changed by apply()).
  bool masks_strings() const { return (steps_ & kStringMask) != 0; }
  // Whether one decoded element (decoded_dtype().itemsize bytes) is the fill value.
  bool is_string_fill(const std::byte* item) const;
  // The text encoding applied to bytes (`_Encoding`), or "".
  const std::string& text_encoding() const { return text_encoding_; }
  // Whether values decode to datetime64 from numbers with "<unit> since <date>".
  bool decodes_datetime() const { return (steps_ & kDateTime) != 0; }

  // Decodes `raw` (stored dtype) into a new array of the decoded dtype.
  NDArray apply(const NDArray& raw) const;
  // Decodes `count` stored elements into `out` (count * decoded itemsize bytes).
  void apply(ByteView raw, std::uint64_t count, MutableByteView out) const;

  // ElementConversion: stored -> decoded, `count` elements, sizes not checked.
  const DataType& input_dtype() const override { return stored_; }
  const DataType& output_dtype() const override { return decoded_; }
  void convert(const std::byte* raw, std::uint64_t count, std::byte* out) const override;

 private:
  enum Step : unsigned { kMask = 1, kScale = 2, kDateTime = 4, kTimeDelta = 8, kValidRange = 16, kUnsigned = 32,
              kText = 64, kStringMask = 128 };
  enum class Precision { F32, F64 };

  DataType stored_;
  DataType decoded_;
  // The type the stored bytes are read as: stored_, or its unsigned/signed twin (_Unsigned).
  DataType view_;
  nlohmann::json attrs_ = nlohmann::json::object();
  nlohmann::json encoding_ = nlohmann::json::object();
  unsigned steps_ = 0;
  // Mask: values equal to any of these (compared in mask precision) become NaN / NaT.
  std::vector<double> fill_values_;
  std::vector<float> fill_values32_;      // the same as float32, for float32 mask precision
  std::vector<std::int64_t> fill_ints_;   // datetime/timedelta storage
  Buffer complex_fill_;                   // complex storage: exact bytes of the fill value
  Precision mask_precision_ = Precision::F64;
  // Valid range (kValidRange): stored values outside [valid_min_, valid_max_] become NaN; the
  // bounds are already cast to the stored type (netCDF4-python: numpy.array(attr, dtype)).
  double valid_min_ = -std::numeric_limits<double>::infinity();
  double valid_max_ = std::numeric_limits<double>::infinity();
  // Scale/offset (x * scale + offset in scale precision).
  std::optional<double> scale_factor_;
  std::optional<double> add_offset_;
  Precision scale_precision_ = Precision::F64;
  // Time: value * unit_ns + the reference (reference_s_, reference_frac_ns_).
  std::int64_t unit_ns_ = 1;
  std::int64_t reference_s_ = 0;       // the reference: seconds since the epoch (any year)
  std::int64_t reference_frac_ns_ = 0;  // and ns after them
  std::int64_t datetime_unit_ns_ = 1;    // ns per step of the decoded datetime64 unit
  // The dtype entering the time step (after mask and scale).
  DataType pre_time_;
  // Strings: the fill value's bytes (kStringMask) and the bytes' text encoding (kText).
  Buffer string_fill_;
  std::string text_encoding_;
  void decode_text(const std::byte* raw, std::uint64_t count, std::byte* out) const;
  // For messages: the variable's name and its time units as written.
  std::string name_;
  std::string time_units_;
  // CodecError naming the variable and units: `value` does not fit the decoded time type.
  [[noreturn]] void time_out_of_range(double value) const;
};

}  // namespace lazycube
