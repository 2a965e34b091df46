// CF decoding rules, one policy for every format (Zarr v2/v3, kerchunk references, NetCDF/HDF5 and
// GRIB through GDAL), following xarray (coding/variables.py, coding/times.py):
//   0. UnsignedIntegerCoder: `_Unsigned` moves to the encoding; "true" on signed integer
//      storage reads the bytes as the unsigned type of the same size ("false" on unsigned
//      storage: as the signed type), and the _FillValue is taken as a value of that type
//      (numpy's wrap-around, as xarray's unsigned_dtype.type(fill)). Everything below sees the
//      reinterpreted type. On non-integer storage the attribute is moved and ignored.
//   1. CFMaskCoder: missing_value and _FillValue move to the encoding; non-NaN fill values
//      mask to NaN (NaT for times). Unscaled integers promote: <= 2 bytes -> float32, else
//      float64 (xarray's maybe_promote).
//   2. CFScaleOffsetCoder: scale_factor/add_offset move to the encoding; x * scale then + offset.
//      The unpacked type is the type of the attributes (xarray >= 2024.02 _choose_float_dtype):
//      scale and offset of one float type -> that type (float64 for 32-bit integers); an offset
//      of another type, or a lone integer offset -> float64; a lone scale -> its type. A
//      packed variable with a float64 scale is float64 whichever path reads it. Masking a scaled
//      variable goes straight to that type. (xarray 2023.01 chose from the stored dtype alone:
//      int16 + float64 scale -> float32.)
//      Attribute types: JSON has no float32, so every path (Zarr and kerchunk .zattrs, GDAL and
//      HDF5 attributes, all carried as JSON) classifies a number the same way: a float32 when it
//      is exactly a float32 and spells shorter as one (0.009999999776482582 is float32(0.01),
//      what kerchunk, xarray's to_zarr and GDAL write for a float32 attribute); float64
//      otherwise (0.01, 0.5, integers). A float32 attribute whose value is also short as a
//      float64 (0.5f) therefore counts as float64 on every path alike.
//   3. CFTimedeltaCoder: units in {days, hours, ..., nanoseconds} -> timedelta64[ns].
//   4. CFDatetimeCoder: "<unit> since <date>" with a standard calendar -> datetime64[ns];
//      NaN -> NaT. Non-standard calendars (noleap, 360_day, ...) stay undecoded with units and
//      calendar kept in the attributes: xarray produces cftime objects, which have no
//      fixed-size representation here. The xarray engine (python/lazycube/xarray_backend.py)
//      hands exactly these variables to xarray's own CFDatetimeCoder, so engine="lazycube"
//      gives the cftime values engine="netcdf4"/"zarr" give.
//   5. Opt-in (OpenOptions::mask_valid_range, netCDF4-python's rule; xarray has none):
//      valid_range [min, max], else valid_min / valid_max, move to the encoding; stored values
//      outside them become NaN before scale/offset. The bounds are in stored units, cast to
//      the stored type. No range is derived from _FillValue.
// Strings: `_Encoding` decodes fixed-length bytes to text ('U' here; str objects through the
// xarray engine), and a string _FillValue marks masked elements (masks_strings(): the Python
// binding returns object arrays with NaN there, as xarray). Character arrays and CF coordinate
// attributes are decided for the whole dataset (dataset.cpp decode_dataset, cf_coordinates.cpp).
// Deviation: xarray turns masked booleans into object arrays; here those keep their dtype and
// only the fill attributes move to the encoding. xarray's boolean coding
// (int8 + attribute dtype="bool") is decoded by the Python backend (xarray_backend.py).
// Writing: the inverse of these rules is cf_encode.cpp (CfEncoding).
#include "lazycube/dataset/cf.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <span>
#include <string>
#include <type_traits>
#include <vector>
#include <nlohmann/json.hpp>

#include "cf_json.hpp"
#include "lazycube/dataset/cf_time.hpp"
#include "lazycube/error.hpp"
#include "util/element_cast.hpp"
#include "util/half.hpp"
#include "util/text.hpp"

