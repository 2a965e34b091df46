// CF encoding rules: xarray 2023.01's encode_cf_variable (coders in this order), the inverse of
// the decoding in cf.cpp. Only the encoding dict drives them; attributes pass through, and an
// attribute that a rule would write is an error (xarray's safe_setitem).
//   1. Datetimes (CFDatetimeCoder): numbers in "<unit> since <date>". Without units, xarray's
//      infer_datetime_units: the first non-NaT value is the reference (written as pandas
//      prints it, "2000-01-01 00:00:00"), the unit the coarsest of days..nanoseconds dividing
//      every step between consecutive values. Given units are rewritten with xarray's
//      format_timestamp ("hours since 1900-01-01", "days since 2000-01-01T06:00:00").
//      Calendar default "proleptic_gregorian". Other calendars (noleap, all_leap, 360_day,
//      julian, ...) count as cftime.date2num does for datetime64 values: truncated to
//      microseconds, the Gregorian fields read as a date of that calendar (a date it lacks, such
//      as February 29 in noleap, is an error). Whole multiples of the unit stay int64; any other
//      value or any NaT makes float64 (NaT -> NaN).
//   2. Timedeltas (CFTimedeltaCoder): numbers of `units` (default: the coarsest of days..
//      nanoseconds dividing every value); int64 when all are whole, else float64 with NaN.
//   3. scale_factor/add_offset (CFScaleOffsetCoder): (x - offset) / scale computed in float32
//      for float16/32 data and for 8/16-bit integers without an offset, float64 otherwise.
//   4. _FillValue / missing_value (CFMaskCoder): cast to the stored dtype and written; NaN
//      becomes the fill value (the _FillValue, else the missing_value). Both given and not
//      close: an error.
//   5. dtype: the stored type; floats to integers round half to even first (numpy.around).
//      Deviation: a value that does not fit (NaN, out of range) is an error, where numpy's
//      astype gives platform-defined garbage.
//   6. Floats without a _FillValue (in the encoding or the attributes) get _FillValue NaN;
//      an explicit null _FillValue in the encoding means none.
//   7. Booleans without an encoding dtype: int8 with attribute dtype="bool".
//   8. CF keys that only move (coordinates, valid_range/min/max, bounds, grid_mapping, ...)
//      go back to the attributes.
// Deviations besides 5: a reference date with a time zone is kept with its offset but reference
// dates outside pandas' range are written as ISO dates (xarray keeps the text it was given);
// timedeltas beyond 2^53 units stay exact integers (xarray divides in float64).
#include "lazycube/dataset/cf_encode.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>
#include <nlohmann/json.hpp>

#include "cf_encode_time.hpp"
#include "cf_json.hpp"
#include "lazycube/dataset/cf_time.hpp"
#include "lazycube/error.hpp"
#include "util/element_cast.hpp"
#include "util/half.hpp"

