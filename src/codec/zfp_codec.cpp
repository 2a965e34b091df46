// v3 `zfp` (zarr-extensions registry), an array->bytes codec on libzfp: the chunk is one zfp
// field of 1 to 4 dimensions ([nw,] [nz,] [ny,] nx in C order; a 0-d chunk is nx = 1) compressed
// without a header, in the mode the configuration names: reversible, fixed_rate (rate),
// fixed_precision (precision), fixed_accuracy (tolerance; floats only) or expert (minbits,
// maxbits, maxprec, minexp). int32/int64/float32/float64 go to zfp as they are; int8/int16 and
// uint8/uint16 are promoted to int32 by the spec's shifts and demoted with its clamps;
// uint32/uint64 clamp to the signed range and float16 widens to float32 (as zarrs does);
// datetime64/timedelta64 are int64. fixed_rate sets the rate for 3 dimensions whatever the
// chunk's, as zarrs (the registry entry's maintainer's implementation) does, so that its data
// reads. Without libzfp at build time the codec is still registered and every use is a
// CodecError naming the codec and the missing library.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "codec_util.hpp"
#include "util/half.hpp"

#ifdef LAZYCUBE_HAVE_ZFP
#include <zfp.h>
#endif

namespace lazycube::codec::detail {
namespace {

#ifdef LAZYCUBE_HAVE_ZFP

enum class ZfpMode { Reversible, FixedRate, FixedPrecision, FixedAccuracy, Expert };

struct ZfpParams {
  ZfpMode mode = ZfpMode::Reversible;
  double rate = 0, tolerance = 0;
  unsigned precision = 0, minbits = 0, maxbits = 0, maxprec = 0;
  int minexp = 0;
};

// What zfp compresses for a data type: its word (int32, int64, float, double) and how elements
// map to it.
enum class ZfpWord { Int32, Int64, Float, Double };

std::optional<ZfpWord> zfp_word(const DataType& t) {
  switch (t.kind) {
    case DTypeKind::Int:
    case DTypeKind::UInt:
      if (t.itemsize == 1 || t.itemsize == 2 || t.itemsize == 4) return ZfpWord::Int32;
      if (t.itemsize == 8) return ZfpWord::Int64;
      return std::nullopt;
    case DTypeKind::DateTime:
    case DTypeKind::TimeDelta: return ZfpWord::Int64;
    case DTypeKind::Float:
      if (t.itemsize == 2 || t.itemsize == 4) return ZfpWord::Float;
      if (t.itemsize == 8) return ZfpWord::Double;
      return std::nullopt;
    default: return std::nullopt;
  }
}

std::size_t zfp_word_size(ZfpWord w) { return w == ZfpWord::Int32 || w == ZfpWord::Float ? 4 : 8; }

// Elements of `t` to zfp words (promotion) and back (demotion), per the registry entry.
template <class Word, class Elem>
Word zfp_promote(Elem v) {
  if constexpr (std::is_same_v<Elem, std::int8_t> || std::is_same_v<Elem, std::int16_t>) {
    return static_cast<Word>(static_cast<std::uint32_t>(static_cast<std::int32_t>(v)) << (31 - 8 * sizeof(Elem)));
  } else if constexpr (std::is_same_v<Elem, std::uint8_t> || std::is_same_v<Elem, std::uint16_t>) {
    constexpr int bits = 8 * sizeof(Elem);
    return static_cast<Word>(static_cast<std::uint32_t>(static_cast<std::int32_t>(v) - (1 << (bits - 1))) << (31 - bits));
  } else if constexpr (std::is_same_v<Elem, std::uint32_t> || std::is_same_v<Elem, std::uint64_t>) {
    return static_cast<Word>(std::min<Elem>(v, static_cast<Elem>(std::numeric_limits<Word>::max())));
  } else {
    return static_cast<Word>(v);
  }
}

template <class Elem, class Word>
Elem zfp_demote(Word w) {
  if constexpr (std::is_same_v<Elem, std::int8_t> || std::is_same_v<Elem, std::int16_t>) {
    constexpr int bits = 8 * sizeof(Elem);
    return static_cast<Elem>(std::clamp<std::int32_t>(w >> (31 - bits), -(1 << (bits - 1)), (1 << (bits - 1)) - 1));
  } else if constexpr (std::is_same_v<Elem, std::uint8_t> || std::is_same_v<Elem, std::uint16_t>) {
    constexpr int bits = 8 * sizeof(Elem);
    return static_cast<Elem>(std::clamp<std::int32_t>((w >> (31 - bits)) + (1 << (bits - 1)), 0, (1 << bits) - 1));
  } else if constexpr (std::is_same_v<Elem, std::uint32_t> || std::is_same_v<Elem, std::uint64_t>) {
    return static_cast<Elem>(std::max<Word>(w, 0));
  } else {
    return static_cast<Elem>(w);
  }
}

// Calls f(type_identity<Elem>, type_identity<Word>) for the element and zfp word types of `t`.
template <class F>
void zfp_visit(const DataType& t, F&& f) {
  using I32 = std::type_identity<std::int32_t>;
  using I64 = std::type_identity<std::int64_t>;
  switch (t.kind) {
    case DTypeKind::Int:
      if (t.itemsize == 1) return f(std::type_identity<std::int8_t>{}, I32{});
      if (t.itemsize == 2) return f(std::type_identity<std::int16_t>{}, I32{});
      if (t.itemsize == 4) return f(I32{}, I32{});
      return f(I64{}, I64{});
    case DTypeKind::UInt:
      if (t.itemsize == 1) return f(std::type_identity<std::uint8_t>{}, I32{});
      if (t.itemsize == 2) return f(std::type_identity<std::uint16_t>{}, I32{});
      if (t.itemsize == 4) return f(std::type_identity<std::uint32_t>{}, I32{});
      return f(std::type_identity<std::uint64_t>{}, I64{});
    case DTypeKind::DateTime:
    case DTypeKind::TimeDelta: return f(I64{}, I64{});
    case DTypeKind::Float:
      if (t.itemsize == 2) return f(std::type_identity<float16>{}, std::type_identity<float>{});
      if (t.itemsize == 4) return f(std::type_identity<float>{}, std::type_identity<float>{});
      return f(std::type_identity<double>{}, std::type_identity<double>{});
    default: fail("zfp: unsupported data type " + t.name());
  }
}

zfp_type zfp_type_of(ZfpWord w) {
  switch (w) {
    case ZfpWord::Int32: return zfp_type_int32;
    case ZfpWord::Int64: return zfp_type_int64;
    case ZfpWord::Float: return zfp_type_float;
    case ZfpWord::Double: return zfp_type_double;
  }
  return zfp_type_none;
}

// libzfp's stream, field and bit stream for one chunk, freed together.
class ZfpSession {
 public:
  ZfpSession(const ZfpParams& p, ZfpWord word, const std::vector<std::uint64_t>& shape, void* data)
      : stream_(zfp_stream_open(nullptr)) {
    const zfp_type type = zfp_type_of(word);
    std::vector<std::size_t> n;  // nx first
    for (std::size_t i = shape.size(); i-- > 0;) n.push_back(static_cast<std::size_t>(shape[i]));
    if (n.empty()) n.push_back(1);
    switch (n.size()) {
      case 1: field_ = zfp_field_1d(data, type, n[0]); break;
      case 2: field_ = zfp_field_2d(data, type, n[0], n[1]); break;
      case 3: field_ = zfp_field_3d(data, type, n[0], n[1], n[2]); break;
      default: field_ = zfp_field_4d(data, type, n[0], n[1], n[2], n[3]); break;
    }
    if (stream_ == nullptr || field_ == nullptr) fail("zfp: libzfp could not allocate a stream");
    switch (p.mode) {
      case ZfpMode::Reversible: zfp_stream_set_reversible(stream_); break;
      case ZfpMode::FixedRate: zfp_stream_set_rate(stream_, p.rate, type, 3, zfp_false); break;
      case ZfpMode::FixedPrecision: zfp_stream_set_precision(stream_, p.precision); break;
      case ZfpMode::FixedAccuracy: zfp_stream_set_accuracy(stream_, p.tolerance); break;
      case ZfpMode::Expert:
        if (!zfp_stream_set_params(stream_, p.minbits, p.maxbits, p.maxprec, p.minexp))
          fail("zfp: libzfp refuses the expert parameters");
        break;
    }
  }
  ~ZfpSession() {
    if (bits_ != nullptr) stream_close(bits_);
    if (field_ != nullptr) zfp_field_free(field_);
    if (stream_ != nullptr) zfp_stream_close(stream_);
  }
  ZfpSession(const ZfpSession&) = delete;
  ZfpSession& operator=(const ZfpSession&) = delete;

