// v3 `bitround` (zarr-extensions registry; `numcodecs.bitround` is its deprecated alias):
// decoding is the identity; encoding keeps `keepbits` bits of each float's mantissa, rounding
// half to even on the bit pattern as numcodecs.BitRound does (float16: 10 mantissa bits,
// float32: 23, float64: 52; complex: each part), and of each integer counted from its most
// significant set bit (two's complement bits; datetime64/timedelta64 as int64), as zarrs does.
// A rounding that carries past the type's top bit saturates (zarrs).
#include <bit>
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "codec_util.hpp"

namespace lazycube::codec::detail {
namespace {

// Rounds the low `maxbits - keepbits` bits of x away (half to even); U is unsigned.
template <class U>
U bitround_bits(U x, unsigned keepbits, unsigned maxbits) {
  if (keepbits >= maxbits) return x;
  const unsigned maskbits = maxbits - keepbits;
  const U mask = static_cast<U>(static_cast<U>(~U{0}) >> maskbits << maskbits);
  const U half_quantum1 = static_cast<U>((U{1} << (maskbits - 1)) - 1);
  const U add = static_cast<U>(((x >> maskbits) & U{1}) + half_quantum1);
  U sum;
  if (__builtin_add_overflow(x, add, &sum)) sum = static_cast<U>(~U{0});
  return static_cast<U>(sum & mask);
}

// How one data type's elements are rounded: the unsigned word of one component, and the
// mantissa width for floats (0: an integer, rounded from its most significant set bit).
struct BitroundLayout {
  std::size_t word = 0;
  unsigned mantissa = 0;
};

std::optional<BitroundLayout> bitround_layout(const DataType& t) {
  switch (t.kind) {
    case DTypeKind::Int:
    case DTypeKind::UInt:
    case DTypeKind::DateTime:
    case DTypeKind::TimeDelta:
      if (t.itemsize == 1 || t.itemsize == 2 || t.itemsize == 4 || t.itemsize == 8) return BitroundLayout{t.itemsize, 0};
      return std::nullopt;
    case DTypeKind::Float:
    case DTypeKind::Complex: {
      const std::size_t word = t.kind == DTypeKind::Complex ? t.itemsize / 2 : t.itemsize;
      if (word == 2) return BitroundLayout{2, 10};
      if (word == 4) return BitroundLayout{4, 23};
      if (word == 8) return BitroundLayout{8, 52};
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

template <class U>
void bitround_words(std::byte* data, std::size_t count, unsigned keepbits, unsigned mantissa) {
  for (std::size_t i = 0; i < count; ++i) {
    U x;
    std::memcpy(&x, data + i * sizeof(U), sizeof(U));
    const unsigned maxbits = mantissa != 0 ? mantissa : static_cast<unsigned>(8 * sizeof(U) - std::countl_zero(x));
    x = bitround_bits<U>(x, keepbits, maxbits);
    std::memcpy(data + i * sizeof(U), &x, sizeof(U));
  }
}

class BitroundCodec final : public ArrayToArrayCodec {
 public:
  BitroundCodec(std::string name, unsigned keepbits, BitroundLayout layout)
      : name_(std::move(name)), keepbits_(keepbits), layout_(layout) {}

  std::string name() const override { return name_; }
  ChunkSpec encoded_spec(const ChunkSpec& decoded) const override { return decoded; }

  void decode(ChunkData& in, const ChunkSpec& decoded, ChunkData& out) const override {
    check(in, decoded);
    out.bytes = std::move(in.bytes);
  }

  void encode(const ChunkData& in, const ChunkSpec& decoded, ChunkData& out) const override {
    check(in, decoded);
    out.bytes = Buffer::copy_of(in.bytes.view());
    const std::size_t count = out.bytes.size() / layout_.word;
    switch (layout_.word) {
      case 1: bitround_words<std::uint8_t>(out.bytes.data(), count, keepbits_, layout_.mantissa); break;
      case 2: bitround_words<std::uint16_t>(out.bytes.data(), count, keepbits_, layout_.mantissa); break;
      case 4: bitround_words<std::uint32_t>(out.bytes.data(), count, keepbits_, layout_.mantissa); break;
      default: bitround_words<std::uint64_t>(out.bytes.data(), count, keepbits_, layout_.mantissa); break;
    }
  }

  nlohmann::json to_json() const override {
    return {{"name", name_}, {"configuration", {{"keepbits", keepbits_}}}};
  }

 private:
  void check(const ChunkData& in, const ChunkSpec& spec) const {
    if (in.bytes.size() != spec.nbytes()) fail(name_ + ": chunk data does not match its shape");
  }

  std::string name_;
  unsigned keepbits_;
  BitroundLayout layout_;
};

ArrayCodecPtr make_bitround(const std::string& name, const nlohmann::json& config, const ChunkSpec& decoded) {
  const ConfigReader cfg(name, config);
  cfg.only({"keepbits"});
  const std::int64_t keepbits = cfg.integer("keepbits");
  if (keepbits < 0 || keepbits > 64) cfg.bad("keepbits", "must be between 0 and 64, got " + std::to_string(keepbits));
  const auto layout = bitround_layout(decoded.dtype);
  if (!layout)
    fail("codec '" + name + "': unsupported data type " + decoded.dtype.name() +
         " (bitround rounds integers, floats and complex numbers)");
  return std::make_shared<BitroundCodec>(name, static_cast<unsigned>(keepbits), *layout);
}

}  // namespace
}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(bitround) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "bitround", .names = kV3 | kV3Numcodecs, .array = make_bitround});
}
