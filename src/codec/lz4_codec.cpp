// numcodecs LZ4: a 4-byte little-endian decoded size, then one LZ4 block.
#include <lz4.h>

#include <climits>
#include <cstring>
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "codec_util.hpp"

namespace lazycube::codec::detail {
namespace {

class Lz4Codec final : public BytesToBytesCodec {
 public:
  Lz4Codec(std::string name, int acceleration) : name_(std::move(name)), acceleration_(acceleration) {}

  std::string name() const override { return name_; }

  ByteView decode(ByteView in, Buffer& scratch, const DecodeLimits& limits) const override {
    const std::uint32_t size = header(in);
    check_claim("lz4", size, limits);
    scratch.resize(size);
    run(in, scratch.span());
    return scratch.view();
  }

  void decode_into(ByteView in, MutableByteView dest) const override {
    DecodeLimits limits;
    limits.exact_size = dest.size();
    check_claim("lz4", header(in), limits);
    run(in, dest);
  }

  // LZ4_COMPRESSBOUND after numcodecs' 4-byte size header.
  std::optional<std::uint64_t> max_encoded_size(std::uint64_t n) const override { return 4 + n + n / 255 + 16; }

  Buffer encode(ByteView in) const override {
    if (in.size() > LZ4_MAX_INPUT_SIZE) fail("lz4: input of " + std::to_string(in.size()) + " bytes is too large");
    const int bound = LZ4_compressBound(static_cast<int>(in.size()));
    Buffer out(4 + static_cast<std::size_t>(bound));
    store_le32(out.data(), static_cast<std::uint32_t>(in.size()));
    const int n = LZ4_compress_fast(reinterpret_cast<const char*>(in.data()),
                                    reinterpret_cast<char*>(out.data() + 4),
                                    static_cast<int>(in.size()), bound, acceleration_);
    if (n <= 0 && !in.empty()) fail("lz4: compression failed");
    out.resize(4 + static_cast<std::size_t>(n));
    return out;
  }

  nlohmann::json to_json() const override {
    return {{"name", name_}, {"configuration", {{"acceleration", acceleration_}}}};
  }

 private:
  static std::uint32_t header(ByteView in) {
    if (in.size() < 4) fail("lz4: truncated stream (no 4-byte size header)");
    return load_le32(in.data());
  }

  static void run(ByteView in, MutableByteView dest) {
    if (in.size() - 4 > INT_MAX || dest.size() > INT_MAX) fail("lz4: block too large");
    const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data() + 4),
                                      reinterpret_cast<char*>(dest.data()),
                                      static_cast<int>(in.size() - 4), static_cast<int>(dest.size()));
    if (n < 0) fail("lz4: corrupt or truncated stream");
    if (static_cast<std::size_t>(n) != dest.size())
      fail("lz4: decoded " + std::to_string(n) + " bytes, expected " + std::to_string(dest.size()));
  }

  std::string name_;
  int acceleration_;
};

}  // namespace

BytesCodecPtr make_lz4(const std::string& name, const nlohmann::json& config, const ChunkSpec&) {
  ConfigReader cfg(name, config);
  const auto acceleration = cfg.integer("acceleration", 1);
  if (acceleration < 1 || acceleration > 65537) cfg.bad("acceleration", "must be 1..65537");
  return std::make_shared<Lz4Codec>(name, static_cast<int>(acceleration));
}

}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(lz4) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "lz4", .names = kV2 | kV3Numcodecs, .bytes = make_lz4});
}