namespace lazycube {

namespace {

bool is_real_numeric(const DataType& t) {
  return t.kind == DTypeKind::Int || t.kind == DTypeKind::UInt || t.kind == DTypeKind::Float;
}

namespace dtypes = detail::dtype_set;

// An element of a fixed-size numeric buffer as a double (exact except for |ints| > 2^53); NaN
// for a dtype that is not a number (datetime64, complex, strings).
double load_double(const std::byte* p, const DataType& t) {
  double v = std::numeric_limits<double>::quiet_NaN();
  detail::visit_dtype<dtypes::kBool | dtypes::kReal | dtypes::kHalf>(t, [&](auto tag) {
    v = detail::as_double(detail::load_element<typename decltype(tag)::type>(p, 0));
  });
  return v;
}

// Integer element as int64 (numpy astype(int64): uint64 wraps); 0 for a dtype that is not an
// integer, bool or time.
std::int64_t load_int(const std::byte* p, const DataType& t) {
  std::int64_t v = 0;
  detail::visit_dtype<dtypes::kBool | dtypes::kInteger | dtypes::kTime>(t, [&](auto tag) {
    v = static_cast<std::int64_t>(detail::load_element<typename decltype(tag)::type>(p, 0));
  });
  return v;
}

// Collects the numbers in a scalar-or-list attribute.
void collect_numbers(const nlohmann::json& v, std::vector<double>& out) {
  if (v.is_array()) {
    for (const auto& x : v) collect_numbers(x, out);
  } else if (auto d = cf::json_number(v)) {
    out.push_back(*d);
  }
}

// Moves attrs[key] into encoding[key]; returns the value (null when absent).
nlohmann::json move_attr(nlohmann::json& attrs, nlohmann::json& encoding, const char* key) {
  auto it = attrs.find(key);
  if (it == attrs.end()) return nullptr;
  nlohmann::json v = *it;
  attrs.erase(it);
  if (!v.is_null()) encoding[key] = v;
  return v;
}

std::optional<double> scalar_attr(const nlohmann::json& v) {
  if (v.is_array()) return v.empty() ? std::nullopt : cf::json_number(v.front());
  return cf::json_number(v);
}

// The float type a CF number attribute was written with (see the header comment): float32 when
// the value is exactly a float32 and spells shorter as one, float64 otherwise.
bool written_as_float32(const nlohmann::json& v) {
  const nlohmann::json& x = v.is_array() && !v.empty() ? v.front() : v;
  if (!x.is_number_float()) return false;
  const double d = x.get<double>();
  if (!std::isfinite(d)) return false;
  const auto f = static_cast<float>(d);
  if (static_cast<double>(f) != d) return false;
  char as_double[32], as_float[32];
  const auto nd = std::to_chars(as_double, as_double + sizeof as_double, d).ptr - as_double;
  const auto nf = std::to_chars(as_float, as_float + sizeof as_float, f).ptr - as_float;
  return nf < nd;
}

// The unpacked type of a variable with scale_factor and/or add_offset (null when absent):
// xarray's _choose_float_dtype given the attributes.
DataType scaled_dtype(const DataType& stored, const nlohmann::json& scale, const nlohmann::json& offset) {
  const bool has_scale = !scale.is_null(), has_offset = !offset.is_null();
  const bool scale32 = written_as_float32(scale), offset32 = written_as_float32(offset);
  if (has_scale && has_offset && scale32 == offset32) {
    if ((stored.kind == DTypeKind::Int || stored.kind == DTypeKind::UInt) && stored.itemsize == 4)
      return DataType::float_(8);
    return DataType::float_(scale32 ? 4 : 8);
  }
  if (has_offset) return DataType::float_(8);
  return DataType::float_(scale32 ? 4 : 8);
}

// xarray < 2024.02's _choose_float_dtype(dtype, has_offset), after CFMaskCoder promoted a
// masked integer (maybe_promote: <= 2 bytes -> float32, else float64).
DataType stored_rule_scaled_dtype(const DataType& view, bool has_offset, bool masked) {
  DataType in = view;
  if (masked && view.kind != DTypeKind::Float) in = DataType::float_(view.itemsize <= 2 ? 4 : 8);
  if (in.kind == DTypeKind::Float && in.itemsize <= 4) return DataType::float_(4);
  if (in.kind != DTypeKind::Float && in.itemsize <= 2 && !has_offset) return DataType::float_(4);
  return DataType::float_(8);
}

// The fill value bytes as JSON, for the encoding.
nlohmann::json fill_bytes_json(const Buffer& bytes, const DataType& t) {
  if (bytes.size() != t.itemsize) return nullptr;
  if (t.kind == DTypeKind::Int || t.kind == DTypeKind::DateTime || t.kind == DTypeKind::TimeDelta)
    return load_int(bytes.data(), t.kind == DTypeKind::Int ? t : DataType::int_(8));
  if (t.kind == DTypeKind::UInt) return static_cast<std::uint64_t>(load_int(bytes.data(), t));
  if (t.kind == DTypeKind::Bool) return bytes.data()[0] != std::byte{0};
  if (t.kind == DTypeKind::Float) return cf::float_json(load_double(bytes.data(), t));
  if (t.kind == DTypeKind::Complex) {
    const DataType half = DataType::float_(t.itemsize / 2);
    return nlohmann::json::array(
        {load_double(bytes.data(), half), load_double(bytes.data() + t.itemsize / 2, half)});
  }
  return nullptr;
}

void store_float(std::byte* p, const DataType& t, double v) {
  detail::visit_dtype<dtypes::kHalf | dtypes::kFloat>(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float16>) detail::store_element(p, 0, to_float16(static_cast<float>(v)));
    else detail::store_element(p, 0, static_cast<T>(v));
  });
}

// The mask and scale steps for one value, computed in double/float exactly as xarray's coders
// do; shared by the generic element loop and the typed loops below.
struct MaskScale {
  bool mask = false, mask_f32 = false, scale = false, scale_f32 = false;
  bool has_scale = false, has_offset = false;
  bool range = false;               // valid range: stored x outside [vmin, vmax] -> NaN
  double vmin = 0, vmax = 0;
  std::span<const float> fills32;   // views of the plan's fill values: nothing copied per call
  std::span<const double> fills64;
  float scale32 = 1, offset32 = 0;
  double scale64 = 1, offset64 = 0;