  std::size_t maximum_size() const { return zfp_stream_maximum_size(stream_, field_); }
  void attach(void* buffer, std::size_t bytes) {
    bits_ = stream_open(buffer, bytes);
    if (bits_ == nullptr) fail("zfp: libzfp could not open a bit stream");
    zfp_stream_set_bit_stream(stream_, bits_);
    zfp_stream_rewind(stream_);
  }
  std::size_t compress() { return zfp_compress(stream_, field_); }
  std::size_t decompress() { return zfp_decompress(stream_, field_); }

 private:
  zfp_stream* stream_ = nullptr;
  zfp_field* field_ = nullptr;
  bitstream* bits_ = nullptr;
};

class ZfpCodec final : public ArrayToBytesCodec {
 public:
  ZfpCodec(std::string name, nlohmann::json config, ZfpParams params, ZfpWord word)
      : name_(std::move(name)), config_(std::move(config)), params_(params), word_(word) {}

  std::string name() const override { return name_; }

  void decode(ByteView in, const ChunkSpec& spec, ChunkData& out) const override {
    out.bytes.resize(spec.nbytes());
    decode_into(in, spec, out.bytes.span());
  }

  void decode_into(ByteView in, const ChunkSpec& spec, MutableByteView dest) const override {
    const std::uint64_t n = spec.num_elements();
    if (dest.size() != spec.nbytes()) fail(name_ + ": destination does not match the chunk");
    if (n == 0) return;
    if (in.empty()) fail(name_ + ": truncated chunk (0 bytes)");
    std::vector<std::byte> words(n * zfp_word_size(word_));
    ZfpSession session(params_, word_, spec.shape, words.data());
    // libzfp reads whole 64-bit words and trusts the stream to end in time: decode from a copy
    // padded to the most this field can take, so that a short or hostile chunk cannot make it
    // read past the buffer.
    const std::size_t bound = session.maximum_size();
    if (bound > kMaxUnboundedDecode) fail(name_ + ": the configuration allows chunks of " + std::to_string(bound) + " bytes");
    std::vector<std::uint64_t> padded((std::max<std::size_t>(bound, in.size()) + 15) / 8, 0);
    if (!in.empty()) std::memcpy(padded.data(), in.data(), in.size());
    session.attach(padded.data(), padded.size() * 8);
    const std::size_t used = session.decompress();
    if (used == 0) fail(name_ + ": libzfp could not decode the chunk");
    if (used > (in.size() + 7) / 8 * 8)
      fail(name_ + ": truncated chunk (" + std::to_string(in.size()) + " bytes, the stream needs " +
           std::to_string(used) + ")");
    zfp_visit(spec.dtype, [&](auto elem_tag, auto word_tag) {
      using Elem = typename decltype(elem_tag)::type;
      using Word = typename decltype(word_tag)::type;
      for (std::uint64_t i = 0; i < n; ++i) {
        Word w;
        std::memcpy(&w, words.data() + i * sizeof(Word), sizeof(Word));
        Elem e;
        if constexpr (std::is_same_v<Elem, float16>) e = to_float16(w);
        else e = zfp_demote<Elem, Word>(w);
        std::memcpy(dest.data() + i * sizeof(Elem), &e, sizeof(Elem));
      }
    });
  }

