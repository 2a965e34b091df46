// Blosc 1 (v2 id and v3 name "blosc"; numcodecs.blosc too). Decoding validates the header
// against the limits before any allocation and uses the thread-safe context API.
#include <blosc.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <nlohmann/json.hpp>

#include "blosc_lz4_frame.hpp"
#include "codec_registry.hpp"
#include "codec_util.hpp"

namespace lazycube::codec::detail {
namespace {

bool cname_available(const std::string& cname) {
  return blosc_compname_to_compcode(cname.c_str()) >= 0;
}

class BloscCodec final : public BytesToBytesCodec {
 public:
  BloscCodec(std::string name, std::string cname, int clevel, int shuffle, std::size_t typesize,
             std::size_t blocksize, bool v3)
      : name_(std::move(name)), cname_(std::move(cname)), clevel_(clevel), shuffle_(shuffle),
        typesize_(typesize), blocksize_(blocksize), v3_(v3) {}

  std::string name() const override { return name_; }

  ByteView decode(ByteView in, Buffer& scratch, const DecodeLimits& limits) const override {
    const std::size_t nbytes = checked_size(in, limits);
    scratch.resize(nbytes);
    run(in, scratch.span());
    return scratch.view();
  }

  void decode_into(ByteView in, MutableByteView dest) const override {
    DecodeLimits limits;
    limits.exact_size = dest.size();
    run(in, dest.first(checked_size(in, limits)));
  }

  Buffer encode(ByteView in) const override {
    if (in.size() > BLOSC_MAX_BUFFERSIZE) fail("blosc: input of " + std::to_string(in.size()) + " bytes is too large");
    Buffer out(in.size() + BLOSC_MAX_OVERHEAD);
    int shuffle = shuffle_;
    if (shuffle < 0) shuffle = typesize_ == 1 ? BLOSC_BITSHUFFLE : BLOSC_SHUFFLE;  // numcodecs AUTOSHUFFLE
    const int n = blosc_compress_ctx(clevel_, shuffle, typesize_, in.size(), in.data(), out.data(),
                                     out.size(), cname_.c_str(), blocksize_, 1);
    if (n <= 0) fail("blosc: compression failed (" + std::to_string(n) + ")");
    out.resize(static_cast<std::size_t>(n));
    return out;
  }

  // Blosc 1's documented worst case is n + BLOSC_MAX_OVERHEAD (16); 32 covers Blosc 2's too.
  std::optional<std::uint64_t> max_encoded_size(std::uint64_t n) const override { return n + 32; }

  nlohmann::json to_json() const override {
    nlohmann::json c{{"cname", cname_}, {"clevel", clevel_}, {"blocksize", blocksize_}};
    if (v3_) {
      static const char* names[] = {"noshuffle", "shuffle", "bitshuffle"};
      c["shuffle"] = names[std::max(shuffle_, 0)];
      c["typesize"] = typesize_;
    } else {
      c["shuffle"] = shuffle_;
    }
    return {{"name", name_}, {"configuration", c}};
  }

 private:
  // Validates the header and returns the decoded size, refusing sizes over the limits.
  std::size_t checked_size(ByteView in, const DecodeLimits& limits) const {
    if (in.size() < BLOSC_MIN_HEADER_LENGTH)
      fail("blosc: truncated stream (" + std::to_string(in.size()) + " bytes, header needs " +
           std::to_string(BLOSC_MIN_HEADER_LENGTH) + ")");
    std::size_t nbytes = 0, cbytes = 0, blocksize = 0;
    blosc_cbuffer_sizes(in.data(), &nbytes, &cbytes, &blocksize);
    if (cbytes > in.size())
      fail("blosc: truncated stream (header says " + std::to_string(cbytes) + " bytes, got " +
           std::to_string(in.size()) + ")");
    check_claim("blosc", nbytes, limits);
    // No writer produces type size 0 (libblosc itself would only answer "error -1").
    if (in[3] == std::byte{0}) fail("blosc: corrupt header (type size 0)");
    std::size_t validated = 0;
    if (blosc_cbuffer_validate(in.data(), in.size(), &validated) != 0 || validated != nbytes)
      fail("blosc: corrupt header");
    return nbytes;
  }

  static void run(ByteView in, MutableByteView dest) {
    if (dest.empty() || decode_blosc_lz4_frame(in, dest)) return;
    const int n = blosc_decompress_ctx(in.data(), dest.data(), dest.size(), 1);
    if (n < 0) fail("blosc: corrupt stream (error " + std::to_string(n) + ")");
    if (static_cast<std::size_t>(n) != dest.size())
      fail("blosc: decoded " + std::to_string(n) + " bytes, expected " + std::to_string(dest.size()));
  }

  std::string name_, cname_;
  int clevel_, shuffle_;
  std::size_t typesize_, blocksize_;
  bool v3_;
};

}  // namespace

BytesCodecPtr make_blosc(const std::string& name, const nlohmann::json& config,
                         const ChunkSpec& decoded) {
  ConfigReader cfg(name, config);
  const bool v3 = !config.contains("id");
  const std::string cname = cfg.string("cname", "lz4");
  if (!cname_available(cname))
    cfg.bad("cname", "compressor '" + cname + "' is not available in this blosc (have " +
                         blosc_list_compressors() + ")");
  const auto clevel = cfg.integer("clevel", 5);
  if (clevel < 0 || clevel > 9) cfg.bad("clevel", "must be 0..9");
  int shuffle = 1;
  if (const auto* s = cfg.find("shuffle")) {
    if (s->is_string()) {
      const auto text = s->get<std::string>();
      if (text == "noshuffle") shuffle = 0;
      else if (text == "shuffle") shuffle = 1;
      else if (text == "bitshuffle") shuffle = 2;
      else cfg.bad("shuffle", "expected noshuffle, shuffle or bitshuffle, got '" + text + "'");
    } else {
      const auto value = cfg.integer("shuffle");
      if (value < -1 || value > 2) cfg.bad("shuffle", "expected -1, 0, 1 or 2");
      shuffle = static_cast<int>(value);
    }
  }
  std::int64_t fallback_typesize = decoded.dtype.itemsize == 0 ? 1 : decoded.dtype.itemsize;
  const auto typesize = cfg.integer("typesize", fallback_typesize);
  if (typesize < 1 || typesize > BLOSC_MAX_TYPESIZE) cfg.bad("typesize", "must be 1..255");
  const auto blocksize = cfg.integer("blocksize", 0);
  if (blocksize < 0 || blocksize > INT_MAX) cfg.bad("blocksize", "must be >= 0");
  return std::make_shared<BloscCodec>(name, cname, static_cast<int>(clevel), shuffle,
                                      static_cast<std::size_t>(typesize),
                                      static_cast<std::size_t>(blocksize), v3);
}

}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(blosc) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "blosc", .names = kV2 | kV3 | kV3Numcodecs, .bytes = make_blosc});
}
