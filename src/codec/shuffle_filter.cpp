// numcodecs Shuffle / HDF5's shuffle filter: byte k of every element is stored together (all
// first bytes, then all second bytes, ...), elementsize bytes per element. Like HDF5, trailing
// bytes that make no whole element are kept as they are at the end (HDF5 pipelines that run
// fletcher32 before shuffle append a 4-byte checksum to 8-byte elements).
#include <nlohmann/json.hpp>

#include "byte_unshuffle.hpp"
#include "codec_registry.hpp"
#include "codec_util.hpp"

namespace lazycube::codec::detail {
namespace {

class ShuffleFilter final : public BytesToBytesCodec {
 public:
  ShuffleFilter(std::string name, std::size_t elementsize)
      : name_(std::move(name)), elementsize_(elementsize) {}

  std::string name() const override { return name_; }

  ByteView decode(ByteView in, Buffer& scratch, const DecodeLimits& limits) const override {
    check_claim(name_, in.size(), limits);
    if (elementsize_ <= 1) return in;
    scratch.resize(in.size());
    unshuffle_bytes(in.data(), scratch.data(), in.size(), elementsize_);
    return scratch.view();
  }

  Buffer encode(ByteView in) const override {
    if (elementsize_ <= 1) return Buffer::copy_of(in);
    Buffer out(in.size());
    const std::size_t count = in.size() / elementsize_;
    for (std::size_t b = 0; b < elementsize_; ++b)
      for (std::size_t i = 0; i < count; ++i) out.data()[b * count + i] = in[i * elementsize_ + b];
    copy_tail(in, out.data(), count);
    return out;
  }

  nlohmann::json to_json() const override {
    return {{"name", name_}, {"configuration", {{"elementsize", elementsize_}}}};
  }

 private:
  // The bytes after the last whole element, copied unchanged.
  void copy_tail(ByteView in, std::byte* out, std::size_t count) const {
    for (std::size_t i = count * elementsize_; i < in.size(); ++i) out[i] = in[i];
  }

  std::string name_;
  std::size_t elementsize_;
};

}  // namespace

BytesCodecPtr make_shuffle(const std::string& name, const nlohmann::json& config,
                           const ChunkSpec&) {
  ConfigReader cfg(name, config);
  const auto elementsize = cfg.integer("elementsize", 4);
  if (elementsize < 0 || elementsize > 1 << 20) cfg.bad("elementsize", "out of range");
  return std::make_shared<ShuffleFilter>(name, static_cast<std::size_t>(elementsize));
}

}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(shuffle) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "shuffle", .names = kV2 | kV3Numcodecs, .bytes = make_shuffle});
}