namespace lazycube {

namespace {

const char* const kMovedKeys[] = {"coordinates", "valid_range", "valid_min", "valid_max", "bounds",
                                  "grid_mapping", "climatology", "geometry", "node_coordinates", "node_count",
                                  "part_node_count", "interior_ring", "cell_measures", "formula_terms"};

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw UsageError("CF encoding of variable '" + name + "': " + what);
}

bool is_plain_number_type(const DataType& t) {
  return t.kind == DTypeKind::Bool || t.kind == DTypeKind::Int || t.kind == DTypeKind::UInt ||
         t.kind == DTypeKind::Float;
}

// xarray's safe_setitem: an encoding never overwrites an attribute.
void set_attr(nlohmann::json& attrs, const std::string& key, nlohmann::json value, const std::string& name) {
  if (attrs.contains(key))
    fail(name, "attribute " + key + " is set both in the attributes and by the encoding; remove it from one");
  attrs[key] = std::move(value);
}

// A present, non-null encoding entry.
const nlohmann::json* entry(const nlohmann::json& encoding, const char* key) {
  auto it = encoding.find(key);
  return it == encoding.end() || it->is_null() ? nullptr : &*it;
}

double number_entry(const nlohmann::json& v, const std::string& name, const char* key) {
  const nlohmann::json& x = v.is_array() && v.size() == 1 ? v.front() : v;
  const auto d = cf::json_number(x);
  if (!d) fail(name, std::string(key) + " must be a number, got " + v.dump());
  return *d;
}

std::string string_entry(const nlohmann::json& v, const std::string& name, const char* key) {
  if (!v.is_string()) fail(name, std::string(key) + " must be a string, got " + v.dump());
  return v.get<std::string>();
}

// xarray's _choose_float_dtype for encoding (from the data's type, 2023.01).
DataType scale_float_type(const DataType& t, bool has_offset) {
  if (t.kind == DTypeKind::Float && t.itemsize <= 4) return DataType::float_(4);
  if ((t.kind == DTypeKind::Int || t.kind == DTypeKind::UInt) && t.itemsize <= 2 && !has_offset)
    return DataType::float_(4);
  return DataType::float_(8);
}

// numpy's dtype.type(v) for a fill value written to the attributes: the value as the stored
// type holds it, as JSON (integers exact; UsageError when it does not fit an integer type).
nlohmann::json cast_fill(const nlohmann::json& v, const DataType& t, const std::string& name, const char* key) {
  const nlohmann::json& x = v.is_array() && v.size() == 1 ? v.front() : v;
  const auto d = cf::json_number(x);
  if (!d) fail(name, std::string(key) + " must be a number, got " + v.dump());
  std::optional<double> as_float;  // *d as a float type holds it
  detail::visit_dtype<detail::dtype_set::kHalf | detail::dtype_set::kFloat>(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float16>) as_float = half_to_float(to_float16(static_cast<float>(*d)));
    else as_float = static_cast<T>(*d);
  });
  if (as_float) return cf::float_json(*as_float);
  if (t.kind == DTypeKind::Bool) return *d != 0;
  __int128 w = 0;
  if (x.is_number_unsigned()) {
    w = x.get<std::uint64_t>();
  } else if (x.is_number_integer()) {
    w = x.get<std::int64_t>();
  } else if (std::isfinite(*d) && std::fabs(*d) < 1.9e19) {
    w = static_cast<__int128>(std::trunc(*d));
  } else {
    fail(name, std::string(key) + " " + v.dump() + " does not fit the stored dtype " + t.name());
  }
  const unsigned bits = static_cast<unsigned>(t.itemsize * 8);
  const bool is_signed = t.kind == DTypeKind::Int;
  const __int128 lo = is_signed ? -(static_cast<__int128>(1) << (bits - 1)) : 0;
  const __int128 hi = (static_cast<__int128>(1) << (bits - (is_signed ? 1 : 0))) - 1;
  if (w < lo || w > hi) fail(name, std::string(key) + " " + v.dump() + " does not fit the stored dtype " + t.name());
  if (w < 0) return static_cast<std::int64_t>(w);
  return static_cast<std::uint64_t>(w);
}

// numpy's allclose(a, b, equal_nan=True) for two fill values.
bool close_or_equal(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= 1e-8 + 1e-5 * std::fabs(b);
}

// Time values in ns (NaT kept) of a datetime64/timedelta64 array, in C order.
std::vector<std::int64_t> time_values_ns(const NDArray& values, std::int64_t input_ns, const std::string& name) {
  std::vector<std::int64_t> out;
  out.reserve(values.size());
  for (std::int64_t v : values.values<std::int64_t>()) {
    std::int64_t ns = cf::kNaT;
    if (v != cf::kNaT && __builtin_mul_overflow(v, input_ns, &ns))
      fail(name, "time value " + std::to_string(v) + " " + values.dtype.name() + " overflows datetime64[ns]");
    out.push_back(ns);
  }
  return out;
}

