// bfloat16, float8_*, float6_*, float4_e2m1fn (zarr-extensions registry): bit conversions and the
// widening codec.
#include "narrow_float.hpp"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "lazycube/error.hpp"

namespace lazycube::zarr {

namespace {

using Special = NarrowFloatFormat::Special;

// The registry's entries (data-types/<name>/README.md): sign, exponent, mantissa, bias, edges.
constexpr NarrowFloatFormat kFormats[] = {
    {"bfloat16", 2, 8, 7, 127, Special::Ieee},
    {"float8_e3m4", 1, 3, 4, 3, Special::Ieee},
    {"float8_e4m3", 1, 4, 3, 7, Special::Ieee},
    {"float8_e4m3b11fnuz", 1, 4, 3, 11, Special::Fnuz},
    {"float8_e4m3fnuz", 1, 4, 3, 8, Special::Fnuz},
    {"float8_e5m2", 1, 5, 2, 15, Special::Ieee},
    {"float8_e5m2fnuz", 1, 5, 2, 16, Special::Fnuz},
    {"float8_e8m0fnu", 1, 8, 0, 127, Special::E8M0},
    {"float6_e2m3fn", 1, 2, 3, 1, Special::Fn},
    {"float6_e3m2fn", 1, 3, 2, 3, Special::Fn},
    {"float4_e2m1fn", 1, 2, 1, 1, Special::Fn},
};

// The format's canonical NaN (the registry's "NaN" fill value).
std::uint32_t nan_bits(const NarrowFloatFormat& f) {
  switch (f.special) {
    case Special::Fnuz: return 0x80;
    case Special::E8M0: return 0xff;
    case Special::Fn: return 0;  // no NaN pattern
    case Special::Ieee: break;
  }
  return (((1u << f.exponent_bits) - 1) << f.mantissa_bits) | (1u << (f.mantissa_bits - 1));
}

}  // namespace

const NarrowFloatFormat* find_narrow_float(std::string_view name) {
  for (const auto& f : kFormats)
    if (f.name == name) return &f;
  return nullptr;
}

float narrow_to_float(const NarrowFloatFormat& f, std::uint32_t bits) {
  if (f.bytes == 2) return std::bit_cast<float>((bits & 0xffffu) << 16);  // bfloat16
  bits &= (1u << f.bits()) - 1;  // 4- and 6-bit formats: the upper bits of the byte are ignored
  constexpr float nan = std::numeric_limits<float>::quiet_NaN();
  if (f.special == Special::E8M0) return bits == 0xff ? nan : std::ldexp(1.0f, static_cast<int>(bits) - 127);
  if (f.special == Special::Fnuz && bits == 0x80) return nan;
  const unsigned m = f.mantissa_bits;
  const unsigned e = f.exponent_bits;
  const bool negative = ((bits >> (e + m)) & 1u) != 0;
  const unsigned exponent = (bits >> m) & ((1u << e) - 1);
  const unsigned mantissa = bits & ((1u << m) - 1);
  float v;
  if (f.special == Special::Ieee && exponent == (1u << e) - 1)
    v = mantissa == 0 ? std::numeric_limits<float>::infinity() : nan;
  else if (exponent == 0)  // subnormal
    v = std::ldexp(static_cast<float>(mantissa), 1 - f.bias - static_cast<int>(m));
  else
    v = std::ldexp(static_cast<float>(mantissa | (1u << m)), static_cast<int>(exponent) - f.bias - static_cast<int>(m));
  return negative ? -v : v;
}

std::uint32_t float_to_narrow(const NarrowFloatFormat& f, float x) {
  if (f.bytes == 2) {  // bfloat16: the upper half of binary32, rounded to nearest even
    std::uint32_t u = std::bit_cast<std::uint32_t>(x);
    if (std::isnan(x)) return ((u >> 16) & 0x8000u) | 0x7fc0u;
    u += 0x7fffu + ((u >> 16) & 1u);  // a carry out of the mantissa rounds up to the next binade / inf
    return u >> 16;
  }
  if (std::isnan(x)) return nan_bits(f);
  const bool negative = std::signbit(x);
  if (f.special == Special::E8M0 && (negative || x == 0)) return nan_bits(f);
  const unsigned m = f.mantissa_bits;
  const unsigned e = f.exponent_bits;
  const std::uint32_t sign_bit = f.special == Special::E8M0 ? 0u : 1u << (e + m);
  // Positive finite patterns are 0 .. top-1, their values increasing.
  const std::uint32_t top = f.special == Special::Ieee                              ? ((1u << e) - 1) << m
                            : f.special == Special::Fnuz || f.special == Special::Fn ? sign_bit
                                                                                     : 0xffu;
  const double a = std::fabs(static_cast<double>(x));
  auto value = [&](std::uint32_t p) { return static_cast<double>(narrow_to_float(f, p)); };
  // Past the largest finite value by half a step (a tie goes to the even pattern after it).
  const double max = value(top - 1);
  const double past = (max + (2 * max - value(top - 2))) / 2;
  if (f.special == Special::Fn && a > max) return (top - 1) | (negative ? sign_bit : 0u);  // saturates
  if (a > past || (a == past && ((top - 1) & 1u) != 0)) {
    if (f.special != Special::Ieee) return nan_bits(f);
    return top | (negative ? sign_bit : 0u);  // infinity
  }
  std::uint32_t p = 0;
  while (p + 1 < top && value(p + 1) <= a) ++p;
  if (p + 1 < top) {
    const double below = a - value(p);
    const double above = value(p + 1) - a;
    if (above < below || (above == below && (p & 1u) != 0)) ++p;
  }
  if (negative && !(f.special == Special::Fnuz && p == 0)) p |= sign_bit;
  return p;
}

namespace {

class NarrowFloatCodec final : public codec::ArrayToBytesCodec {
 public:
  NarrowFloatCodec(const NarrowFloatFormat& format, std::shared_ptr<const codec::ArrayToBytesCodec> stored)
      : format_(format), stored_(std::move(stored)) {
    if (format_.bytes == 1)
      for (std::uint32_t b = 0; b < 256; ++b) table_[b] = narrow_to_float(format_, b);
  }