  Buffer encode(const ChunkData& in, const ChunkSpec& spec) const override {
    const std::uint64_t n = spec.num_elements();
    if (in.bytes.size() != spec.nbytes()) fail(name_ + ": chunk data does not match its shape");
    if (n == 0) return Buffer();
    std::vector<std::byte> words(n * zfp_word_size(word_));
    zfp_visit(spec.dtype, [&](auto elem_tag, auto word_tag) {
      using Elem = typename decltype(elem_tag)::type;
      using Word = typename decltype(word_tag)::type;
      for (std::uint64_t i = 0; i < n; ++i) {
        Elem e;
        std::memcpy(&e, in.bytes.data() + i * sizeof(Elem), sizeof(Elem));
        Word w;
        if constexpr (std::is_same_v<Elem, float16>) w = half_to_float(e);
        else w = zfp_promote<Word, Elem>(e);
        std::memcpy(words.data() + i * sizeof(Word), &w, sizeof(Word));
      }
    });
    ZfpSession session(params_, word_, spec.shape, words.data());
    Buffer out((session.maximum_size() + 7) / 8 * 8);
    session.attach(out.data(), out.size());
    const std::size_t size = session.compress();
    if (size == 0) fail(name_ + ": libzfp could not compress the chunk");
    out.resize(size);
    return out;
  }