// The first of days..nanoseconds dividing every value (xarray's _infer_time_units_from_diff).
std::string coarsest_unit(const std::vector<std::int64_t>& steps) {
  for (std::string_view u : cf::kTimeUnits) {
    const std::int64_t unit = *cf::time_unit_ns(u);
    if (std::all_of(steps.begin(), steps.end(), [&](std::int64_t s) { return s % unit == 0; }))
      return std::string(u);
  }
  return "seconds";
}

// Whether every value is a whole number of units after the reference (no NaT): xarray's int64.
bool all_whole(const std::vector<std::int64_t>& ns, const cf::TimeReference* ref, std::int64_t unit,
               const std::string& name) {
  return std::all_of(ns.begin(), ns.end(), [&](std::int64_t v) {
    if (v == cf::kNaT) return false;
    const auto d = ref ? cf::ns_since_reference(*ref, v) : std::optional<__int128>(v);
    if (!d) fail(name, cf::format_datetime_ns(v) + " does not exist in calendar '" + ref->calendar + "'");
    return *d % unit == 0;
  });
}

}  // namespace

CfEncoding CfEncoding::plan(const DataType& decoded, const nlohmann::json& attrs_in, const nlohmann::json& encoding_in,
                            const std::string& name, const NDArray* values) {
  CfEncoding e;
  e.name_ = name;
  e.decoded_ = decoded;
  if (!attrs_in.is_null() && !attrs_in.is_object()) fail(name, "attributes must be an object, got " + attrs_in.dump());
  if (!encoding_in.is_null() && !encoding_in.is_object())
    fail(name, "the encoding must be an object, got " + encoding_in.dump());
  if (values && !(values->dtype == decoded)) fail(name, "values are " + values->dtype.name() + ", not " + decoded.name());
  if (attrs_in.is_object()) e.attrs_ = attrs_in;
  const nlohmann::json encoding = encoding_in.is_object() ? encoding_in : nlohmann::json::object();
  auto& attrs = e.attrs_;

  // xarray's UnsignedIntegerCoder has no inverse in the decoding (cf.cpp reads no _Unsigned).
  if (entry(encoding, "_Unsigned")) fail(name, "_Unsigned is not supported; give an unsigned dtype instead");

  std::optional<DataType> target;  // the encoding's dtype
  if (const auto* d = entry(encoding, "dtype")) {
    const std::string s = string_entry(*d, name, "dtype");
    try {
      target = parse_numpy_dtype(s).dtype;
    } catch (const MetadataError&) {
      fail(name, "dtype '" + s + "' is not a numpy type string such as '<i2' or '<f4'");
    }
  }
  const bool is_time = decoded.kind == DTypeKind::DateTime || decoded.kind == DTypeKind::TimeDelta;
  const bool numeric = is_plain_number_type(decoded) || is_time;
  if (target && !(*target == decoded) && (!numeric || !is_plain_number_type(*target)))
    fail(name, "cannot store " + decoded.name() + " values as " + target->name());

  DataType cur = decoded;
  // 1./2. Times.
  if (is_time) {
    e.time_ = decoded.kind == DTypeKind::DateTime ? Time::DateTime : Time::TimeDelta;
    e.input_ns_ = datetime_unit_ns(decoded.unit) * decoded.scale;
    if (e.input_ns_ <= 0) fail(name, decoded.name() + " has no fixed length in nanoseconds");
    const nlohmann::json* units_entry = entry(encoding, "units");
    if ((!units_entry || !target) && !values)
      fail(name, "a time variable without units and dtype in its encoding needs its values to infer them");
    std::vector<std::int64_t> ns;
    if (values) ns = time_values_ns(*values, e.input_ns_, name);
    std::vector<std::int64_t> valid;
    for (auto v : ns)
      if (v != cf::kNaT) valid.push_back(v);
    std::string units;
    if (e.time_ == Time::DateTime) {
      std::string calendar = "proleptic_gregorian";
      if (const auto* c = entry(encoding, "calendar")) calendar = string_entry(*c, name, "calendar");
      if (!cf::is_cf_calendar(calendar)) fail(name, "unknown calendar '" + calendar + "'");
      e.calendar_ = calendar;
      e.standard_calendar_ = cf::is_standard_calendar(calendar);
      cf::CivilTime ref_fields;
      if (units_entry) {
        units = string_entry(*units_entry, name, "units");
        const auto parsed = cf::parse_time_units(units);
        if (!parsed) fail(name, "units '" + units + "' are not '<days|hours|...|nanoseconds> since <date>'");
        if (!e.standard_calendar_ && parsed->reference_offset_s)
          fail(name, "a reference date with a time zone needs a standard calendar, not '" + calendar + "'");
        units = parsed->unit + " since " + cf::format_reference_date(parsed->reference_ns, parsed->reference_offset_s);
        e.unit_ns_ = parsed->unit_ns;
        e.reference_ns_ = parsed->reference_ns;
        ref_fields = parsed->reference_local;
      } else {
        // xarray's infer_datetime_units: steps between consecutive valid values.
        e.reference_ns_ = valid.empty() ? 0 : valid.front();
        std::vector<std::int64_t> steps;
        for (std::size_t i = 1; i < valid.size(); ++i) {
          const __int128 d = static_cast<__int128>(valid[i]) - valid[i - 1];
          steps.push_back(static_cast<std::int64_t>(d % 86'400'000'000'000));  // divisibility is all that counts
        }
        const std::string unit = coarsest_unit(steps);
        e.unit_ns_ = *cf::time_unit_ns(unit);
        units = unit + " since " + cf::format_pandas_timestamp(e.reference_ns_);
        ref_fields = cf::civil_time(e.reference_ns_);
      }
      if (!e.standard_calendar_) {
        const auto day = cf::calendar_day(calendar, ref_fields.year, ref_fields.month, ref_fields.day);
        if (!day) fail(name, "the reference date of '" + units + "' does not exist in calendar '" + calendar + "'");
        e.reference_day_ = *day;
        e.reference_time_ns_ = ref_fields.time_of_day_ns;
      }
      set_attr(attrs, "units", units, name);
      set_attr(attrs, "calendar", calendar, name);
    } else {
      if (units_entry) {
        units = string_entry(*units_entry, name, "units");
        const auto unit = cf::time_unit_ns(units);
        if (!unit) fail(name, "timedelta units '" + units + "' are not one of days, hours, ..., nanoseconds");
        e.unit_ns_ = *unit;
      } else {
        units = coarsest_unit(valid);
        e.unit_ns_ = *cf::time_unit_ns(units);
      }
      set_attr(attrs, "units", units, name);
    }
    const cf::TimeReference ref = e.time_reference();
    cur = values && all_whole(ns, e.time_ == Time::DateTime ? &ref : nullptr, e.unit_ns_, name) ? DataType::int_(8)
                                                                                               : DataType::float_(8);
  } else if (entry(encoding, "units") || entry(encoding, "calendar")) {
    // xarray's to_zarr rejects them too ("unexpected encoding parameters"): a number's units
    // are an attribute.
    fail(name, "units/calendar in the encoding apply to datetime64/timedelta64 values, not " + decoded.name() +
                   "; put them in the attributes");
  }

  // 3. Scale and offset.
  const nlohmann::json* scale = entry(encoding, "scale_factor");
  const nlohmann::json* offset = entry(encoding, "add_offset");
  if (scale || offset) {
    if (!is_plain_number_type(cur)) fail(name, "scale_factor/add_offset apply to numbers, not " + cur.name());
    cur = scale_float_type(cur, offset != nullptr);
    if (offset) {
      e.has_offset_ = true;
      e.offset_ = number_entry(*offset, name, "add_offset");
      set_attr(attrs, "add_offset", *offset, name);
    }
    if (scale) {
      e.has_scale_ = true;
      e.scale_ = number_entry(*scale, name, "scale_factor");
      if (e.scale_ == 0) fail(name, "scale_factor must not be 0");
      set_attr(attrs, "scale_factor", *scale, name);
    }
  }

  // 4. Fill values, cast to the stored type.
  const DataType stored = target.value_or(cur);
  const nlohmann::json* fv = entry(encoding, "_FillValue");
  const nlohmann::json* mv = entry(encoding, "missing_value");
  if (!is_plain_number_type(stored)) {
    // Strings, complex numbers: the fill attributes are written as given; nothing to replace.
    if (fv) set_attr(attrs, "_FillValue", *fv, name);
    if (mv) set_attr(attrs, "missing_value", *mv, name);
  } else {
    nlohmann::json fill, missing;  // as written (null: none)
    if (fv) fill = cast_fill(*fv, stored, name, "_FillValue");
    if (mv) {
      // A list (several missing values) is written as a list; the first one fills.
      nlohmann::json written = nlohmann::json::array();
      for (const auto& m : mv->is_array() ? *mv : nlohmann::json::array({*mv}))
        written.push_back(cast_fill(m, stored, name, "missing_value"));
      if (written.empty()) fail(name, "missing_value is an empty list");
      missing = written.front();
      if (!fill.is_null() && !close_or_equal(*cf::json_number(fill), *cf::json_number(missing)))
        fail(name, "_FillValue " + fill.dump() + " and missing_value " + missing.dump() + " conflict");
      set_attr(attrs, "missing_value", mv->is_array() ? written : missing, name);
    }
    if (!fill.is_null()) set_attr(attrs, "_FillValue", fill, name);
    const nlohmann::json& nan_to = fill.is_null() ? missing : fill;
    if (!nan_to.is_null() && !std::isnan(*cf::json_number(nan_to))) e.fill_ = nan_to;
  }

  // 6./7. Default fill for floats; booleans as int8.
  e.stored_ = stored;
  if (stored.kind == DTypeKind::Float && !attrs.contains("_FillValue") && !encoding.contains("_FillValue"))
    attrs["_FillValue"] = "NaN";
  if (stored.kind == DTypeKind::Bool && !target && !attrs.contains("dtype")) {
    attrs["dtype"] = "bool";
    e.stored_ = DataType::int_(1);
  }
  // 8. Keys that only move.
  for (const char* key : kMovedKeys)
    if (const auto* v = entry(encoding, key)) set_attr(attrs, key, *v, name);
  e.mid_ = cur;
  return e;
}

