// v3 `packbits` (zarr-extensions registry), an array->bytes codec: bits [first_bit, last_bit]
// of each element (of each part of a complex number) packed one after another, least
// significant bit of each byte first as zarrs writes it; bool is one bit. Decoding shifts each
// field back to first_bit and sign-extends signed integers. `padding_encoding` "first_byte" /
// "last_byte" add a byte holding the count of padding bits; the registry's README and schema
// spell the keys differently (padding_encoding first_byte/last_byte and first_bit/last_bit in
// the README, start_byte/end_byte and start_bit/end_bit in the schema): both are read.
// (numcodecs' PackBits filter, "packbits" in Zarr v2, is packbits_filter.cpp.)
#include <cstring>
#include <nlohmann/json.hpp>

#include "bit_packing.hpp"
#include "codec_registry.hpp"
#include "codec_util.hpp"

namespace lazycube::codec::detail {
namespace {

enum class PackBitsPadding { None, FirstByte, LastByte };

// How a data type's elements split into packed components.
struct PackBitsLayout {
  std::size_t components = 1;  // per element
  std::size_t unit = 1;        // bytes per component
  unsigned bits = 8;           // bits per component (N)
  bool is_signed = false;
};

std::optional<PackBitsLayout> packbits_layout(const DataType& t) {
  const auto sized = [&](std::size_t components, std::size_t unit, bool is_signed) -> std::optional<PackBitsLayout> {
    if (unit != 1 && unit != 2 && unit != 4 && unit != 8) return std::nullopt;
    return PackBitsLayout{components, unit, static_cast<unsigned>(8 * unit), is_signed};
  };
  switch (t.kind) {
    case DTypeKind::Bool: return PackBitsLayout{1, 1, 1, false};
    case DTypeKind::Int: return sized(1, t.itemsize, true);
    case DTypeKind::UInt: return sized(1, t.itemsize, false);
    case DTypeKind::Float:
      if (t.itemsize == 2 || t.itemsize == 4 || t.itemsize == 8) return sized(1, t.itemsize, false);
      return std::nullopt;
    case DTypeKind::Complex:
      if (t.itemsize == 8 || t.itemsize == 16) return sized(2, t.itemsize / 2, false);
      return std::nullopt;
    default: return std::nullopt;
  }
}

class PackBitsCodec final : public ArrayToBytesCodec {
 public:
  PackBitsCodec(std::string name, PackBitsPadding padding, PackBitsLayout layout, unsigned first, unsigned last)
      : name_(std::move(name)), padding_(padding), layout_(layout), first_(first), bits_(last - first + 1) {}

  std::string name() const override { return name_; }

  void decode(ByteView in, const ChunkSpec& spec, ChunkData& out) const override {
    out.bytes.resize(spec.nbytes());
    decode_into(in, spec, out.bytes.span());
  }

  void decode_into(ByteView in, const ChunkSpec& spec, MutableByteView dest) const override {
    const std::uint64_t count = spec.num_elements() * layout_.components;
    const std::uint64_t packed = packed_bytes(count);
    const std::uint64_t expected = packed + (padding_ == PackBitsPadding::None ? 0 : 1);
    if (in.size() != expected)
      fail(name_ + ": chunk holds " + std::to_string(in.size()) + " bytes, expected " + std::to_string(expected) +
           " for " + std::to_string(spec.num_elements()) + " elements of " + std::to_string(bits_ * layout_.components) +
           " bits");
    if (dest.size() != count * layout_.unit) fail(name_ + ": destination does not match the chunk");
    const std::byte* bits = in.data();
    if (padding_ != PackBitsPadding::None) {
      const std::size_t at = padding_ == PackBitsPadding::FirstByte ? 0 : packed;
      const unsigned stored = static_cast<unsigned>(in[at]);
      if (stored != padding_bits(count * bits_))
        fail(name_ + ": padding byte says " + std::to_string(stored) + " bits, the chunk has " +
             std::to_string(padding_bits(count * bits_)));
      if (padding_ == PackBitsPadding::FirstByte) ++bits;
    }
    if (whole_words()) {
      if (count != 0) std::memcpy(dest.data(), bits, count * layout_.unit);
      return;
    }
    unpack_bit_fields(bits, count, layout_.unit, first_, bits_, layout_.is_signed, BitOrder::LsbFirst, dest.data());
  }