  double operator()(double x) const {
    if (range && (x < vmin || x > vmax)) x = std::numeric_limits<double>::quiet_NaN();
    if (mask) {
      bool hit = false;
      if (mask_f32) {
        const auto xf = static_cast<float>(x);
        for (float f : fills32) hit = hit || xf == f;
      } else {
        for (double f : fills64) hit = hit || x == f;
      }
      if (hit) x = std::numeric_limits<double>::quiet_NaN();
    }
    if (scale) {
      if (scale_f32) {
        auto y = static_cast<float>(x);
        if (has_scale) y *= scale32;
        if (has_offset) y += offset32;
        x = y;
      } else {
        if (has_scale) x *= scale64;
        if (has_offset) x += offset64;
      }
    }
    return x;
  }
};

// Packed integers (and masked floats) to float32/float64: the common decode of training data,
// as a loop over typed values instead of the generic per-element dtype dispatch (a warm batch
// epoch of the sample's packed msl went from 13 to 6 ms, as fast as its float32 t2m).
// The type fill values compare in (MaskScale::mask_f32): one that holds every stored value.
template <class In>
using MaskType = std::conditional_t<(std::is_integral_v<In> && sizeof(In) <= 2) || std::is_same_v<In, float>, float, double>;

// The same steps with everything known at compile time and at most one fill value: a branch-free
// loop the compiler keeps in registers (decoded reads run it on every chunk as it is decoded,
// so it has to keep up with decompression). Same arithmetic as MaskScale, value for value.
// The attribute lets GCC vectorize it at -O2 (RelWithDebInfo) too: -O2's "very cheap" cost
// model refuses loops of unknown length (4x slower here). Clang has no such attribute (and
// vectorizes at -O2).
#if defined(__GNUC__) && !defined(__clang__)
#define LAZYCUBE_VECTORIZE [[gnu::optimize("-fvect-cost-model=dynamic")]]
#else
#define LAZYCUBE_VECTORIZE
#endif
template <class In, class Out, bool Mask, bool Scale, bool Offset>
LAZYCUBE_VECTORIZE void mask_scale_loop(const std::byte* raw, std::uint64_t count, std::byte* out, const MaskScale& steps) {
  using M = MaskType<In>;
  const M fill = Mask ? static_cast<M>(steps.fills64.front()) : M{};
  const Out scale = static_cast<Out>(steps.scale64), offset = static_cast<Out>(steps.offset64);
  const Out nan = std::numeric_limits<Out>::quiet_NaN();
  for (std::uint64_t i = 0; i < count; ++i) {
    In v;
    std::memcpy(&v, raw + i * sizeof(In), sizeof(In));
    const double x = static_cast<double>(v);
    Out y = static_cast<Out>(x);
    if constexpr (Scale) y *= scale;
    if constexpr (Offset) y += offset;
    if constexpr (Mask) y = static_cast<M>(x) == fill ? nan : y;
    std::memcpy(out + i * sizeof(Out), &y, sizeof(Out));
  }
}

template <class In, class Out>
bool mask_scale_fast(const std::byte* raw, std::uint64_t count, std::byte* out, const MaskScale& steps) {
  if (steps.range) return false;  // opt-in valid range: the general per-element steps
  if (steps.mask && (steps.fills64.size() != 1 || steps.mask_f32 != std::is_same_v<MaskType<In>, float>)) return false;
  if (steps.scale && steps.scale_f32 != std::is_same_v<Out, float>) return false;
  const bool scale = steps.scale && steps.has_scale, offset = steps.scale && steps.has_offset;
  switch ((steps.mask ? 4 : 0) | (scale ? 2 : 0) | (offset ? 1 : 0)) {
    case 0: mask_scale_loop<In, Out, false, false, false>(raw, count, out, steps); break;
    case 1: mask_scale_loop<In, Out, false, false, true>(raw, count, out, steps); break;
    case 2: mask_scale_loop<In, Out, false, true, false>(raw, count, out, steps); break;
    case 3: mask_scale_loop<In, Out, false, true, true>(raw, count, out, steps); break;
    case 4: mask_scale_loop<In, Out, true, false, false>(raw, count, out, steps); break;
    case 5: mask_scale_loop<In, Out, true, false, true>(raw, count, out, steps); break;
    case 6: mask_scale_loop<In, Out, true, true, false>(raw, count, out, steps); break;
    default: mask_scale_loop<In, Out, true, true, true>(raw, count, out, steps); break;
  }
  return true;
}

template <class In, class Out>
void decode_numbers(const std::byte* raw, std::uint64_t count, std::byte* out, const MaskScale& steps) {
  if (mask_scale_fast<In, Out>(raw, count, out, steps)) return;
  for (std::uint64_t i = 0; i < count; ++i) {
    In v;
    std::memcpy(&v, raw + i * sizeof(In), sizeof(In));
    const auto y = static_cast<Out>(steps(static_cast<double>(v)));
    std::memcpy(out + i * sizeof(Out), &y, sizeof(Out));
  }
}

