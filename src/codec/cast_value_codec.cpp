// v3 `cast_value` (zarr-extensions registry): converts each element's numerical value to
// `data_type` on encode and back to the array's type on decode. Per element, in the spec's
// order: the `scalar_map` entry for the value (NaN keys match any NaN, other keys the exact
// bits); else the value itself when the target represents it exactly; else the value rounded
// by `rounding` (nearest-even, towards-zero, towards-positive, towards-negative, nearest-away)
// and, outside the target's range, handled by `out_of_range` (clamp: to the type's bounds, or
// ±Infinity for floats; wrap: modulo 2^N, integer targets only; absent: an error). NaN and
// ±Infinity propagate between float types and are an error for integer targets unless mapped.
// Signed zero is kept. Every failure is a CodecError naming the value and both types.
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "util/element_cast.hpp"
#include "v3_scalar.hpp"

namespace lazycube::codec::detail {
namespace {

using lazycube::detail::load_element;
using lazycube::detail::store_element;

enum class CastRounding { NearestEven, TowardsZero, TowardsPositive, TowardsNegative, NearestAway };
enum class CastRange { Error, Clamp, Wrap };

struct CastMode {
  CastRounding rounding = CastRounding::NearestEven;
  CastRange range = CastRange::Error;
};

// Precision (significand bits), smallest normal exponent and largest finite value of a float
// target.
template <class T>
struct CastFloatFormat;
template <>
struct CastFloatFormat<float16> {
  static constexpr int digits = 11, min_exp = -14;
  static constexpr double max = 65504.0;
};
template <>
struct CastFloatFormat<float> {
  static constexpr int digits = 24, min_exp = -126;
  static constexpr double max = std::numeric_limits<float>::max();
};
template <>
struct CastFloatFormat<double> {
  static constexpr int digits = 53, min_exp = -1022;
  static constexpr double max = std::numeric_limits<double>::max();
};

// Between two adjacent candidates of a magnitude (lower, upper): whether `mode` picks the upper
// one. `cmp` is the sign of (distance to lower) - (distance to upper).
bool cast_pick_upper(CastRounding mode, bool negative, int cmp, bool lower_even) {
  switch (mode) {
    case CastRounding::NearestEven: return cmp > 0 || (cmp == 0 && !lower_even);
    case CastRounding::NearestAway: return cmp >= 0;
    case CastRounding::TowardsZero: return false;
    case CastRounding::TowardsPositive: return !negative;
    case CastRounding::TowardsNegative: return negative;
  }
  return false;
}

// A finite magnitude m > 0 rounded to a float format of `digits` bits whose exponent is
// unbounded above (the caller checks the range).
double cast_round_magnitude(double m, int digits, int min_exp, CastRounding mode, bool negative) {
  int e = 0;
  (void)std::frexp(m, &e);  // m = f * 2^e, f in [0.5, 1)
  const double q = std::ldexp(1.0, std::max(e - 1, min_exp) - (digits - 1));
  const double k = std::floor(m / q);
  const double lower = k * q;
  if (lower == m) return m;
  const double upper = lower + q, below = m - lower, above = upper - m;
  const int cmp = below < above ? -1 : below > above ? 1 : 0;
  return cast_pick_upper(mode, negative, cmp, std::fmod(k, 2.0) == 0) ? upper : lower;
}

// An integer magnitude rounded to `digits` significant bits.
unsigned __int128 cast_round_integer(unsigned __int128 m, int digits, CastRounding mode, bool negative) {
  int bits = 0;
  for (unsigned __int128 t = m; t != 0; t >>= 1) ++bits;
  if (bits <= digits) return m;
  const int shift = bits - digits;
  const unsigned __int128 q = static_cast<unsigned __int128>(1) << shift;
  const unsigned __int128 k = m >> shift, lower = k << shift, rest = m - lower, half = q >> 1;
  if (rest == 0) return m;
  const int cmp = rest < half ? -1 : rest > half ? 1 : 0;
  return cast_pick_upper(mode, negative, cmp, (k & 1) == 0) ? lower + q : lower;
}

template <class T>
constexpr bool kCastIsHalf = std::is_same_v<T, float16>;

// Whether every value of From is exactly a value of To (NaN and infinities included): an
// integer into a wider integer of a range that holds it, or into a float with enough
// significand bits; a float into a float at least as wide.
template <class From, class To>
constexpr bool cast_always_exact_fn() {
  constexpr auto digits = [](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kCastIsHalf<T>) return 11;
    else return std::numeric_limits<T>::digits;
  };
  constexpr bool from_int = std::is_integral_v<From>, to_int = std::is_integral_v<To>;
  if constexpr (from_int && to_int) {
    return std::cmp_greater_equal(std::numeric_limits<From>::min(), std::numeric_limits<To>::min()) &&
           std::cmp_less_equal(std::numeric_limits<From>::max(), std::numeric_limits<To>::max());
  } else if constexpr (from_int) {
    return digits(std::type_identity<From>{}) <= digits(std::type_identity<To>{});
  } else if constexpr (to_int) {
    return false;
  } else {
    return sizeof(From) <= sizeof(To);
  }
}
template <class From, class To>
constexpr bool kCastAlwaysExact = cast_always_exact_fn<From, To>();

template <class To, class From>
To cast_exact(From v) {
  if constexpr (kCastIsHalf<To> && kCastIsHalf<From>) return v;
  else if constexpr (kCastIsHalf<To>) return to_float16(static_cast<float>(v));  // exact by kCastAlwaysExact
  else if constexpr (kCastIsHalf<From>) return static_cast<To>(half_to_float(v));
  else return static_cast<To>(v);
}

// An element as a double (floats, and integers with at most 53 significant bits) or as an
// exact integer.
struct CastValue {
  bool integer = false;
  __int128 i = 0;
  double f = 0;
};

template <class From>
CastValue cast_load(From v) {
  if constexpr (kCastIsHalf<From>) {
    return {false, 0, half_to_float(v)};
  } else if constexpr (std::is_floating_point_v<From>) {
    return {false, 0, static_cast<double>(v)};
  } else {
    return {true, static_cast<__int128>(v), 0};
  }
}

std::string cast_text(const CastValue& v) {
  if (!v.integer) {
    nlohmann::json j = v.f;  // shortest round-trip text; NaN/inf as null, so spell them
    return std::isnan(v.f) ? "NaN" : std::isinf(v.f) ? (v.f > 0 ? "Infinity" : "-Infinity") : j.dump();
  }
  const bool neg = v.i < 0;
  unsigned __int128 m = neg ? -static_cast<unsigned __int128>(v.i) : static_cast<unsigned __int128>(v.i);
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(m % 10)));
    m /= 10;
  } while (m != 0);
  return neg ? "-" + s : s;
}

