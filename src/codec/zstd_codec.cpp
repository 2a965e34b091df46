// Zstandard (v2 id and v3 name "zstd"). Frames with a content size decode in one call; frames
// without one stream into a buffer that never grows past the limits.
#include <zstd.h>
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "codec_util.hpp"

namespace lazycube::codec::detail {
namespace {

// Decoded size when the input is a single frame that records it; otherwise
// ZSTD_CONTENTSIZE_UNKNOWN (several frames, or no size recorded) or ZSTD_CONTENTSIZE_ERROR.
unsigned long long single_frame_size(ByteView in) {
  const unsigned long long size = ZSTD_getFrameContentSize(in.data(), in.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) return size;
  const std::size_t frame = ZSTD_findFrameCompressedSize(in.data(), in.size());
  if (ZSTD_isError(frame)) return ZSTD_CONTENTSIZE_ERROR;
  return frame == in.size() ? size : ZSTD_CONTENTSIZE_UNKNOWN;
}

struct DCtxDeleter {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};

// One decompression context per thread, reused across chunks.
ZSTD_DCtx* thread_dctx() {
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxDeleter> ctx(ZSTD_createDCtx());
  if (!ctx) fail("zstd: cannot allocate a decompression context");
  ZSTD_DCtx_reset(ctx.get(), ZSTD_reset_session_only);
  return ctx.get();
}

std::string zstd_error(std::size_t code) { return ZSTD_getErrorName(code); }

class ZstdCodec final : public BytesToBytesCodec {
 public:
  ZstdCodec(std::string name, int level, bool checksum)
      : name_(std::move(name)), level_(level), checksum_(checksum) {}

  std::string name() const override { return name_; }

  ByteView decode(ByteView in, Buffer& scratch, const DecodeLimits& limits) const override {
    const unsigned long long size = single_frame_size(in);
    if (size == ZSTD_CONTENTSIZE_ERROR) fail("zstd: corrupt or truncated stream");
    if (size == ZSTD_CONTENTSIZE_UNKNOWN) return stream(in, scratch, limits);
    check_claim("zstd", size, limits);
    scratch.resize(static_cast<std::size_t>(size));
    const std::size_t n = one_shot(in, scratch.span());
    check_exact("zstd", n, limits);
    scratch.resize(n);
    return scratch.view();
  }

  void decode_into(ByteView in, MutableByteView dest) const override {
    DecodeLimits limits;
    limits.exact_size = dest.size();
    const unsigned long long size = single_frame_size(in);
    if (size == ZSTD_CONTENTSIZE_ERROR) fail("zstd: corrupt or truncated stream");
    if (size == ZSTD_CONTENTSIZE_UNKNOWN) {
      // Streaming straight into dest: any output beyond dest is an error.
      const std::size_t n = stream_into(in, dest);
      check_exact("zstd", n, limits);
      return;
    }
    check_claim("zstd", size, limits);
    check_exact("zstd", one_shot(in, dest), limits);
  }

  // ZSTD_COMPRESSBOUND (one frame, header and checksum included), with room for a streaming
  // writer's extra block headers.
  std::optional<std::uint64_t> max_encoded_size(std::uint64_t n) const override {
    return n + (n >> 8) + (n < (128u << 10) ? ((128u << 10) - n) >> 11 : 0) + (n >> 10) + 1024;
  }

  Buffer encode(ByteView in) const override {
    Buffer out(ZSTD_compressBound(in.size()));
    std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
    ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level_);
    ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, checksum_ ? 1 : 0);
    const std::size_t n = ZSTD_compress2(cctx.get(), out.data(), out.size(), in.data(), in.size());
    if (ZSTD_isError(n)) fail("zstd: compression failed: " + zstd_error(n));
    out.resize(n);
    return out;
  }

  nlohmann::json to_json() const override {
    return {{"name", name_}, {"configuration", {{"level", level_}, {"checksum", checksum_}}}};
  }