// Integers and float32/64 (float16 and bool take the generic element loop).
template <class Out>
bool decode_numbers_to(const DataType& stored, const std::byte* raw, std::uint64_t count, std::byte* out,
                       const MaskScale& steps) {
  return detail::visit_dtype<dtypes::kReal>(stored, [&](auto tag) {
    decode_numbers<typename decltype(tag)::type, Out>(raw, count, out, steps);
  });
}

// pandas.to_timedelta(float, unit): whole part and the fraction (rounded to the unit's
// decimal precision) converted separately.
// nullopt when the value does not fit timedelta64[ns].
std::optional<std::int64_t> float_to_timedelta_ns(double x, std::int64_t unit_ns) {
  if (std::isnan(x)) return cf::kNaT;
  if (!(std::fabs(x) < 0x1p63)) return std::nullopt;
  const auto base = static_cast<std::int64_t>(x);
  double frac = x - static_cast<double>(base);
  const int precision = static_cast<int>(std::log10(static_cast<double>(unit_ns)));
  if (precision > 0) {
    const double p10 = std::pow(10.0, precision);
    frac = std::nearbyint(frac * p10) / p10;
  }
  std::int64_t whole = 0, ns = 0;
  if (__builtin_mul_overflow(base, unit_ns, &whole) ||
      __builtin_add_overflow(whole, static_cast<std::int64_t>(frac * static_cast<double>(unit_ns)), &ns))
    return std::nullopt;
  return ns;
}


// A valid_range / valid_min / valid_max bound as a number (a lone number or a 1-element list);
// anything else is a MetadataError naming the variable and attribute.
double range_bound(const nlohmann::json& v, const std::string& name, const char* key) {
  const nlohmann::json& x = v.is_array() && v.size() == 1 ? v.front() : v;
  if (!x.is_number())
    throw MetadataError("variable '" + name + "': attribute " + key + " must be a number, got " + v.dump());
  return x.get<double>();
}

// An integer fill value as a value of integer type `t` (numpy's t.type(v) for an out-of-range
// Python int wraps modulo 2^bits). Non-integers are returned unchanged.
double wrap_integer(double v, const DataType& t) {
  if (!std::isfinite(v) || v != std::trunc(v) || std::fabs(v) >= 0x1p63) return v;
  const auto bits = static_cast<unsigned>(t.itemsize * 8);
  auto u = static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
  if (bits < 64) u &= (std::uint64_t{1} << bits) - 1;
  if (t.kind == DTypeKind::UInt) return static_cast<double>(u);
  if (bits < 64 && (u >> (bits - 1)) != 0) return static_cast<double>(static_cast<std::int64_t>(u) - (std::int64_t{1} << bits));
  return static_cast<double>(static_cast<std::int64_t>(u));
}

// A string _FillValue attribute as `t`'s fixed-size bytes (NUL padded; UTF-32 for 'U'); empty
// when it does not fit.
Buffer string_fill_bytes(const nlohmann::json& v, const DataType& t) {
  std::string text;
  if (v.is_binary()) text.assign(v.get_binary().begin(), v.get_binary().end());
  else text = v.get<std::string>();
  Buffer out(t.itemsize);
  std::memset(out.data(), 0, out.size());
  if (t.kind == DTypeKind::Bytes) {
    if (text.size() > t.itemsize) return Buffer();
    std::memcpy(out.data(), text.data(), text.size());
    return out;
  }
  const std::u32string chars = utf8_to_utf32(text);
  if (chars.size() * 4 > t.itemsize) return Buffer();
  std::memcpy(out.data(), chars.data(), chars.size() * 4);
  return out;
}

// A fixed-size string fill value for the encoding, as numpy shows it: bytes (binary JSON) or
// text, trailing NULs dropped.
nlohmann::json string_fill_json(const Buffer& fill, const DataType& t) {
  if (t.kind == DTypeKind::Bytes) {
    std::size_t n = fill.size();
    while (n > 0 && fill.data()[n - 1] == std::byte{0}) --n;
    const auto* p = reinterpret_cast<const std::uint8_t*>(fill.data());
    return nlohmann::json::binary(std::vector<std::uint8_t>(p, p + n));
  }
  std::u32string chars(fill.size() / 4, U'\0');
  std::memcpy(chars.data(), fill.data(), chars.size() * 4);
  while (!chars.empty() && chars.back() == U'\0') chars.pop_back();
  return utf32_to_utf8(chars);
}

// A bound cast to the stored type, as netCDF4-python compares them (numpy.array(bound, dtype)).
double as_stored(double v, const DataType& t) {
  if (t.kind == DTypeKind::Float) return t.itemsize == 4 ? static_cast<double>(static_cast<float>(v)) : v;
  return std::isfinite(v) ? std::trunc(v) : v;
}

}  // namespace

nlohmann::json fill_value_json(const Buffer& bytes, const DataType& t) {
  if (t.kind == DTypeKind::Bytes || t.kind == DTypeKind::Unicode)
    return bytes.size() == t.itemsize ? string_fill_json(bytes, t) : nlohmann::json();
  return fill_bytes_json(bytes, t);
}