  std::string name() const override { return stored_->name(); }

  void decode(ByteView in, const codec::ChunkSpec& spec, codec::ChunkData& out) const override {
    out.bytes.resize(check(spec).nbytes());
    decode_into(in, spec, out.bytes.span());
  }

  void decode_into(ByteView in, const codec::ChunkSpec& spec, MutableByteView dest) const override {
    const codec::ChunkSpec stored = stored_spec(check(spec));
    Buffer narrow(stored.nbytes());
    stored_->decode_into(in, stored, narrow.span());
    const std::size_t n = stored.num_elements();
    if (dest.size() != n * sizeof(float))
      throw CodecError(std::string(format_.name) + ": destination holds " + std::to_string(dest.size()) +
                       " bytes, the chunk widens to " + std::to_string(n * sizeof(float)));
    const std::byte* src = narrow.data();
    for (std::size_t i = 0; i < n; ++i) {
      float v;
      if (format_.bytes == 1) {
        v = table_[static_cast<std::uint8_t>(src[i])];
      } else {
        std::uint16_t bits;
        std::memcpy(&bits, src + 2 * i, 2);
        v = narrow_to_float(format_, bits);
      }
      std::memcpy(dest.data() + i * sizeof(float), &v, sizeof(float));
    }
  }

  Buffer encode(const codec::ChunkData& in, const codec::ChunkSpec& spec) const override {
    const codec::ChunkSpec stored = stored_spec(check(spec));
    const std::size_t n = stored.num_elements();
    if (in.bytes.size() != n * sizeof(float))
      throw CodecError(std::string(format_.name) + ": chunk holds " + std::to_string(in.bytes.size()) +
                       " bytes, expected " + std::to_string(n * sizeof(float)));
    codec::ChunkData narrow;
    narrow.bytes.resize(stored.nbytes());
    for (std::size_t i = 0; i < n; ++i) {
      float v;
      std::memcpy(&v, in.bytes.data() + i * sizeof(float), sizeof(float));
      const std::uint32_t bits = float_to_narrow(format_, v);
      if (format_.bytes == 1) {
        narrow.bytes.data()[i] = static_cast<std::byte>(bits);
      } else {
        const auto b16 = static_cast<std::uint16_t>(bits);
        std::memcpy(narrow.bytes.data() + 2 * i, &b16, 2);
      }
    }
    return stored_->encode(narrow, stored);
  }

  std::optional<std::uint64_t> encoded_size(const codec::ChunkSpec& spec) const override {
    return stored_->encoded_size(stored_spec(spec));
  }
  std::optional<std::uint64_t> max_encoded_size(const codec::ChunkSpec& spec) const override {
    return stored_->max_encoded_size(stored_spec(spec));
  }
  nlohmann::json to_json() const override { return stored_->to_json(); }

 private:
  const codec::ChunkSpec& check(const codec::ChunkSpec& spec) const {
    if (spec.dtype != DataType::float_(4))
      throw CodecError(std::string(format_.name) + " elements widen to float32, not to " + spec.dtype.name());
    return spec;
  }
  codec::ChunkSpec stored_spec(const codec::ChunkSpec& widened) const {
    return {DataType::uint(format_.bytes), widened.shape};
  }

  const NarrowFloatFormat& format_;
  std::shared_ptr<const codec::ArrayToBytesCodec> stored_;
  std::array<float, 256> table_{};
};

}  // namespace

std::shared_ptr<const codec::ArrayToBytesCodec> make_narrow_float_codec(
    const NarrowFloatFormat& format, std::shared_ptr<const codec::ArrayToBytesCodec> stored) {
  return std::make_shared<NarrowFloatCodec>(format, std::move(stored));
}

}  // namespace lazycube::zarr