 private:
  static std::size_t one_shot(ByteView in, MutableByteView dest) {
    const std::size_t n =
        ZSTD_decompressDCtx(thread_dctx(), dest.data(), dest.size(), in.data(), in.size());
    if (ZSTD_isError(n)) fail("zstd: corrupt stream: " + zstd_error(n));
    return n;
  }

  // After the output is full: succeeds only if the stream ends here with nothing more to emit.
  static void expect_end(ZSTD_DCtx* ctx, ZSTD_inBuffer& input, std::size_t last_ret,
                         std::uint64_t expected, const char* what = "the expected") {
    std::size_t ret = last_ret;
    for (;;) {
      if (ret == 0 && input.pos == input.size) return;
      std::byte probe[1];
      ZSTD_outBuffer extra{probe, 1, 0};
      const std::size_t before = input.pos;
      ret = ZSTD_decompressStream(ctx, &extra, &input);
      if (ZSTD_isError(ret)) fail("zstd: corrupt stream: " + zstd_error(ret));
      if (extra.pos != 0)
        fail(std::string("zstd: decoded more than ") + what + " " + std::to_string(expected) +
             " bytes");
      if (ret != 0 && input.pos == before) fail("zstd: truncated stream");
    }
  }

  // Streams into dest; fails if the stream holds more than dest or is truncated.
  static std::size_t stream_into(ByteView in, MutableByteView dest) {
    ZSTD_DCtx* ctx = thread_dctx();
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    ZSTD_outBuffer output{dest.data(), dest.size(), 0};
    for (;;) {
      const std::size_t ret = ZSTD_decompressStream(ctx, &output, &input);
      if (ZSTD_isError(ret)) fail("zstd: corrupt stream: " + zstd_error(ret));
      if (output.pos == output.size) {
        expect_end(ctx, input, ret, dest.size());
        return output.pos;
      }
      if (input.pos == input.size) {
        if (ret != 0) fail("zstd: truncated stream");
        return output.pos;
      }
    }
  }

  static ByteView stream(ByteView in, Buffer& scratch, const DecodeLimits& limits) {
    const std::uint64_t cap = decode_cap(limits);
    ZSTD_DCtx* ctx = thread_dctx();
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    scratch.clear();
    std::size_t produced = 0;
    std::size_t ret = 1;
    for (;;) {
      if (produced == scratch.size() && !grow_output(scratch, cap)) {
        expect_end(ctx, input, ret, cap, limits.exact_size ? "the expected" : "the limit of");
        break;
      }
      ZSTD_outBuffer output{scratch.data(), scratch.size(), produced};
      ret = ZSTD_decompressStream(ctx, &output, &input);
      if (ZSTD_isError(ret)) fail("zstd: corrupt stream: " + zstd_error(ret));
      produced = output.pos;
      if (input.pos == input.size && output.pos < output.size) {
        if (ret != 0) fail("zstd: truncated stream");
        break;
      }
    }
    scratch.resize(produced);
    check_exact("zstd", produced, limits);
    return scratch.view();
  }

  std::string name_;
  int level_;
  bool checksum_;
};

}  // namespace

BytesCodecPtr make_zstd(const std::string& name, const nlohmann::json& config, const ChunkSpec&) {
  ConfigReader cfg(name, config);
  const auto level = cfg.integer("level", 0);
  if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel())
    cfg.bad("level", "must be " + std::to_string(ZSTD_minCLevel()) + ".." +
                         std::to_string(ZSTD_maxCLevel()));
  bool checksum = false;
  if (const auto* c = cfg.find("checksum")) {
    if (!c->is_boolean()) cfg.bad("checksum", "expected true or false");
    checksum = c->get<bool>();
  }
  return std::make_shared<ZstdCodec>(name, static_cast<int>(level), checksum);
}

}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(zstd) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "zstd", .names = kV2 | kV3 | kV3Numcodecs, .bytes = make_zstd});
}
