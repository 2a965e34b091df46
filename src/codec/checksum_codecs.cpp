// Checksum codecs. Decoding verifies and returns a view of the payload without copying.
//   crc32c (v3):              payload, then CRC-32C as 4 bytes little-endian
//   crc32 / adler32 (numcodecs 0.11 Checksum32): 4-byte little-endian checksum, then payload
//   fletcher32 (numcodecs):   payload, then HDF5 Fletcher-32 as 4 bytes little-endian
#include <isa-l.h>
#include <libdeflate.h>

#include <climits>
#include <cstring>
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "codec_util.hpp"
#include "fletcher32.hpp"

namespace lazycube::codec::detail {
namespace {

std::uint32_t crc32c(ByteView data) {
  // ISA-L's crc32_iscsi takes an int length and leaves the final inversion to the caller.
  std::uint32_t crc = 0xffffffffu;
  auto* p = reinterpret_cast<unsigned char*>(const_cast<std::byte*>(data.data()));
  std::size_t left = data.size();
  while (left > 0) {
    const std::size_t n = left > (1u << 30) ? (1u << 30) : left;
    crc = crc32_iscsi(p, static_cast<int>(n), crc);
    p += n;
    left -= n;
  }
  return ~crc;
}

std::uint32_t crc32(ByteView data) { return libdeflate_crc32(0, data.data(), data.size()); }
std::uint32_t adler32(ByteView data) { return libdeflate_adler32(1, data.data(), data.size()); }

using ChecksumFn = std::uint32_t (*)(ByteView);

class ChecksumCodec final : public BytesToBytesCodec {
 public:
  ChecksumCodec(std::string name, std::string label, ChecksumFn fn, bool prefix)
      : name_(std::move(name)), label_(std::move(label)), fn_(fn), prefix_(prefix) {}

  std::string name() const override { return name_; }

  ByteView decode(ByteView in, Buffer&, const DecodeLimits& limits) const override {
    if (in.size() < 4)
      fail(label_ + ": truncated input (" + std::to_string(in.size()) +
           " bytes, need at least the 4-byte checksum)");
    const ByteView payload = prefix_ ? in.subspan(4) : in.first(in.size() - 4);
    const std::uint32_t stored = load_le32(prefix_ ? in.data() : in.data() + in.size() - 4);
    const std::uint32_t computed = fn_(payload);
    if (stored != computed)
      fail(label_ + " mismatch: stored " + hex32(stored) + ", computed " + hex32(computed));
    if (payload.size() > decode_cap(limits))
      fail(label_ + ": payload of " + std::to_string(payload.size()) +
           " bytes is over the limit of " + std::to_string(decode_cap(limits)));
    check_exact(label_, payload.size(), limits);
    return payload;
  }

  std::optional<std::uint64_t> max_encoded_size(std::uint64_t n) const override { return n + 4; }

  Buffer encode(ByteView in) const override {
    Buffer out(in.size() + 4);
    std::byte* payload = out.data() + (prefix_ ? 4 : 0);
    if (!in.empty()) std::memcpy(payload, in.data(), in.size());
    store_le32(prefix_ ? out.data() : out.data() + in.size(), fn_(in));
    return out;
  }

  nlohmann::json to_json() const override {
    return {{"name", name_}, {"configuration", nlohmann::json::object()}};
  }

 private:
  std::string name_, label_;
  ChecksumFn fn_;
  bool prefix_;
};

}  // namespace

BytesCodecPtr make_crc32c(const std::string& name, const nlohmann::json& config, const ChunkSpec&) {
  ConfigReader(name, config);
  return std::make_shared<ChecksumCodec>(name, "crc32c", crc32c, false);
}
BytesCodecPtr make_adler32(const std::string& name, const nlohmann::json& config, const ChunkSpec&) {
  ConfigReader(name, config);
  return std::make_shared<ChecksumCodec>(name, "adler32", adler32, true);
}
BytesCodecPtr make_crc32(const std::string& name, const nlohmann::json& config, const ChunkSpec&) {
  ConfigReader(name, config);
  return std::make_shared<ChecksumCodec>(name, "crc32", crc32, true);
}
BytesCodecPtr make_fletcher32(const std::string& name, const nlohmann::json& config,
                              const ChunkSpec&) {
  ConfigReader(name, config);
  return std::make_shared<ChecksumCodec>(name, "fletcher32", fletcher32, false);
}

}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(crc32c) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "crc32c", .names = kV2 | kV3 | kV3Numcodecs, .bytes = make_crc32c});
}

LAZYCUBE_REGISTER_CODEC(adler32) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "adler32", .names = kV2 | kV3Numcodecs, .bytes = make_adler32});
}

LAZYCUBE_REGISTER_CODEC(crc32) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "crc32", .names = kV2 | kV3Numcodecs, .bytes = make_crc32});
}

LAZYCUBE_REGISTER_CODEC(fletcher32) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "fletcher32", .names = kV2 | kV3Numcodecs, .bytes = make_fletcher32});
}
