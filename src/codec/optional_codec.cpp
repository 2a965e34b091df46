// `optional` (the open zarr-extensions proposal; merged into the registry as `conditional`, with
// the same layout): a bytes->bytes meta-codec wrapping a list of bytes->bytes `codecs`, each
// chunk starting with a bitmask of `header_bits` bits (default: the codec count rounded up to
// whole bytes), bit i (little-endian: byte i / 8, bit i % 8) saying whether codecs[i] was
// applied to this chunk. Decoding reads the mask and undoes the applied codecs in reverse
// order; a set bit past the codec list is a CodecError. Encoding applies the codecs of a mask
// fixed when the codec is built: none, as the proposal asks when no mask is set (lazycube's
// writers do not write this codec).
#include <cstring>
#include <vector>
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "codec_util.hpp"

namespace lazycube::codec::detail {
namespace {

class OptionalCodec final : public BytesToBytesCodec {
 public:
  OptionalCodec(std::string name, nlohmann::json config, std::vector<BytesCodecPtr> codecs, std::size_t header_bits)
      : name_(std::move(name)), config_(std::move(config)), codecs_(std::move(codecs)), header_bits_(header_bits) {}

  std::string name() const override { return name_; }

  ByteView decode(ByteView in, Buffer& scratch, const DecodeLimits& limits) const override {
    const std::size_t header = header_bits_ / 8;
    if (in.size() < header)
      fail(name_ + ": truncated chunk (" + std::to_string(in.size()) + " bytes, the header takes " +
           std::to_string(header) + ")");
    std::vector<bool> applied(codecs_.size(), false);
    for (std::size_t bit = 0; bit < header_bits_; ++bit) {
      if (((static_cast<unsigned>(in[bit / 8]) >> (bit % 8)) & 1u) == 0) continue;
      if (bit >= codecs_.size())
        fail(name_ + ": the header sets bit " + std::to_string(bit) + " but there are only " +
             std::to_string(codecs_.size()) + " codecs");
      applied[bit] = true;
    }
    ByteView cur = in.subspan(header);
    ScratchLease a, b;
    std::size_t last = codecs_.size();  // the first applied codec, decoded last
    for (std::size_t i = 0; i < codecs_.size(); ++i)
      if (applied[i]) {
        last = i;
        break;
      }
    // A codec may hand back part of its input (checksums): each one writes to a buffer its input
    // is not in.
    const auto inside = [&](ByteView whole) {
      return cur.empty() || (cur.data() >= whole.data() && cur.data() + cur.size() <= whole.data() + whole.size());
    };
    for (std::size_t i = codecs_.size(); i-- > 0;) {
      if (!applied[i]) continue;
      if (i == last) {
        cur = codecs_[i]->decode(cur, scratch, limits);
      } else {
        DecodeLimits inner;
        inner.max_size = decode_cap(limits) > kMaxUnboundedDecode ? decode_cap(limits) : kMaxUnboundedDecode;
        Buffer& target = inside(a.buffer().view()) ? b.buffer() : a.buffer();
        cur = codecs_[i]->decode(cur, target, inner);
      }
    }
    // Keep the result in memory the caller owns.
    if (!inside(in) && !inside(scratch.view())) {
      scratch.resize(cur.size());
      std::memcpy(scratch.data(), cur.data(), cur.size());
      cur = scratch.view();
    }
    if (cur.size() > decode_cap(limits))
      fail(name_ + ": decoded " + std::to_string(cur.size()) + " bytes, more than the limit of " +
           std::to_string(decode_cap(limits)));
    check_exact(name_, cur.size(), limits);
    return cur;
  }

  Buffer encode(ByteView in) const override {
    // The mask of no applied codec: the header's zero bytes, then the data as it is.
    Buffer out(header_bits_ / 8 + in.size());
    if (header_bits_ != 0) std::memset(out.data(), 0, header_bits_ / 8);
    if (!in.empty()) std::memcpy(out.data() + header_bits_ / 8, in.data(), in.size());
    return out;
  }

  nlohmann::json to_json() const override { return {{"name", name_}, {"configuration", config_}}; }

 private:
  std::string name_;
  nlohmann::json config_;
  std::vector<BytesCodecPtr> codecs_;
  std::size_t header_bits_;
};

BytesCodecPtr make_optional(const std::string& name, const nlohmann::json& config, const ChunkSpec& decoded) {
  const ConfigReader cfg(name, config);
  cfg.only({"codecs", "header_bits"});
  const auto* list = cfg.find("codecs");
  if (list == nullptr) cfg.bad("codecs", "missing");
  if (!list->is_array()) cfg.bad("codecs", "expected a list of codecs, got " + list->dump());
  std::vector<BytesCodecPtr> codecs;
  for (const auto& c : *list) {
    std::string inner;
    nlohmann::json inner_config;
    if (!parse_v3_codec_entry(c, inner, inner_config)) cfg.bad("codecs", "entry " + c.dump() + " has no 'name'");
    if (v3_codec_kind(inner) != CodecKind::BytesToBytes)
      cfg.bad("codecs", "'" + inner + "' is not a bytes->bytes codec (only those can be switched per chunk)");
    codecs.push_back(make_bytes_codec(inner, inner_config, decoded));
  }
  const std::int64_t fallback = static_cast<std::int64_t>((codecs.size() + 7) / 8 * 8);
  const std::int64_t header_bits = cfg.integer("header_bits", fallback);
  if (header_bits < 0 || header_bits % 8 != 0 || header_bits < static_cast<std::int64_t>(codecs.size()) || header_bits > 4096)
    cfg.bad("header_bits", "must be a multiple of 8 of at least the codec count (" + std::to_string(codecs.size()) +
                               "), got " + std::to_string(header_bits));
  return std::make_shared<OptionalCodec>(name, config.is_null() ? nlohmann::json::object() : config, std::move(codecs),
                                         static_cast<std::size_t>(header_bits));
}

}  // namespace
}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(optional) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "optional", .names = kV3, .bytes = make_optional});
  registry.add({.id = "conditional", .names = kV3, .bytes = make_optional});
}