  std::optional<std::uint64_t> max_encoded_size(const ChunkSpec& spec) const override {
    if (spec.num_elements() == 0) return 0;
    ZfpSession session(params_, word_, spec.shape, nullptr);
    return session.maximum_size();
  }

  std::optional<std::uint64_t> encoded_size(const ChunkSpec&) const override { return std::nullopt; }
  nlohmann::json to_json() const override { return {{"name", name_}, {"configuration", config_}}; }

 private:
  std::string name_;
  nlohmann::json config_;
  ZfpParams params_;
  ZfpWord word_;
};

ArrayToBytesCodecPtr make_zfp(const std::string& name, const nlohmann::json& config, const ChunkSpec& decoded) {
  const ConfigReader cfg(name, config);
  ZfpParams p;
  const std::string mode = cfg.string("mode");
  const auto count = [&](const char* key, std::int64_t lo, std::int64_t hi) {
    const std::int64_t v = cfg.integer(key);
    if (v < lo || v > hi) cfg.bad(key, "must be from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " + std::to_string(v));
    return v;
  };
  if (mode == "reversible") {
    cfg.only({"mode"});
  } else if (mode == "fixed_rate") {
    cfg.only({"mode", "rate"});
    p.mode = ZfpMode::FixedRate;
    p.rate = cfg.number("rate");
    if (!(p.rate > 0 && p.rate <= 64)) cfg.bad("rate", "must be above 0 and at most 64 bits per value");
  } else if (mode == "fixed_precision") {
    cfg.only({"mode", "precision"});
    p.mode = ZfpMode::FixedPrecision;
    p.precision = static_cast<unsigned>(count("precision", 1, ZFP_MAX_PREC));
  } else if (mode == "fixed_accuracy") {
    cfg.only({"mode", "tolerance"});
    p.mode = ZfpMode::FixedAccuracy;
    p.tolerance = cfg.number("tolerance");
    if (!(p.tolerance >= 0) || !std::isfinite(p.tolerance)) cfg.bad("tolerance", "must be a finite number >= 0");
    if (decoded.dtype.kind != DTypeKind::Float) cfg.bad("mode", "fixed_accuracy needs floating-point data, not " + decoded.dtype.name());
  } else if (mode == "expert") {
    cfg.only({"mode", "minbits", "maxbits", "maxprec", "minexp"});
    p.mode = ZfpMode::Expert;
    p.minbits = static_cast<unsigned>(count("minbits", 0, ZFP_MAX_BITS));
    p.maxbits = static_cast<unsigned>(count("maxbits", 1, ZFP_MAX_BITS));
    p.maxprec = static_cast<unsigned>(count("maxprec", 1, ZFP_MAX_PREC));
    p.minexp = static_cast<int>(count("minexp", ZFP_MIN_EXP, 1023));
    if (p.minbits > p.maxbits) cfg.bad("minbits", "is more than maxbits");
  } else {
    cfg.bad("mode", "unknown mode '" + mode + "' (reversible, fixed_rate, fixed_precision, fixed_accuracy or expert)");
  }
  const auto word = zfp_word(decoded.dtype);
  if (!word) fail("codec '" + name + "': unsupported data type " + decoded.dtype.name() + " (zfp takes integers and floats)");
  if (decoded.shape.size() > 4)
    fail("codec '" + name + "': chunks of " + std::to_string(decoded.shape.size()) +
         " dimensions (zfp takes 1 to 4; squeeze singleton dimensions before it)");
  return std::make_shared<ZfpCodec>(name, config, p, *word);
}

#else  // no libzfp: the codec is known, and refused naming the library

ArrayToBytesCodecPtr make_zfp(const std::string& name, const nlohmann::json&, const ChunkSpec&) {
  fail("codec '" + name + "' needs libzfp, which this build of lazycube lacks (install libzfp-dev and rebuild)");
}

#endif  // LAZYCUBE_HAVE_ZFP

}  // namespace
}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(zfp) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "zfp", .names = kV3, .array_to_bytes = make_zfp});
}