// Casts one value to To; nullopt when the value has no defined result (the caller reports it).
template <class To>
std::optional<To> cast_to(const CastValue& v, CastMode mode) {
  if constexpr (std::is_integral_v<To>) {
    using U = std::make_unsigned_t<To>;
    constexpr int bits = 8 * sizeof(To);
    const auto wrap = [](unsigned __int128 x) { return static_cast<To>(static_cast<U>(x)); };
    if (v.integer) {
      if (v.i >= std::numeric_limits<To>::min() && v.i <= std::numeric_limits<To>::max()) return static_cast<To>(v.i);
      if (mode.range == CastRange::Clamp) return v.i < 0 ? std::numeric_limits<To>::min() : std::numeric_limits<To>::max();
      if (mode.range == CastRange::Wrap) return wrap(static_cast<unsigned __int128>(v.i));
      return std::nullopt;
    }
    if (!std::isfinite(v.f)) return std::nullopt;
    double r = v.f;
    switch (mode.rounding) {
      case CastRounding::NearestEven: r = std::nearbyint(v.f); break;
      case CastRounding::TowardsZero: r = std::trunc(v.f); break;
      case CastRounding::TowardsPositive: r = std::ceil(v.f); break;
      case CastRounding::TowardsNegative: r = std::floor(v.f); break;
      case CastRounding::NearestAway: r = std::round(v.f); break;
    }
    const double lo = std::is_signed_v<To> ? -std::ldexp(1.0, bits - 1) : 0.0;
    const double hi = std::ldexp(1.0, std::is_signed_v<To> ? bits - 1 : bits);  // exclusive
    if (r >= lo && r < hi) return static_cast<To>(r);
    if (mode.range == CastRange::Clamp) return r < 0 ? std::numeric_limits<To>::min() : std::numeric_limits<To>::max();
    if (mode.range == CastRange::Wrap) {
      double m = std::fmod(r, std::ldexp(1.0, bits));  // exact
      if (m < 0) m += std::ldexp(1.0, bits);
      return wrap(static_cast<unsigned __int128>(m));
    }
    return std::nullopt;
  } else {
    using F = CastFloatFormat<To>;
    const auto store = [](double x) {
      if constexpr (kCastIsHalf<To>) return to_float16(static_cast<float>(x));
      else return static_cast<To>(x);
    };
    double r = 0;
    bool negative = false;
    if (v.integer) {
      negative = v.i < 0;
      const unsigned __int128 m = negative ? -static_cast<unsigned __int128>(v.i) : static_cast<unsigned __int128>(v.i);
      const double rounded = static_cast<double>(cast_round_integer(m, F::digits, mode.rounding, negative));
      r = negative ? -rounded : rounded;
    } else {
      if (std::isnan(v.f)) return store(v.f);  // NaN stays NaN (its sign too)
      if (std::isinf(v.f) || v.f == 0) return store(v.f);
      negative = v.f < 0;
      const double rounded = cast_round_magnitude(std::fabs(v.f), F::digits, F::min_exp, mode.rounding, negative);
      r = negative ? -rounded : rounded;
    }
    if (std::fabs(r) <= F::max) return store(r);
    if (mode.range == CastRange::Clamp) return store(negative ? -HUGE_VAL : HUGE_VAL);
    return std::nullopt;
  }
}

