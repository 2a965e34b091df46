// gzip container (v2 id and v3 name "gzip"). libdeflate inflates single-member streams in one
// call; multi-member streams (and a trailer size that does not fit) fall back to zlib.
#include <cstring>
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "codec_util.hpp"
#include "deflate_decoder.hpp"
#include "zlib_stream.hpp"

namespace lazycube::codec::detail {
namespace {

// zlib's compressBound (stored blocks at worst) with room for other deflaters' smaller blocks,
// and for a gzip header's optional name, comment and extra fields (64 KiB).
std::uint64_t deflate_bound(std::uint64_t n) {
  return n + (n >> 12) + (n >> 14) + (n >> 25) + 13 + n / 256 + 18 + (64u << 10);
}

class GzipCodec final : public BytesToBytesCodec {
 public:
  GzipCodec(std::string name, int level) : name_(std::move(name)), level_(level) {}

  std::string name() const override { return name_; }

  ByteView decode(ByteView in, Buffer& scratch, const DecodeLimits& limits) const override {
    const std::uint64_t cap = decode_cap(limits);
    // The trailer's ISIZE (decoded size mod 2^32) is only a hint: try it when within the cap.
    std::uint64_t hint = limits.exact_size.value_or(0);
    if (!limits.exact_size && in.size() >= 18) hint = load_le32(in.data() + in.size() - 4);
    if (hint <= cap) {
      scratch.resize(static_cast<std::size_t>(hint));
      const auto r = libdeflate_inflate(DeflateContainer::Gzip, in, scratch.span());
      if (r.outcome == InflateOutcome::Ok && r.consumed == in.size()) {
        scratch.resize(r.produced);
        check_exact("gzip", r.produced, limits);
        return scratch.view();
      }
      if (r.outcome == InflateOutcome::Corrupt) fail("gzip: corrupt or truncated stream");
    }
    zlib_inflate("gzip", in, 31, scratch, cap);
    check_exact("gzip", scratch.size(), limits);
    return scratch.view();
  }

  void decode_into(ByteView in, MutableByteView dest) const override {
    const auto r = libdeflate_inflate(DeflateContainer::Gzip, in, dest);
    if (r.outcome == InflateOutcome::Corrupt) fail("gzip: corrupt or truncated stream");
    if (r.outcome == InflateOutcome::Ok && r.consumed == in.size()) {
      DecodeLimits limits;
      limits.exact_size = dest.size();
      check_exact("gzip", r.produced, limits);
      return;
    }
    BytesToBytesCodec::decode_into(in, dest);  // multi-member: stream through scratch
  }

  std::optional<std::uint64_t> max_encoded_size(std::uint64_t n) const override { return deflate_bound(n); }

  Buffer encode(ByteView in) const override { return zlib_deflate("gzip", in, level_, 31); }

  nlohmann::json to_json() const override {
    return {{"name", name_}, {"configuration", {{"level", level_}}}};
  }

 private:
  std::string name_;
  int level_;
};

class ZlibCodec final : public BytesToBytesCodec {
 public:
  ZlibCodec(std::string name, int level) : name_(std::move(name)), level_(level) {}

  std::string name() const override { return name_; }

  ByteView decode(ByteView in, Buffer& scratch, const DecodeLimits& limits) const override {
    if (limits.exact_size) {
      scratch.resize(static_cast<std::size_t>(*limits.exact_size));
      decode_into(in, scratch.span());
      return scratch.view();
    }
    zlib_inflate("zlib", in, 15, scratch, decode_cap(limits));
    return scratch.view();
  }

  void decode_into(ByteView in, MutableByteView dest) const override {
    const auto r = libdeflate_inflate(DeflateContainer::Zlib, in, dest);
    if (r.outcome == InflateOutcome::Corrupt) fail("zlib: corrupt or truncated stream");
    if (r.outcome == InflateOutcome::TooMuchOutput)
      fail("zlib: decoded more than the expected " + std::to_string(dest.size()) + " bytes");
    DecodeLimits limits;
    limits.exact_size = dest.size();
    check_exact("zlib", r.produced, limits);
  }

  std::optional<std::uint64_t> max_encoded_size(std::uint64_t n) const override { return deflate_bound(n); }

  Buffer encode(ByteView in) const override { return zlib_deflate("zlib", in, level_, 15); }

  nlohmann::json to_json() const override {
    return {{"name", name_}, {"configuration", {{"level", level_}}}};
  }

 private:
  std::string name_;
  int level_;
};

int read_level(const ConfigReader& cfg) {
  const auto level = cfg.integer("level", 1);
  if (level < -1 || level > 9) cfg.bad("level", "must be 0..9 (or -1)");
  return static_cast<int>(level);
}

}  // namespace

BytesCodecPtr make_gzip(const std::string& name, const nlohmann::json& config, const ChunkSpec&) {
  return std::make_shared<GzipCodec>(name, read_level(ConfigReader(name, config)));
}

BytesCodecPtr make_zlib(const std::string& name, const nlohmann::json& config, const ChunkSpec&) {
  return std::make_shared<ZlibCodec>(name, read_level(ConfigReader(name, config)));
}

}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(gzip) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "gzip", .names = kV2 | kV3 | kV3Numcodecs, .bytes = make_gzip});
}

LAZYCUBE_REGISTER_CODEC(zlib) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "zlib", .names = kV2 | kV3Numcodecs, .bytes = make_zlib});
}