  Buffer encode(const ChunkData& in, const ChunkSpec& spec) const override {
    const std::uint64_t count = spec.num_elements() * layout_.components;
    if (in.bytes.size() != spec.nbytes()) fail(name_ + ": chunk data does not match its shape");
    const std::uint64_t packed = packed_bytes(count);
    Buffer out(packed + (padding_ == PackBitsPadding::None ? 0 : 1));
    std::byte* bits = out.data();
    if (padding_ == PackBitsPadding::FirstByte) *bits++ = std::byte(static_cast<std::uint8_t>(padding_bits(count * bits_)));
    if (padding_ == PackBitsPadding::LastByte) out.data()[packed] = std::byte(static_cast<std::uint8_t>(padding_bits(count * bits_)));
    if (whole_words()) {
      if (count != 0) std::memcpy(bits, in.bytes.data(), count * layout_.unit);
    } else {
      pack_bit_fields(in.bytes.data(), count, layout_.unit, first_, bits_, BitOrder::LsbFirst, bits);
    }
    return out;
  }

  std::optional<std::uint64_t> encoded_size(const ChunkSpec& spec) const override {
    return packed_bytes(spec.num_elements() * layout_.components) + (padding_ == PackBitsPadding::None ? 0 : 1);
  }

  nlohmann::json to_json() const override {
    static constexpr const char* kPadding[] = {"none", "first_byte", "last_byte"};
    return {{"name", name_},
            {"configuration",
             {{"padding_encoding", kPadding[static_cast<int>(padding_)]},
              {"first_bit", first_},
              {"last_bit", first_ + bits_ - 1}}}};
  }

 private:
  std::uint64_t packed_bytes(std::uint64_t count) const {
    std::uint64_t total = 0;
    if (__builtin_mul_overflow(count, std::uint64_t{bits_}, &total)) fail(name_ + ": chunk too large");
    return total / 8 + (total % 8 != 0);
  }
  // Whole little-endian components: the bytes as they are.
  bool whole_words() const { return first_ == 0 && bits_ == layout_.bits && layout_.bits % 8 == 0; }

  std::string name_;
  PackBitsPadding padding_;
  PackBitsLayout layout_;
  unsigned first_, bits_;
};

// A key spelt either way (README / schema); both at once is refused.
const nlohmann::json* packbits_key(const ConfigReader& cfg, const char* readme, const char* schema) {
  const auto* a = cfg.find(readme);
  const auto* b = cfg.find(schema);
  if (a != nullptr && b != nullptr)
    cfg.bad(readme, std::string("given twice (also as '") + schema + "')");
  return a != nullptr ? a : b;
}

ArrayToBytesCodecPtr make_packbits_v3(const std::string& name, const nlohmann::json& config, const ChunkSpec& decoded) {
  const ConfigReader cfg(name, config);
  cfg.only({"padding_encoding", "first_bit", "last_bit", "start_bit", "end_bit"});
  const auto layout = packbits_layout(decoded.dtype);
  if (!layout)
    fail("codec '" + name + "': unsupported data type " + decoded.dtype.name() +
         " (packbits packs bool, integers, floats and complex numbers)");
  PackBitsPadding padding = PackBitsPadding::None;
  if (const auto* p = cfg.find("padding_encoding")) {
    const std::string text = p->is_string() ? p->get<std::string>() : p->dump();
    if (text == "first_byte" || text == "start_byte") padding = PackBitsPadding::FirstByte;
    else if (text == "last_byte" || text == "end_byte") padding = PackBitsPadding::LastByte;
    else if (text != "none")
      cfg.bad("padding_encoding", "unknown value " + p->dump() + " (none, first_byte/start_byte or last_byte/end_byte)");
  }
  const auto bit = [&](const char* readme, const char* schema, unsigned fallback) {
    const auto* v = packbits_key(cfg, readme, schema);
    if (v == nullptr) return fallback;
    if (!v->is_number_integer() || v->get<std::int64_t>() < 0 || v->get<std::int64_t>() >= layout->bits)
      cfg.bad(readme, "expected a bit index from 0 to " + std::to_string(layout->bits - 1) + " of " +
                          decoded.dtype.name() + ", got " + v->dump());
    return static_cast<unsigned>(v->get<std::int64_t>());
  };
  const unsigned first = bit("first_bit", "start_bit", 0);
  const unsigned last = bit("last_bit", "end_bit", layout->bits - 1);
  if (last < first) cfg.bad("last_bit", "is less than first_bit (" + std::to_string(first) + ")");
  return std::make_shared<PackBitsCodec>(name, padding, *layout, first, last);
}

}  // namespace
}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(packbits_v3) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "packbits", .names = kV3, .array_to_bytes = make_packbits_v3});
}
