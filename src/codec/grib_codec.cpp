// Virtual GRIB: a chunk is one GRIB1 or GRIB2 message (a byte range of a GRIB file that a
// virtual chunk reference points at), decoded with ecCodes to its field of float32/float64
// values; points the message's bitmap (or complex packing's missing-value management) marks
// missing become NaN. Registered under the names the repositories that point into GRIB files
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
// Without ecCodes at build time the codec is still registered and every use is a CodecError
// naming the codec and the missing library.
#include <cmath>
#include <cstring>
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
    grib_last_log.clear();
    h_.reset(codes_handle_new_from_message(nullptr, in.data(), length));
    if (!h_) fail(name_ + ": ecCodes cannot read the GRIB message" + grib_take_log());
    key_ = field == GribField::Latitudes ? "latitudes" : field == GribField::Longitudes ? "longitudes" : "values";
    const int err = codes_get_size(h_.get(), key_, &points_);
    if (err != 0) fail(name_ + ": ecCodes cannot size the message's " + key_ + ": " + codes_get_error_message(err) + grib_take_log());
    if (field == GribField::Values) {
      // Missing points take missingValue when ecCodes applies the bitmap (or complex
      // packing's missing-value codes): set to NaN, they come out as NaN whatever real values
      // the field holds.
      long bitmap = 0;
      if (codes_get_long(h_.get(), "bitmapPresent", &bitmap) == 0 && bitmap != 0)
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
    std::size_t got = count;
    const int err = codes_get_double_array(h_.get(), key_, values, &got);
    if (err != 0 || got != count)
      fail(name_ + ": ecCodes cannot decode the message's " + key_ + ": " + codes_get_error_message(err) + grib_take_log());
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
