// Virtual GRIB: a chunk is one GRIB1 or GRIB2 message (a byte range of a GRIB file that a
// virtual chunk reference points at), decoded with ecCodes to its field of float32/float64
// values; points the message marks missing become NaN: its bitmap, or complex packing's
// missing-value management (templates 5.2/5.3: primary and secondary missing values coded in
// the data, no bitmap). Registered under the names the repositories that point into GRIB files
// use:
//   - v3 `gribberish` (array->bytes; VirtualiZarr's GRIB parser and gribberish's zarr codec),
//     configuration {var, adjust_longitude_range, north_up}, all optional;
//   - v2 `gribberish` and v2 `grib` (kerchunk's GRIBCodec), filters that turn the message into
//     the array's elements ({id, var, dtype}); also v3 numcodecs.gribberish / numcodecs.grib.
// `var` "latitude" / "longitude" decodes the grid's coordinates instead of its values (as both
// codecs do); any other var is only a label. The message's number of points must equal the
// chunk's element count, whatever the grid (regular Ni x Nj, reduced, spectral): the values
// come in the message's own scanning order. adjust_longitude_range and north_up (gribberish's
// regridding of global grids) are refused when set. A chunk that does not hold a whole message
// (a truncated byte range) is a CodecError naming the codec, checked before ecCodes sees it.
// Simple packing (GRIB1's, GRIB2 template 5.0) is unpacked here without an ecCodes handle, to
// ecCodes' values bit for bit (GribSimpleField below); every other packing goes through ecCodes.
// Without ecCodes at build time the codec is still registered and every use is a CodecError
// naming the codec and the missing library.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "codec_util.hpp"

#ifdef LAZYCUBE_HAVE_ECCODES
#include <eccodes.h>
#endif