cf::TimeReference CfEncoding::time_reference() const {
  return {standard_calendar_, calendar_, reference_ns_, reference_day_, reference_time_ns_};
}

std::optional<__int128> cf::ns_since_reference(const TimeReference& ref, std::int64_t ns) {
  if (ref.standard) return static_cast<__int128>(ns) - ref.ns;
  constexpr std::int64_t kUs = 1000;
  const std::int64_t us = ns / kUs - (ns % kUs < 0 ? 1 : 0);  // numpy's astype("M8[us]"): floor
  const CivilTime t = civil_time(us * kUs);
  const auto day = calendar_day(ref.calendar, t.year, t.month, t.day);
  if (!day) return std::nullopt;
  return static_cast<__int128>(*day - ref.day) * 86'400'000'000'000 + (t.time_of_day_ns - ref.time_of_day_ns);
}

nlohmann::json CfEncoding::encoding_of(const CfDecoding& decoding) {
  nlohmann::json enc = decoding.encoding();
  enc["dtype"] = decoding.stored_dtype().numpy_str();
  return enc;
}

std::pair<NDArray, nlohmann::json> CfEncoding::encode(const NDArray& values, const nlohmann::json& attrs,
                                                      const nlohmann::json& encoding, const std::string& name) {
  const CfEncoding plan = CfEncoding::plan(values.dtype, attrs, encoding, name, &values);
  return {plan.apply(values), plan.attrs()};
}

}  // namespace lazycube
