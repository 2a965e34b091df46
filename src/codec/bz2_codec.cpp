// bzip2 (v2 id "bz2", v3 "numcodecs.bz2"). Streams into a buffer bounded by the limits;
// concatenated streams decode one after another as Python's bz2 module does.
#include <bzlib.h>

#include <algorithm>
#include <climits>
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "codec_util.hpp"

namespace lazycube::codec::detail {
namespace {

void bz2_inflate(ByteView in, Buffer& out, std::uint64_t cap) {
  bz_stream bs{};
  if (BZ2_bzDecompressInit(&bs, 0, 0) != BZ_OK) fail("bz2: cannot initialise");
  struct Guard {
    bz_stream* s;
    ~Guard() { BZ2_bzDecompressEnd(s); }
  } guard{&bs};
  std::size_t consumed = 0, produced = 0;
  std::byte probe[1];
  out.clear();
  for (;;) {
    const bool at_cap = produced == out.size() && !grow_output(out, cap);
    const std::size_t in_chunk = std::min<std::size_t>(in.size() - consumed, UINT_MAX);
    const std::size_t out_chunk = at_cap ? 1 : std::min<std::size_t>(out.size() - produced, UINT_MAX);
    bs.next_in = reinterpret_cast<char*>(const_cast<std::byte*>(in.data() + consumed));
    bs.avail_in = static_cast<unsigned>(in_chunk);
    bs.next_out = reinterpret_cast<char*>(at_cap ? probe : out.data() + produced);
    bs.avail_out = static_cast<unsigned>(out_chunk);
    const int ret = BZ2_bzDecompress(&bs);
    consumed += in_chunk - bs.avail_in;
    if (at_cap && bs.avail_out == 0)
      fail("bz2: decoded more than the limit of " + std::to_string(cap) + " bytes");
    if (!at_cap) produced += out_chunk - bs.avail_out;
    if (ret == BZ_STREAM_END) {
      if (consumed == in.size()) break;
      BZ2_bzDecompressEnd(&bs);
      bs = bz_stream{};
      if (BZ2_bzDecompressInit(&bs, 0, 0) != BZ_OK) fail("bz2: cannot initialise");
      continue;
    }
    if (ret != BZ_OK) fail("bz2: corrupt stream (error " + std::to_string(ret) + ")");
    if (consumed == in.size() && bs.avail_out != 0) fail("bz2: truncated stream");
  }
  out.resize(produced);
}

class Bz2Codec final : public BytesToBytesCodec {
 public:
  Bz2Codec(std::string name, int level) : name_(std::move(name)), level_(level) {}

  std::string name() const override { return name_; }

  ByteView decode(ByteView in, Buffer& scratch, const DecodeLimits& limits) const override {
    if (in.empty()) fail("bz2: truncated stream (empty input)");
    bz2_inflate(in, scratch, decode_cap(limits));
    check_exact("bz2", scratch.size(), limits);
    return scratch.view();
  }

  // bzip2's documented worst case: 1% larger plus 600 bytes (rounded up).
  std::optional<std::uint64_t> max_encoded_size(std::uint64_t n) const override { return n + n / 100 + 601; }

  Buffer encode(ByteView in) const override {
    if (in.size() > UINT_MAX / 2) fail("bz2: input too large to compress in one piece");
    // bzip2's documented worst case: 1% larger plus 600 bytes.
    unsigned size = static_cast<unsigned>(in.size() + in.size() / 100 + 600);
    Buffer out(size);
    char empty = 0;  // bzip2 refuses a null source pointer even for zero bytes
    char* source = in.empty() ? &empty : reinterpret_cast<char*>(const_cast<std::byte*>(in.data()));
    const int ret = BZ2_bzBuffToBuffCompress(reinterpret_cast<char*>(out.data()), &size, source,
                                             static_cast<unsigned>(in.size()), level_, 0, 0);
    if (ret != BZ_OK) fail("bz2: compression failed (error " + std::to_string(ret) + ")");
    out.resize(size);
    return out;
  }

  nlohmann::json to_json() const override {
    return {{"name", name_}, {"configuration", {{"level", level_}}}};
  }

 private:
  std::string name_;
  int level_;
};

}  // namespace

BytesCodecPtr make_bz2(const std::string& name, const nlohmann::json& config, const ChunkSpec&) {
  ConfigReader cfg(name, config);
  const auto level = cfg.integer("level", 1);
  if (level < 1 || level > 9) cfg.bad("level", "must be 1..9");
  return std::make_shared<Bz2Codec>(name, static_cast<int>(level));
}

}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(bz2) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "bz2", .names = kV2 | kV3Numcodecs, .bytes = make_bz2});
}