// scalar_map entries in the element types of one direction.
template <class From, class To>
struct CastMapEntry {
  From key;
  To value;
};

template <class From>
bool cast_key_matches(From key, From v) {
  if constexpr (kCastIsHalf<From>) {
    const bool nan_key = std::isnan(half_to_float(key)), nan_v = std::isnan(half_to_float(v));
    return nan_key ? nan_v : key.bits == v.bits;
  } else if constexpr (std::is_floating_point_v<From>) {
    return std::isnan(key) ? std::isnan(v) : std::bit_cast<std::array<std::byte, sizeof(From)>>(key) ==
                                                  std::bit_cast<std::array<std::byte, sizeof(From)>>(v);
  } else {
    return key == v;
  }
}

class CastValueCodec final : public ArrayToArrayCodec {
 public:
  CastValueCodec(std::string name, nlohmann::json config, DataType decoded, DataType encoded, CastMode mode)
      : name_(std::move(name)), config_(std::move(config)), decoded_(std::move(decoded)),
        encoded_(std::move(encoded)), mode_(mode) {
    // Parses both maps now, so that a bad entry is refused when the metadata is read.
    cast(nullptr, nullptr, 0, true);
    cast(nullptr, nullptr, 0, false);
  }

  std::string name() const override { return name_; }
  ChunkSpec encoded_spec(const ChunkSpec& decoded) const override { return {encoded_, decoded.shape}; }

  void decode(ChunkData& in, const ChunkSpec& decoded, ChunkData& out) const override {
    const std::uint64_t n = decoded.num_elements();
    if (decoded.dtype != decoded_ || in.bytes.size() != n * encoded_.itemsize)
      fail(name_ + ": encoded chunk holds " + std::to_string(in.bytes.size()) + " bytes, expected " +
           std::to_string(n * encoded_.itemsize) + " (" + encoded_.name() + ")");
    out.bytes.resize(decoded.nbytes());
    cast(in.bytes.data(), out.bytes.data(), n, false);
  }

  void encode(const ChunkData& in, const ChunkSpec& decoded, ChunkData& out) const override {
    const std::uint64_t n = decoded.num_elements();
    if (decoded.dtype != decoded_ || in.bytes.size() != decoded.nbytes())
      fail(name_ + ": chunk data does not match its " + decoded.dtype.name() + " shape");
    out.bytes.resize(n * encoded_.itemsize);
    cast(in.bytes.data(), out.bytes.data(), n, true);
  }

  nlohmann::json to_json() const override { return {{"name", name_}, {"configuration", config_}}; }

 private:
  // Casts n elements decoded -> encoded (forward) or back.
  void cast(const std::byte* in, std::byte* out, std::uint64_t n, bool forward) const {
    const DataType& from = forward ? decoded_ : encoded_;
    const DataType& to = forward ? encoded_ : decoded_;
    constexpr unsigned kTypes = lazycube::detail::dtype_set::kReal | lazycube::detail::dtype_set::kHalf;
    lazycube::detail::visit_dtype<kTypes>(from, [&](auto from_tag) {
      lazycube::detail::visit_dtype<kTypes>(to, [&](auto to_tag) {
        using From = typename decltype(from_tag)::type;
        using To = typename decltype(to_tag)::type;
        const auto map = scalar_map<From, To>(forward);
        if constexpr (kCastAlwaysExact<From, To>) {
          if (map.empty()) {  // every value of From is one of To: a plain conversion
            for (std::uint64_t i = 0; i < n; ++i) store_element<To>(out, i, cast_exact<To>(load_element<From>(in, i)));
            return;
          }
        }
        for (std::uint64_t i = 0; i < n; ++i) {
          const From v = load_element<From>(in, i);
          bool mapped = false;
          for (const auto& e : map)
            if (cast_key_matches(e.key, v)) {
              store_element<To>(out, i, e.value);
              mapped = true;
              break;
            }
          if (mapped) continue;
          if constexpr (kCastAlwaysExact<From, To>) {
            store_element<To>(out, i, cast_exact<To>(v));
            continue;
          }
          const CastValue value = cast_load(v);
          const std::optional<To> r = cast_to<To>(value, mode_);
          if (!r) refuse(value, from, to);
          store_element<To>(out, i, *r);
        }
      });
    });
  }