CfDecoding CfDecoding::identity(const DataType& stored, nlohmann::json attrs) {
  CfDecoding d;
  d.stored_ = stored;
  d.decoded_ = stored;
  d.view_ = stored;
  d.pre_time_ = stored;
  d.attrs_ = attrs.is_object() ? std::move(attrs) : nlohmann::json::object();
  return d;
}

CfDecoding CfDecoding::plan(const DataType& stored, const nlohmann::json& attrs_in,
                            const CfInputs& inputs) {
  CfDecoding d = identity(stored, attrs_in);
  d.name_ = inputs.name;
  auto& attrs = d.attrs_;
  auto& enc = d.encoding_;
  DataType cur = stored;

  // CF coordinate attributes: to the encoding when the dataset decodes them (cf_coordinates.hpp).
  for (const auto& key : inputs.coordinate_keys.value_or(std::vector<std::string>{"coordinates"}))
    move_attr(attrs, enc, key.c_str());
  for (const auto& key : inputs.dropped_keys) attrs.erase(key);
  if (!inputs.char_dim_name.empty()) {
    enc["char_dim_name"] = inputs.char_dim_name;
    enc["char_dim_chunk"] = inputs.char_dim_chunk;
  }

  // 0. _Unsigned: reinterpret the integer storage (two's complement: the same bytes).
  if (auto u = move_attr(attrs, enc, "_Unsigned"); u.is_string() || u.is_boolean()) {
    const std::string flag = u.is_string() ? u.get<std::string>() : (u.get<bool>() ? "true" : "false");
    if (stored.kind == DTypeKind::Int && flag == "true") d.view_ = DataType::uint(stored.itemsize);
    else if (stored.kind == DTypeKind::UInt && flag == "false") d.view_ = DataType::int_(stored.itemsize);
    if (d.view_.kind != stored.kind) {
      d.steps_ |= kUnsigned;
      cur = d.view_;
    }
  }
  const DataType& view = d.view_;

  // The unpacked type when scale_factor/add_offset apply (masking a scaled variable goes
  // straight to it).
  const auto attr_or_null = [&](const char* key) {
    auto it = attrs.find(key);
    return it == attrs.end() ? nlohmann::json() : *it;
  };
  const nlohmann::json scale_attr = attr_or_null("scale_factor"), offset_attr = attr_or_null("add_offset");
  const bool scaled = (is_real_numeric(view) || view.kind == DTypeKind::Bool) &&
                      (attrs.contains("scale_factor") || attrs.contains("add_offset"));
  if (inputs.scale_dtype_rule != "attributes" && inputs.scale_dtype_rule != "stored")
    throw UsageError("scale_dtype_rule takes \"attributes\" or \"stored\", not \"" + inputs.scale_dtype_rule + "\"");
  DataType unpacked = scaled ? scaled_dtype(view, scale_attr, offset_attr) : view;

  // Strings (xarray's EncodedStringCoder, then CFMaskCoder): `_Encoding` decodes fixed-length
  // bytes to text (numpy 'U'; a bytes _FillValue then equals no value); otherwise a _FillValue of
  // fixed-length bytes or text masks (string_fill(): the Python binding turns such a variable
  // into an object array with NaN where masked, as xarray's maybe_promote does).
  // Text that arrives decoded (GDAL shows NetCDF character arrays as strings): `_Encoding` has
  // done its work, as in xarray's EncodedStringCoder.
  if (stored.kind == DTypeKind::String && inputs.decode_text) move_attr(attrs, enc, "_Encoding");
  if (stored.kind == DTypeKind::Bytes || stored.kind == DTypeKind::Unicode) {
    const nlohmann::json text = inputs.decode_text ? move_attr(attrs, enc, "_Encoding") : nlohmann::json();
    if (stored.kind == DTypeKind::Bytes && text.is_string()) {
      std::string e = text.get<std::string>();
      for (auto& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (e == "utf-8" || e == "utf8" || e == "ascii" || e == "us-ascii" || e == "latin-1" ||
          e == "latin1" || e == "iso-8859-1") {
        d.text_encoding_ = e;
        d.steps_ |= kText;
        cur = DataType::unicode(stored.itemsize);
      } else {
        attrs["_Encoding"] = text;  // undecoded bytes keep saying how to decode them
        enc.erase("_Encoding");
      }
    }
    move_attr(attrs, enc, "missing_value");
    const nlohmann::json fill_attr = move_attr(attrs, enc, "_FillValue");
    Buffer fill;
    if (inputs.array_fill_bytes && inputs.array_fill_bytes->size() == stored.itemsize) {
      fill = Buffer::copy_of(inputs.array_fill_bytes->view());
    } else if (fill_attr.is_string() || fill_attr.is_binary()) {
      fill = string_fill_bytes(fill_attr, stored);
    }
    if (fill.size() == stored.itemsize && stored.itemsize > 0) {
      enc["_FillValue"] = string_fill_json(fill, stored);
      if (!(d.steps_ & kText)) {
        d.string_fill_ = std::move(fill);
        d.steps_ |= kStringMask;
      }
    }
    d.decoded_ = cur;
    d.pre_time_ = cur;
    return d;
  }

  // 1. Mask.
  std::vector<double> fills;
  collect_numbers(move_attr(attrs, enc, "missing_value"), fills);
  const nlohmann::json fill_attr = move_attr(attrs, enc, "_FillValue");
  if (inputs.array_fill_bytes && inputs.array_fill_bytes->size() == view.itemsize &&
      view.itemsize > 0) {
    const Buffer& fb = *inputs.array_fill_bytes;
    enc["_FillValue"] = fill_bytes_json(fb, view);
    if (view.kind == DTypeKind::Complex) {
      d.complex_fill_ = fb;
    } else if (view.kind == DTypeKind::DateTime || view.kind == DTypeKind::TimeDelta) {
      const std::int64_t v = load_int(fb.data(), DataType::int_(8));
      if (v != cf::kNaT) d.fill_ints_.push_back(v);
    } else if (is_real_numeric(view)) {
      fills.push_back(load_double(fb.data(), view));
    }
  } else {
    const std::size_t first = fills.size();
    collect_numbers(fill_attr, fills);
    // _Unsigned: the _FillValue as a value of the reinterpreted type (numpy wraps it).
    if (d.view_.kind != stored.kind)
      for (std::size_t i = first; i < fills.size(); ++i) fills[i] = wrap_integer(fills[i], d.view_);
    if (d.view_.kind != stored.kind && fills.size() > first && std::isfinite(fills[first])) {
      if (d.view_.kind == DTypeKind::UInt) enc["_FillValue"] = static_cast<std::uint64_t>(fills[first]);
      else enc["_FillValue"] = static_cast<std::int64_t>(fills[first]);
    }
  }
  for (double f : fills)
    if (!std::isnan(f)) d.fill_values_.push_back(f);
  if (scaled && inputs.scale_dtype_rule == "stored")
    unpacked = stored_rule_scaled_dtype(view, !offset_attr.is_null(), !d.fill_values_.empty() || !d.complex_fill_.empty());
  if (view.kind == DTypeKind::DateTime || view.kind == DTypeKind::TimeDelta) {
    for (double f : d.fill_values_)  // a fill value past int64 equals no stored value: it masks nothing
      if (f >= -0x1p63 && f < 0x1p63) d.fill_ints_.push_back(static_cast<std::int64_t>(f));
    d.fill_values_.clear();
    if (!d.fill_ints_.empty()) d.steps_ |= kMask;
  } else if (view.kind == DTypeKind::Complex) {
    if (!d.complex_fill_.empty()) d.steps_ |= kMask;
  } else if (is_real_numeric(view) && !d.fill_values_.empty()) {
    d.steps_ |= kMask;
    for (double f : d.fill_values_) d.fill_values32_.push_back(static_cast<float>(f));
    // Fill values compare in a type that holds every view value exactly.
    d.mask_precision_ = view.itemsize <= (view.kind == DTypeKind::Float ? 4 : 2) ? Precision::F32 : Precision::F64;
    if (scaled) cur = unpacked;
    else if (view.kind != DTypeKind::Float) cur = DataType::float_(view.itemsize <= 2 ? 4 : 8);
  }

  // 1b. Valid range (opt-in), compared with the view values.
  if (inputs.mask_valid_range && is_real_numeric(view)) {
    const nlohmann::json range = move_attr(attrs, enc, "valid_range");
    const nlohmann::json vmin = move_attr(attrs, enc, "valid_min");
    const nlohmann::json vmax = move_attr(attrs, enc, "valid_max");
    bool any = false;
    if (!range.is_null()) {
      if (!range.is_array() || range.size() != 2 || !range[0].is_number() || !range[1].is_number())
        throw MetadataError("variable '" + inputs.name + "': attribute valid_range must be 2 numbers [min, max], got " +
                            range.dump());
      d.valid_min_ = range[0].get<double>();
      d.valid_max_ = range[1].get<double>();
      any = true;
    }
    // netCDF4-python: valid_range wins over valid_min / valid_max (still checked, then unused).
    if (!vmin.is_null()) {
      const double b = range_bound(vmin, inputs.name, "valid_min");
      if (range.is_null()) d.valid_min_ = b;
      any = true;
    }
    if (!vmax.is_null()) {
      const double b = range_bound(vmax, inputs.name, "valid_max");
      if (range.is_null()) d.valid_max_ = b;
      any = true;
    }
    if (any) {
      d.valid_min_ = as_stored(d.valid_min_, view);
      d.valid_max_ = as_stored(d.valid_max_, view);
      d.steps_ |= kValidRange;
      if (scaled) cur = unpacked;
      else if (view.kind != DTypeKind::Float) cur = DataType::float_(view.itemsize <= 2 ? 4 : 8);
    }
  }

  // 2. Scale and offset.
  if (scaled) {
    d.scale_factor_ = scalar_attr(move_attr(attrs, enc, "scale_factor"));
    d.add_offset_ = scalar_attr(move_attr(attrs, enc, "add_offset"));
    cur = unpacked;
    d.scale_precision_ = cur.itemsize == 8 ? Precision::F64 : Precision::F32;
    d.steps_ |= kScale;
  }

  // 3./4. Times (only from plain numbers).
  d.pre_time_ = cur;
  auto units_it = attrs.find("units");
  if (is_real_numeric(cur) && units_it != attrs.end() && units_it->is_string()) {
    const std::string units = units_it->get<std::string>();
    if (cf::is_time_unit(units)) {
      d.unit_ns_ = *cf::time_unit_ns(units);
      d.time_units_ = units;
      move_attr(attrs, enc, "units");
      cur = DataType::timedelta("ns");
      d.steps_ |= kTimeDelta;
    } else if (units.find("since") != std::string::npos) {
      std::string calendar = "standard";
      if (auto c = attrs.find("calendar"); c != attrs.end() && c->is_string())
        calendar = c->get<std::string>();
      const auto parsed = cf::parse_time_units(units);
      if (parsed && cf::is_standard_calendar(calendar)) {
        d.unit_ns_ = parsed->unit_ns;
        d.reference_s_ = parsed->reference_s;
        d.reference_frac_ns_ = parsed->reference_frac_ns;
        d.time_units_ = units;
        move_attr(attrs, enc, "units");
        move_attr(attrs, enc, "calendar");
        const std::string& u = inputs.datetime_unit;
        if (u != "s" && u != "ms" && u != "us" && u != "ns")
          throw UsageError("variable '" + inputs.name + "': datetime unit '" + u + "' is not one of s, ms, us, ns");
        d.datetime_unit_ns_ = u == "s" ? 1'000'000'000 : u == "ms" ? 1'000'000 : u == "us" ? 1'000 : 1;
        cur = DataType::datetime(inputs.datetime_unit);
        d.steps_ |= kDateTime;
      }
    }
  }
  d.decoded_ = cur;
  return d;
}

NDArray CfDecoding::apply(const NDArray& raw) const {
  if (is_identity()) return raw;
  NDArray out;
  out.dtype = decoded_;
  out.shape = raw.shape;
  out.data.resize(out.size() * decoded_.itemsize);
  apply(raw.data.view(), raw.size(), out.data.span());
  return out;
}

void CfDecoding::apply(ByteView raw, std::uint64_t count, MutableByteView out) const {
  if (raw.size() != count * stored_.itemsize || out.size() != count * decoded_.itemsize)
    throw UsageError("CF decoding: buffer sizes do not match " + std::to_string(count) +
                     " elements of " + stored_.name() + " -> " + decoded_.name());
  convert(raw.data(), count, out.data());
}

void CfDecoding::convert(const std::byte* raw_data, std::uint64_t count, std::byte* out_data) const {
  const ByteView raw(raw_data, count * stored_.itemsize);
  const MutableByteView out(out_data, count * decoded_.itemsize);
  if (is_identity() || steps_ == kUnsigned) {  // _Unsigned alone: the same bytes, read as view_
    if (!raw.empty()) std::memcpy(out.data(), raw.data(), raw.size());
    return;
  }
  const std::size_t in_size = stored_.itemsize;
  const std::size_t out_size = decoded_.itemsize;

  if (stored_.kind == DTypeKind::Bytes || stored_.kind == DTypeKind::Unicode) {
    if (steps_ & kText) {
      decode_text(raw_data, count, out_data);
    } else if (!raw.empty()) {  // a string mask is applied where values become objects
      std::memcpy(out.data(), raw.data(), raw.size());
    }
    return;
  }
  if (stored_.kind == DTypeKind::Complex) {
    if (!raw.empty()) std::memcpy(out.data(), raw.data(), raw.size());
    const DataType part = DataType::float_(in_size / 2);
    for (std::uint64_t i = 0; i < count; ++i) {
      std::byte* p = out.data() + i * in_size;
      if (std::memcmp(p, complex_fill_.data(), in_size) == 0) {
        store_float(p, part, std::numeric_limits<double>::quiet_NaN());
        store_float(p + in_size / 2, part, std::numeric_limits<double>::quiet_NaN());
      }
    }
    return;
  }
  if (stored_.kind == DTypeKind::DateTime || stored_.kind == DTypeKind::TimeDelta) {
    if (!raw.empty()) std::memcpy(out.data(), raw.data(), raw.size());
    for (std::uint64_t i = 0; i < count; ++i) {
      std::int64_t v;
      std::memcpy(&v, out.data() + i * 8, 8);
      for (auto f : fill_ints_)
        if (v == f) v = cf::kNaT;
      std::memcpy(out.data() + i * 8, &v, 8);
    }
    return;
  }

  const bool to_datetime = (steps_ & kDateTime) != 0;
  const bool to_timedelta = (steps_ & kTimeDelta) != 0;
  MaskScale steps;
  steps.mask = (steps_ & kMask) != 0;
  steps.mask_f32 = mask_precision_ == Precision::F32;
  steps.scale = (steps_ & kScale) != 0;
  steps.scale_f32 = scale_precision_ == Precision::F32;
  steps.has_scale = scale_factor_.has_value();
  steps.has_offset = add_offset_.has_value();
  steps.scale64 = scale_factor_.value_or(1.0);
  steps.offset64 = add_offset_.value_or(0.0);
  steps.scale32 = static_cast<float>(steps.scale64);
  steps.offset32 = static_cast<float>(steps.offset64);
  steps.fills64 = fill_values_;
  steps.fills32 = fill_values32_;
  steps.range = (steps_ & kValidRange) != 0;
  steps.vmin = valid_min_;
  steps.vmax = valid_max_;
  if (!to_datetime && !to_timedelta) {
    bool done = false;
    detail::visit_dtype<dtypes::kFloat>(decoded_, [&](auto tag) {
      done = decode_numbers_to<typename decltype(tag)::type>(view_, raw.data(), count, out.data(), steps);
    });
    if (done) return;
  }
  const bool integer_times = !steps.mask && !steps.range && !steps.scale && pre_time_.kind != DTypeKind::Float;
  const bool time_f32 = pre_time_.kind == DTypeKind::Float && pre_time_.itemsize == 4;

  // Times in 128 bits: the reference may lie outside int64 ns (years before 1678) while the
  // times themselves fit.
  const __int128 reference = static_cast<__int128>(reference_s_) * 1'000'000'000 + reference_frac_ns_;
  // ns -> the decoded unit (floor division: datetime64 counts whole steps), checked against int64.
  const __int128 per_step = datetime_unit_ns_;
  const auto fit_ns = [this, per_step, to_datetime](__int128 ns, double value) {
    if (to_datetime && per_step != 1) {
      __int128 q = ns / per_step;
      if (ns % per_step != 0 && ns < 0) --q;
      ns = q;
    }
    if (ns < std::numeric_limits<std::int64_t>::min() || ns > std::numeric_limits<std::int64_t>::max())
      time_out_of_range(value);
    return static_cast<std::int64_t>(ns);
  };
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::byte* p = raw.data() + i * in_size;
    std::byte* q = out.data() + i * out_size;
    if ((to_datetime || to_timedelta) && integer_times) {
      const std::int64_t v = load_int(p, view_);
      const std::int64_t ns = fit_ns(static_cast<__int128>(v) * unit_ns_ + (to_datetime ? reference : 0), v);
      std::memcpy(q, &ns, 8);
      continue;
    }
    const double x = steps(load_double(p, view_));
    if (to_datetime) {
      std::int64_t ns = cf::kNaT;
      if (!std::isnan(x)) {
        const double prod = time_f32 ? static_cast<double>(static_cast<float>(x) *
                                                           static_cast<float>(unit_ns_))
                                     : x * static_cast<double>(unit_ns_);
        if (!(std::fabs(prod) < 0x1p100)) time_out_of_range(x);
        ns = fit_ns(static_cast<__int128>(prod) + reference, x);
      }
      std::memcpy(q, &ns, 8);
    } else if (to_timedelta) {
      const auto ns = float_to_timedelta_ns(x, unit_ns_);
      if (!ns) time_out_of_range(x);
      std::memcpy(q, &*ns, 8);
    } else {
      store_float(q, decoded_, x);
    }
  }
}

