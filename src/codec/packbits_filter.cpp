// numcodecs PackBits: byte 0 holds the number of padding bits in the last byte, then the
// booleans packed 8 per byte, most significant bit first (bit_packing.hpp, shared with the v3
// `packbits` codec, which packs least significant bit first).
#include <nlohmann/json.hpp>

#include "bit_packing.hpp"
#include "codec_registry.hpp"
#include "codec_util.hpp"

namespace lazycube::codec::detail {
namespace {

class PackBitsFilter final : public BytesToBytesCodec {
 public:
  explicit PackBitsFilter(std::string name) : name_(std::move(name)) {}

  std::string name() const override { return name_; }

  ByteView decode(ByteView in, Buffer& scratch, const DecodeLimits& limits) const override {
    if (in.empty()) fail(name_ + ": truncated input (no padding byte)");
    const auto padding = static_cast<unsigned>(in[0]);
    const std::uint64_t packed = in.size() - 1;
    if (padding > 7 || (padding > 0 && packed == 0))
      fail(name_ + ": corrupt header (padding of " + std::to_string(padding) + " bits)");
    const std::uint64_t n = packed * 8 - padding;
    check_claim(name_, n, limits);
    scratch.resize(n);
    unpack_bit_fields(in.data() + 1, n, 1, 0, 1, false, BitOrder::MsbFirst, scratch.data());
    return scratch.view();
  }

  Buffer encode(ByteView in) const override {
    // numpy booleans are 0 or 1; any other byte counts as true, as numpy.packbits takes it.
    Buffer bools(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) bools.data()[i] = std::byte(in[i] != std::byte{0});
    Buffer out(1 + (in.size() + 7) / 8);
    out.data()[0] = std::byte(static_cast<std::uint8_t>(padding_bits(in.size())));
    pack_bit_fields(bools.data(), in.size(), 1, 0, 1, BitOrder::MsbFirst, out.data() + 1);
    return out;
  }

  nlohmann::json to_json() const override {
    return {{"name", name_}, {"configuration", nlohmann::json::object()}};
  }

 private:
  std::string name_;
};

}  // namespace

BytesCodecPtr make_packbits(const std::string& name, const nlohmann::json& config,
                            const ChunkSpec&) {
  (void)ConfigReader(name, config);
  return std::make_shared<PackBitsFilter>(name);
}

}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(packbits) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "packbits", .names = kV2 | kV3Numcodecs, .bytes = make_packbits, .filter = true});
}