namespace lazycube::codec::detail {
namespace {

enum class GribField { Values, Latitudes, Longitudes };

GribField grib_field_of(const ConfigReader& cfg) {
  const nlohmann::json* var = cfg.find("var");
  if (var == nullptr || var->is_null()) return GribField::Values;
  if (!var->is_string()) cfg.bad("var", "must be a string or null");
  const std::string v = var->get<std::string>();
  if (v == "latitude") return GribField::Latitudes;
  if (v == "longitude") return GribField::Longitudes;
  return GribField::Values;
}

void grib_check_dtype(const std::string& name, const DataType& t) {
  if (t.kind != DTypeKind::Float || (t.itemsize != 4 && t.itemsize != 8))
    fail("codec '" + name + "': data type " + t.name() + " (GRIB fields decode to float32 or float64)");
}

// The length the message declares, after checking that `in` holds all of it: "GRIB" at the
// start, the edition's total length within `in`, "7777" at its end.
[[maybe_unused]] std::uint64_t grib_message_length(const std::string& name, ByteView in) {
  if (in.size() < 16 || std::memcmp(in.data(), "GRIB", 4) != 0)
    fail(name + ": not a GRIB message (" + std::to_string(in.size()) + " bytes, no 'GRIB' at the start)");
  const auto byte = [&](std::size_t i) { return static_cast<std::uint64_t>(std::to_integer<unsigned>(in[i])); };
  const std::uint64_t edition = byte(7);
  std::uint64_t total = 0;
  if (edition == 2) {
    for (std::size_t i = 8; i < 16; ++i) total = (total << 8) | byte(i);
  } else if (edition == 1) {
    total = (byte(4) << 16) | (byte(5) << 8) | byte(6);
    // GRIB1 messages over 8 MiB code their length in 120-byte units (the top bit of section
    // 0's length set); ecCodes sorts those out, so only the end marker of `in` is checked.
    if ((total & 0x800000U) != 0) total = in.size();
  } else {
    fail(name + ": GRIB edition " + std::to_string(edition) + " (ecCodes decodes editions 1 and 2)");
  }
  if (total > in.size())
    fail(name + ": truncated GRIB message (" + std::to_string(in.size()) + " bytes, the message declares " +
         std::to_string(total) + ")");
  if (total < 16 || std::memcmp(in.data() + total - 4, "7777", 4) != 0)
    fail(name + ": truncated or corrupt GRIB message (no '7777' at the end of its " + std::to_string(total) + " bytes)");
  return total;
}

#ifdef LAZYCUBE_HAVE_ECCODES

// Simple packing (GRIB1 grid point simple packing, GRIB2 data representation template 5.0), the
// packing of most reanalysis and forecast archives, decoded without building an ecCodes handle:
// parsing a message into ecCodes' keys costs ~0.2 ms, which dominated small fields (0.57x GDAL
// on ERA5's 33 x 49 messages). The values are the same as ecCodes' (the same arithmetic: value
// = (X * 2^E + R) * 10^-D, powers by repeated multiplication or division as ecCodes takes
// them), which the tests check bit for bit. Anything else (other packings, constant fields,
// predefined or shared bitmaps, several fields in one message, lengths that do not add up)
// goes to ecCodes, which decodes it or says what is wrong.
struct GribSimpleField {
  std::uint64_t points = 0;    // grid points, the bitmap's length
  std::uint64_t values = 0;    // packed values (points less the bitmap's missing ones)
  double reference = 0;        // R
  double binary = 1, decimal = 1;  // 2^E and 10^-D
  unsigned bits = 0;
  const std::byte* data = nullptr;
  std::uint64_t data_bytes = 0;
  const std::byte* bitmap = nullptr;  // nullptr: every point present
};

std::uint64_t grib_uint(const std::byte* p, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | std::to_integer<unsigned>(p[i]);
  return v;
}
// GRIB's signed integers: sign bit, then the magnitude.
long grib_sint16(const std::byte* p) {
  const auto v = static_cast<long>(grib_uint(p, 2));
  return (v & 0x8000) != 0 ? -(v & 0x7fff) : v;
}
// ecCodes' grib_power: n^s by repeated multiplication (s > 0) or division (s < 0).
double grib_power(long s, double n) {
  double r = 1;
  for (; s < 0; ++s) r /= n;
  for (; s > 0; --s) r *= n;
  return r;
}
double grib_ibm_float(const std::byte* p) {  // IBM single precision: exact in a double
  const std::uint64_t v = grib_uint(p, 4);
  const double mantissa = static_cast<double>(v & 0xffffff);
  const int exponent = static_cast<int>((v >> 24) & 0x7f) - 64;
  const double x = std::ldexp(mantissa, 4 * exponent - 24);
  return (v & 0x80000000U) != 0 ? -x : x;
}
double grib_ieee_float(const std::byte* p) {
  const auto v = static_cast<std::uint32_t>(grib_uint(p, 4));
  float f;
  std::memcpy(&f, &v, 4);
  return f;
}
std::uint64_t grib_popcount(const std::byte* bitmap, std::uint64_t points) {
  std::uint64_t n = 0;
  for (std::uint64_t i = 0; i < points; ++i) n += (std::to_integer<unsigned>(bitmap[i / 8]) >> (7 - i % 8)) & 1;
  return n;
}

bool grib_fill_scales(GribSimpleField& f, long binary, long decimal) {
  if (f.bits == 0 || f.bits > 32 || binary < -400 || binary > 400 || decimal < -400 || decimal > 400) return false;
  f.binary = grib_power(binary, 2);
  f.decimal = grib_power(-decimal, 10);
  return (f.values * f.bits + 7) / 8 <= f.data_bytes;
}

// Sections ecCodes 2.28 would abort the process on (assertions in its accessors, found by
// fuzz_grib: a bitmap section of length 0, a predefined bitmap) are refused here, before ecCodes
// sees the message: every GRIB1 section the flags announce at least its fixed size and inside the
// message, no predefined GRIB1/GRIB2 bitmap, every GRIB2 section at least 5 bytes and inside.
void grib_refuse_malformed_sections(const std::string& name, const std::byte* m, std::uint64_t length) {
  const auto u = [&](std::uint64_t at, int n) { return at + n <= length ? grib_uint(m + at, n) : 0; };
  if (std::to_integer<unsigned>(m[7]) == 1) {
    std::uint64_t at = 8;
    const auto section = [&](const char* what, std::uint64_t min) {
      const std::uint64_t n = u(at, 3);
      if (n < min || at + n > length - 4)
        fail(name + ": the GRIB1 " + what + " section of " + std::to_string(n) + " bytes at offset " + std::to_string(at) +
             " does not fit the message (at least " + std::to_string(min) + " bytes)");
      return n;
    };
    const std::uint64_t pds = section("product definition", 28);
    const unsigned flags = std::to_integer<unsigned>(m[at + 7]);
    at += pds;
    if ((flags & 0x80) != 0) at += section("grid description", 32);
    if ((flags & 0x40) != 0) {
      const std::uint64_t bms = section("bitmap", 6);
      if (u(at + 4, 2) != 0)
        fail(name + ": the GRIB1 message uses predefined bitmap " + std::to_string(u(at + 4, 2)) + " (not supported)");
      at += bms;
    }
    section("binary data", 11);
    return;
  }
  for (std::uint64_t at = 16; at + 4 < length;) {
    const std::uint64_t n = u(at, 4);
    if (n < 5 || at + n > length - 4)
      fail(name + ": the GRIB2 section of " + std::to_string(n) + " bytes at offset " + std::to_string(at) +
           " does not fit the message");
    const unsigned number = std::to_integer<unsigned>(m[at + 4]);
    if (number == 6 && n >= 6) {
      const unsigned indicator = std::to_integer<unsigned>(m[at + 5]);
      if (indicator >= 1 && indicator <= 253)
        fail(name + ": the GRIB2 message uses predefined bitmap " + std::to_string(indicator) + " (not supported)");
    }
    at += n;
  }
}

std::optional<GribSimpleField> grib_simple_v1(const std::byte* m, std::uint64_t length) {
  GribSimpleField f;
  std::uint64_t at = 8;
  const auto section = [&](std::uint64_t min) -> std::uint64_t {
    if (at + 3 > length) return 0;
    const std::uint64_t n = grib_uint(m + at, 3);
    return n >= min && at + n <= length - 4 ? n : 0;
  };
  const std::uint64_t pds = section(28);
  if (pds == 0) return std::nullopt;
  const unsigned flags = std::to_integer<unsigned>(m[at + 7]);
  const long decimal = grib_sint16(m + at + 26);
  at += pds;
  if ((flags & 0x80) == 0) return std::nullopt;  // no grid description: the point count is unknown
  const std::uint64_t gds = section(32);
  if (gds == 0) return std::nullopt;
  const unsigned type = std::to_integer<unsigned>(m[at + 5]);
  const std::uint64_t ni = grib_uint(m + at + 6, 2), nj = grib_uint(m + at + 8, 2);
  if ((type != 0 && type != 4) || ni == 0xffff || nj == 0xffff) return std::nullopt;  // regular lat/lon and Gaussian
  f.points = ni * nj;
  at += gds;
  if ((flags & 0x40) != 0) {
    const std::uint64_t bms = section(6);
    if (bms == 0 || grib_uint(m + at + 4, 2) != 0) return std::nullopt;  // predefined bitmap
    f.bitmap = m + at + 6;
    if ((f.points + 7) / 8 > bms - 6) return std::nullopt;
    at += bms;
  }
  const std::uint64_t bds = section(11);
  if (bds == 0) return std::nullopt;
  const unsigned bds_flags = std::to_integer<unsigned>(m[at + 3]);
  if ((bds_flags & 0xd0) != 0) return std::nullopt;  // spherical harmonics, complex packing, extra flags
  f.bits = std::to_integer<unsigned>(m[at + 10]);
  f.reference = grib_ibm_float(m + at + 6);
  f.data = m + at + 11;
  f.data_bytes = bds - 11;
  f.values = f.bitmap != nullptr ? grib_popcount(f.bitmap, f.points) : f.points;
  if (!grib_fill_scales(f, grib_sint16(m + at + 4), decimal)) return std::nullopt;
  return f;
}

std::optional<GribSimpleField> grib_simple_v2(const std::byte* m, std::uint64_t length) {
  GribSimpleField f;
  long binary = 0, decimal = 0;
  bool grid = false, representation = false, bitmap_seen = false, data = false;
  for (std::uint64_t at = 16; at + 4 < length;) {
    const std::uint64_t n = grib_uint(m + at, 4);
    if (n < 5 || at + n > length - 4) return std::nullopt;
    const unsigned number = std::to_integer<unsigned>(m[at + 4]);
    if (data) return std::nullopt;  // a second field in the message
    if (number == 3) {
      if (n < 14) return std::nullopt;
      f.points = grib_uint(m + at + 6, 4);
      grid = true;
    } else if (number == 5) {
      if (n < 21 || grib_uint(m + at + 9, 2) != 0) return std::nullopt;  // template 5.0 only
      f.values = grib_uint(m + at + 5, 4);
      f.reference = grib_ieee_float(m + at + 11);
      binary = grib_sint16(m + at + 15);
      decimal = grib_sint16(m + at + 17);
      f.bits = std::to_integer<unsigned>(m[at + 19]);
      representation = true;
    } else if (number == 6) {
      if (n < 6) return std::nullopt;
      const unsigned indicator = std::to_integer<unsigned>(m[at + 5]);
      if (indicator == 0) {
        f.bitmap = m + at + 6;
        if (!grid || (f.points + 7) / 8 > n - 6) return std::nullopt;
      } else if (indicator != 255) {
        return std::nullopt;  // predefined, or the previous field's
      }
      bitmap_seen = true;
    } else if (number == 7) {
      f.data = m + at + 5;
      f.data_bytes = n - 5;
      data = true;
    } else if (number < 1 || number > 7) {
      return std::nullopt;
    }
    at += n;
  }
  if (!grid || !representation || !bitmap_seen || !data) return std::nullopt;
  if (f.values != (f.bitmap != nullptr ? grib_popcount(f.bitmap, f.points) : f.points)) return std::nullopt;
  if (!grib_fill_scales(f, binary, decimal)) return std::nullopt;
  return f;
}

// Decodes `f` into `out` (f.points doubles), missing points NaN.
void grib_unpack_simple(const GribSimpleField& f, double* out) {
  const std::uint64_t mask = (std::uint64_t{1} << f.bits) - 1;
  std::uint64_t bit = 0;
  const auto next = [&] {
    // The value's bits, from up to 5 bytes starting at the byte that holds its first bit.
    const std::uint64_t byte = bit / 8, shift = bit % 8;
    std::uint64_t window = 0;
    const std::uint64_t take = std::min<std::uint64_t>(5, f.data_bytes - byte);
    for (std::uint64_t i = 0; i < take; ++i) window |= std::uint64_t{std::to_integer<unsigned>(f.data[byte + i])} << (32 - 8 * i);
    bit += f.bits;
    return (window >> (40 - shift - f.bits)) & mask;
  };
  for (std::uint64_t i = 0; i < f.points; ++i) {
    if (f.bitmap != nullptr && ((std::to_integer<unsigned>(f.bitmap[i / 8]) >> (7 - i % 8)) & 1) == 0) {
      out[i] = std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    out[i] = (static_cast<double>(next()) * f.binary + f.reference) * f.decimal;
  }
}

// ecCodes reports problems through its context's logging procedure (to stderr by default):
// lazycube keeps the last error of the decoding thread and puts it in the CodecError instead.
thread_local std::string grib_last_log;

void grib_log(const codes_context*, int level, const char* message) {
  if (level == CODES_LOG_ERROR && message != nullptr) grib_last_log = message;
}

std::string grib_take_log() {
  std::string s = grib_last_log.empty() ? std::string() : " (ecCodes: " + grib_last_log + ")";
  grib_last_log.clear();
  return s;
}

struct GribHandleDelete {
  void operator()(codes_handle* h) const { codes_handle_delete(h); }
};

// One message of `in`, parsed by ecCodes (which reads `in` in place: it must outlive this).
class GribMessage {
 public:
  GribMessage(std::string name, GribField field, ByteView in) : name_(std::move(name)) {
    static std::once_flag quiet;
    std::call_once(quiet, [] { codes_context_set_logging_proc(codes_context_get_default(), grib_log); });
    const std::uint64_t length = grib_message_length(name_, in);
    if (field == GribField::Values) {
      const std::byte* m = in.data();
      simple_ = std::to_integer<unsigned>(m[7]) == 1 ? grib_simple_v1(m, length) : grib_simple_v2(m, length);
      if (simple_) {
        points_ = simple_->points;
        return;
      }
    }
    grib_refuse_malformed_sections(name_, in.data(), length);
    grib_last_log.clear();
    h_.reset(codes_handle_new_from_message(nullptr, in.data(), length));
    if (!h_) fail(name_ + ": ecCodes cannot read the GRIB message" + grib_take_log());
    key_ = field == GribField::Latitudes ? "latitudes" : field == GribField::Longitudes ? "longitudes" : "values";
    const int err = codes_get_size(h_.get(), key_, &points_);
    if (err != 0) fail(name_ + ": ecCodes cannot size the message's " + key_ + ": " + codes_get_error_message(err) + grib_take_log());
    // ecCodes allocates by the counts and dimensions a header states, and aborts the process
    // when such an allocation fails (a corrupt header asked for 16 GB: fuzz_grib and the
    // corrupt-header test). No count of coded values and no dimension of a grid exceeds the
    // message's points, nor does a value take more than 64 bits: refused here instead.
    long bits = 0;
    if (codes_get_long(h_.get(), "bitsPerValue", &bits) == 0 && (bits < 0 || bits > 64))
      fail(name_ + ": corrupt GRIB message (bitsPerValue = " + std::to_string(bits) + ")");
    for (const char* count : {"numberOfValues", "numberOfCodedValues", "numberOfDataPoints", "Ni", "Nj", "Nx", "Ny", "N",
                              "numberOfParallelsBetweenAPoleAndTheEquator"}) {
      long v = 0;
      if (codes_get_long(h_.get(), count, &v) == 0 && v != GRIB_MISSING_LONG && (v < 0 || static_cast<std::uint64_t>(v) > points_))
        fail(name_ + ": corrupt GRIB message (" + count + " = " + std::to_string(v) + " for " + std::to_string(points_) + " points)");
    }
    if (field == GribField::Values) {
      // Missing points take missingValue (9999 by default) wherever ecCodes marks them: the
      // bitmap, complex packing's missing-value management (templates 5.2/5.3, primary and
      // secondary missing values, no bitmap: NCEP's WAVEWATCH fields), any packing's own
      // codes. Set to NaN for every message, they come out as NaN whatever real values the
      // field holds (a field of no missing points is unaffected).
      codes_set_double(h_.get(), "missingValue", std::numeric_limits<double>::quiet_NaN());
    }
  }

  std::uint64_t points() const { return points_; }

  // Decodes the field into `dest`: points() elements of `dtype` (float32 or float64).
  void read(const DataType& dtype, MutableByteView dest) const {
    const std::uint64_t count = points_;
    if (dest.size() != count * dtype.itemsize)
      fail(name_ + ": the GRIB message has " + std::to_string(count) + " points, the chunk " +
           std::to_string(dest.size() / dtype.itemsize) + " elements");
    if (count == 0) return;
    const bool in_place = dtype.itemsize == sizeof(double) && reinterpret_cast<std::uintptr_t>(dest.data()) % alignof(double) == 0;
    std::vector<double> scratch;
    if (!in_place) scratch.resize(count);
    double* values = in_place ? reinterpret_cast<double*>(dest.data()) : scratch.data();
    if (simple_) {
      grib_unpack_simple(*simple_, values);
    } else {
      std::size_t got = count;
      const int err = codes_get_double_array(h_.get(), key_, values, &got);
      if (err != 0 || got != count)
        fail(name_ + ": ecCodes cannot decode the message's " + key_ + ": " + codes_get_error_message(err) + grib_take_log());
    }
    if (in_place) return;
    if (dtype.itemsize == sizeof(double)) {
      std::memcpy(dest.data(), values, count * sizeof(double));
      return;
    }
    for (std::uint64_t i = 0; i < count; ++i) {
      const float f = static_cast<float>(values[i]);
      std::memcpy(dest.data() + i * sizeof(float), &f, sizeof(float));
    }
  }

 private:
  std::string name_;
  std::optional<GribSimpleField> simple_;  // set: decoded here, without ecCodes
  std::unique_ptr<codes_handle, GribHandleDelete> h_;
  const char* key_ = "values";
  std::size_t points_ = 0;
};

#else  // no ecCodes: the codec is known, and refused naming the library

[[noreturn]] void grib_no_eccodes(const std::string& name) {
  fail("codec '" + name + "' needs ecCodes, which this build of lazycube lacks (install libeccodes-dev and rebuild)");
}

class GribMessage {
 public:
  GribMessage(const std::string& name, GribField, ByteView) { grib_no_eccodes(name); }
  std::uint64_t points() const { return 0; }
  void read(const DataType&, MutableByteView) const {}
};

#endif  // LAZYCUBE_HAVE_ECCODES

[[noreturn]] void grib_refuse_encode(const std::string& name) {
  fail(name + ": GRIB messages are read, not written (the codec decodes only)");
}

// v3 `gribberish`: the chunk's bytes are one message, decoded to the chunk.
class GribArrayCodec final : public ArrayToBytesCodec {
 public:
  GribArrayCodec(std::string name, nlohmann::json config, GribField field)
      : name_(std::move(name)), config_(std::move(config)), field_(field) {}

  std::string name() const override { return name_; }

  void decode(ByteView in, const ChunkSpec& spec, ChunkData& out) const override {
    out.bytes.resize(spec.nbytes());
    decode_into(in, spec, out.bytes.span());
  }

  void decode_into(ByteView in, const ChunkSpec& spec, MutableByteView dest) const override {
    grib_check_dtype(name_, spec.dtype);
    if (dest.size() != spec.nbytes()) fail(name_ + ": destination does not match the chunk");
    GribMessage(name_, field_, in).read(spec.dtype, dest);
  }

  Buffer encode(const ChunkData&, const ChunkSpec&) const override { grib_refuse_encode(name_); }
  std::optional<std::uint64_t> encoded_size(const ChunkSpec&) const override { return std::nullopt; }
  nlohmann::json to_json() const override {
    if (config_.empty()) return {{"name", name_}};
    return {{"name", name_}, {"configuration", config_}};
  }

 private:
  std::string name_;
  nlohmann::json config_;
  GribField field_;
};

// v2 `grib` / `gribberish` filter: the message decoded to the array's elements (native order,
// as a numcodecs filter hands them on).
class GribBytesCodec final : public BytesToBytesCodec {
 public:
  GribBytesCodec(std::string name, nlohmann::json config, GribField field, DataType dtype)
      : name_(std::move(name)), config_(std::move(config)), field_(field), dtype_(std::move(dtype)) {}

  std::string name() const override { return name_; }

  ByteView decode(ByteView in, Buffer& scratch, const DecodeLimits& limits) const override {
    const GribMessage message(name_, field_, in);
    const std::uint64_t size = message.points() * dtype_.itemsize;
    check_exact(name_, size, limits);
    check_claim(name_, size, limits);
    scratch.resize(size);
    message.read(dtype_, scratch.span());
    return ByteView(scratch.data(), scratch.size());
  }

  void decode_into(ByteView in, MutableByteView dest) const override {
    GribMessage(name_, field_, in).read(dtype_, dest);
  }

  Buffer encode(ByteView) const override { grib_refuse_encode(name_); }
  nlohmann::json to_json() const override {
    nlohmann::json c = config_;
    c.erase("id");
    return {{"name", name_}, {"configuration", c}};
  }

 private:
  std::string name_;
  nlohmann::json config_;
  GribField field_;
  DataType dtype_;
};

ArrayToBytesCodecPtr make_grib_array(const std::string& name, const nlohmann::json& config, const ChunkSpec& decoded) {
  const ConfigReader cfg(name, config);
  cfg.only({"var", "adjust_longitude_range", "north_up"});
  for (const char* key : {"adjust_longitude_range", "north_up"}) {
    const nlohmann::json* v = cfg.find(key);
    if (v == nullptr || v->is_null()) continue;
    if (!v->is_boolean()) cfg.bad(key, "must be true or false");
    if (v->get<bool>()) cfg.bad(key, "is not supported (lazycube decodes the field as the message stores it)");
  }
  const GribField field = grib_field_of(cfg);
  grib_check_dtype(name, decoded.dtype);
#ifndef LAZYCUBE_HAVE_ECCODES
  grib_no_eccodes(name);
#endif
  return std::make_shared<GribArrayCodec>(name, config.is_null() ? nlohmann::json::object() : config, field);
}

BytesCodecPtr make_grib_filter(const std::string& name, const nlohmann::json& config, const ChunkSpec& decoded) {
  const ConfigReader cfg(name, config);
  cfg.only({"id", "var", "dtype", "shape"});
  const GribField field = grib_field_of(cfg);
  DataType dtype = decoded.dtype;
  if (cfg.has("dtype")) {
    const DataType declared = cfg.dtype("dtype").dtype;
    if (!(declared == dtype)) cfg.bad("dtype", declared.name() + " differs from the array's " + dtype.name());
  }
  grib_check_dtype(name, dtype);
#ifndef LAZYCUBE_HAVE_ECCODES
  grib_no_eccodes(name);
#endif
  return std::make_shared<GribBytesCodec>(name, config.is_null() ? nlohmann::json::object() : config, field, dtype);
}

}  // namespace
}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(grib) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "gribberish", .names = kV3, .array_to_bytes = make_grib_array});
  registry.add({.id = "gribberish", .names = kV2 | kV3Numcodecs, .bytes = make_grib_filter});
  registry.add({.id = "grib", .names = kV2 | kV3Numcodecs, .bytes = make_grib_filter});
}