void CfDecoding::decode_text(const std::byte* raw, std::uint64_t count, std::byte* out) const {
  const std::size_t n = stored_.itemsize;
  const bool utf8 = text_encoding_ == "utf-8" || text_encoding_ == "utf8";
  const bool ascii = text_encoding_ == "ascii" || text_encoding_ == "us-ascii";
  std::memset(out, 0, count * decoded_.itemsize);
  for (std::uint64_t i = 0; i < count; ++i) {
    const auto* p = reinterpret_cast<const char*>(raw + i * n);
    std::size_t len = n;
    while (len > 0 && p[len - 1] == '\0') --len;  // numpy drops trailing NULs of 'S' values
    const std::string_view bytes(p, len);
    std::u32string chars;
    if (utf8) {
      chars = utf8_to_utf32(bytes);
      if (utf32_to_utf8(chars, false) != bytes)  // strict, as Python's bytes.decode
        throw CodecError("variable '" + name_ + "': element " + std::to_string(i) +
                         " of the selection is not valid UTF-8 (_Encoding " + text_encoding_ + ")");
    } else {
      for (unsigned char c : bytes) {
        if (ascii && c >= 0x80)
          throw CodecError("variable '" + name_ + "': element " + std::to_string(i) +
                           " of the selection is not ASCII (_Encoding " + text_encoding_ + ")");
        chars.push_back(c);
      }
    }
    std::memcpy(out + i * decoded_.itemsize, chars.data(), chars.size() * 4);
  }
}

bool CfDecoding::is_string_fill(const std::byte* item) const {
  return (steps_ & kStringMask) && std::memcmp(item, string_fill_.data(), string_fill_.size()) == 0;
}

void CfDecoding::time_out_of_range(double value) const {
  // The dataset picks a coarser datetime64 unit when the first or last time needs one (as
  // xarray picks cftime from them); a time between them outside the unit's range lands here.
  std::ostringstream v;
  v << value;
  const bool ns = decoded_.unit == "ns";
  throw CodecError("variable '" + name_ + "': the time " + v.str() + " '" + time_units_ +
                   "' lies outside what " + decoded_.name() + " can hold" +
                   (ns ? " (years 1678 to 2262)" : "") + "; open it with decode_times=False to read the numbers");
}

}  // namespace lazycube