  template <class From, class To>
  std::vector<CastMapEntry<From, To>> scalar_map(bool forward) const {
    std::vector<CastMapEntry<From, To>> out;
    const ConfigReader cfg(name_, config_);
    const auto* map = cfg.find("scalar_map");
    if (map == nullptr) return out;
    const char* direction = forward ? "encode" : "decode";
    const std::string key = std::string("scalar_map.") + direction;
    if (!map->is_object()) cfg.bad("scalar_map", "expected an object with 'encode' and/or 'decode'");
    for (const auto& [k, v] : map->items())
      if (k != "encode" && k != "decode") cfg.bad("scalar_map", "unknown key '" + k + "'");
    const auto it = map->find(direction);
    if (it == map->end() || it->is_null()) return out;
    if (!it->is_array()) cfg.bad(key, "expected a list of [input, output] pairs");
    for (const auto& pair : *it) {
      if (!pair.is_array() || pair.size() != 2) cfg.bad(key, "expected [input, output] pairs, got " + pair.dump());
      const From k = v3_scalar<From>(cfg, key, pair[0]);
      const To v = v3_scalar<To>(cfg, key, pair[1]);
      bool repeated = false;  // the first occurrence of a key wins
      for (const auto& e : out) repeated = repeated || cast_key_matches(e.key, k);
      if (!repeated) out.push_back({k, v});
    }
    return out;
  }

  [[noreturn]] void refuse(const CastValue& v, const DataType& from, const DataType& to) const {
    std::string why;
    if (!v.integer && !std::isfinite(v.f)) why = to.name() + " has no NaN or Infinity (map it with scalar_map)";
    else if (mode_.range == CastRange::Wrap && to.kind == DTypeKind::Float) why = "it is out of range and out_of_range 'wrap' applies to integer types only";
    else why = "it is out of the range of " + to.name() + " and no out_of_range mode is set";
    fail(name_ + ": cannot cast " + from.name() + " value " + cast_text(v) + " to " + to.name() + ": " + why);
  }

  std::string name_;
  nlohmann::json config_;
  DataType decoded_, encoded_;
  CastMode mode_;
};

ArrayCodecPtr make_cast_value(const std::string& name, const nlohmann::json& config, const ChunkSpec& decoded) {
  const ConfigReader cfg(name, config);
  cfg.only({"data_type", "rounding", "out_of_range", "scalar_map"});
  const auto* dt = cfg.find("data_type");
  if (dt == nullptr) cfg.bad("data_type", "missing");
  const DataType encoded = v3_real_dtype(cfg, "data_type", *dt);
  if (!is_real_number_dtype(decoded.dtype))
    fail("codec '" + name + "': unsupported array data type " + decoded.dtype.name() +
         " (cast_value casts integers and float16/32/64)");
  CastMode mode;
  const std::string rounding = cfg.string("rounding", "nearest-even");
  if (rounding == "nearest-even") mode.rounding = CastRounding::NearestEven;
  else if (rounding == "towards-zero") mode.rounding = CastRounding::TowardsZero;
  else if (rounding == "towards-positive") mode.rounding = CastRounding::TowardsPositive;
  else if (rounding == "towards-negative") mode.rounding = CastRounding::TowardsNegative;
  else if (rounding == "nearest-away") mode.rounding = CastRounding::NearestAway;
  else cfg.bad("rounding", "unknown mode '" + rounding + "' (nearest-even, towards-zero, towards-positive, "
                           "towards-negative or nearest-away)");
  if (cfg.has("out_of_range")) {
    const std::string range = cfg.string("out_of_range");
    if (range == "clamp") mode.range = CastRange::Clamp;
    else if (range == "wrap") mode.range = CastRange::Wrap;
    else cfg.bad("out_of_range", "unknown mode '" + range + "' (clamp or wrap)");
    if (mode.range == CastRange::Wrap && encoded.kind == DTypeKind::Float)
      cfg.bad("out_of_range", "'wrap' needs an integer data_type, not " + encoded.name());
  }
  return std::make_shared<CastValueCodec>(name, config, decoded.dtype, encoded, mode);
}

}  // namespace
}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(cast_value) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "cast_value", .names = kV3, .array = make_cast_value});
}
