// The direct blosc-lz4 frame decoder and the vectorised byte unshuffle, checked against
// libblosc and a plain loop on frames libblosc writes (every split mode, shuffle, element size
// and leftover block shape), and on damaged frames.
#include <blosc.h>

#include <random>
#include <nlohmann/json.hpp>

#include "codec/blosc_lz4_frame.hpp"
#include "codec/byte_unshuffle.hpp"
#include "test_codec_helpers.hpp"

namespace lazycube::codec::testing {
namespace {

using detail::decode_blosc_lz4_frame;
using detail::unshuffle_bytes;

// Smooth values with noise in the low bytes: compressible, and wrong byte order shows.
std::vector<std::byte> sample(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<std::byte>((i / 64) * 3 + (rng() % 4 == 0 ? rng() % 256 : 0));
  return out;
}

std::vector<std::byte> blosc_compress(const std::vector<std::byte>& data, const char* cname,
                                      int shuffle, std::size_t typesize, std::size_t blocksize,
                                      int splitmode) {
  blosc_set_splitmode(splitmode);
  std::vector<std::byte> out(data.size() + BLOSC_MAX_OVERHEAD);
  const int n = blosc_compress_ctx(5, shuffle, typesize, data.size(), data.data(), out.data(),
                                   out.size(), cname, blocksize, 1);
  blosc_set_splitmode(BLOSC_FORWARD_COMPAT_SPLIT);
  EXPECT_GT(n, 0);
  out.resize(static_cast<std::size_t>(std::max(n, 0)));
  return out;
}

std::vector<std::byte> libblosc_decode(const std::vector<std::byte>& frame, std::size_t size) {
  std::vector<std::byte> out(size);
  EXPECT_EQ(blosc_decompress_ctx(frame.data(), out.data(), out.size(), 1), static_cast<int>(size));
  return out;
}

std::vector<std::byte> plain_unshuffle(const std::vector<std::byte>& in, std::size_t elementsize) {
  std::vector<std::byte> out(in);
  const std::size_t count = in.size() / elementsize;
  for (std::size_t i = 0; i < count; ++i)
    for (std::size_t b = 0; b < elementsize; ++b) out[i * elementsize + b] = in[b * count + i];
  return out;
}

TEST(ByteUnshuffle, MatchesThePlainLoopForEverySizeAndTail) {
  for (std::size_t elementsize = 1; elementsize <= 17; ++elementsize) {
    for (std::size_t size : {0, 1, 7, 63, 64, 127, 128, 255, 256, 257, 1000, 4096, 65536 + 13}) {
      SCOPED_TRACE(std::to_string(elementsize) + " x " + std::to_string(size));
      const auto in = sample(size, static_cast<unsigned>(size + elementsize));
      std::vector<std::byte> out(size, std::byte{0xee});
      unshuffle_bytes(in.data(), out.data(), size, elementsize);
      EXPECT_EQ(out, plain_unshuffle(in, elementsize));
    }
  }
}

TEST(BloscLz4Frame, DecodesWhatLibbloscWritesAsLibbloscDoes) {
  int fast = 0, handed_back = 0;
  for (const char* cname : {"lz4", "lz4hc", "blosclz", "zstd"}) {
    for (int splitmode : {BLOSC_ALWAYS_SPLIT, BLOSC_NEVER_SPLIT, BLOSC_FORWARD_COMPAT_SPLIT}) {
      for (int shuffle : {BLOSC_NOSHUFFLE, BLOSC_SHUFFLE, BLOSC_BITSHUFFLE}) {
        for (std::size_t typesize : {1, 2, 3, 4, 8, 16}) {
          for (std::size_t blocksize : {0, 256, 1000, 65536}) {
            for (std::size_t size : {1, 100, 4099, 300001}) {
              // Other compressors are declined at the header: one shape each is enough. Hundreds
              // of tiny blocks in the largest buffer add nothing the 4099-byte ones do not test
              // and cost a minute under ASan.
              const bool lz4_family = std::string(cname).starts_with("lz4");
              if (!lz4_family && (typesize != 4 || size != 4099)) continue;
              if (size == 300001 && blocksize != 0 && blocksize != 65536) continue;
              const std::string what = std::string(cname) + " split " + std::to_string(splitmode) +
                                       " shuffle " + std::to_string(shuffle) + " typesize " +
                                       std::to_string(typesize) + " blocksize " +
                                       std::to_string(blocksize) + " size " + std::to_string(size);
              SCOPED_TRACE(what);
              const auto data = sample(size, static_cast<unsigned>(size * 31 + typesize));
              const auto frame = blosc_compress(data, cname, shuffle, typesize, blocksize, splitmode);
              std::vector<std::byte> out(size, std::byte{0xee});
              const bool can = lz4_family && shuffle != BLOSC_BITSHUFFLE &&
                               (shuffle == BLOSC_NOSHUFFLE || typesize == 1 ||
                                detail::unshuffle_is_vectorised(typesize));
              if (decode_blosc_lz4_frame(view(frame), {out.data(), out.size()})) {
                EXPECT_TRUE(can);
                ++fast;
                EXPECT_EQ(out, data);
                EXPECT_EQ(out, libblosc_decode(frame, size));
              } else {
                ++handed_back;
                EXPECT_EQ(out, std::vector<std::byte>(size, std::byte{0xee})) << "wrote, then declined";
              }
              // Through the codec, whichever path it takes.
              nlohmann::json cfg{{"id", "blosc"}, {"cname", cname}};
              auto codec = make_bytes_codec("blosc", cfg, spec_of(DataType::uint(1), {1}));
              EXPECT_EQ(decode_exact(*codec, view(frame), size), data);
            }
          }
        }
      }
    }
  }
  EXPECT_GT(fast, detail::unshuffle_is_vectorised(4) ? 300 : 100);
  EXPECT_GT(handed_back, 400);
}

TEST(BloscLz4Frame, TakesTheFramesZarrWritesByDefault) {
  // numcodecs' Blosc() default: lz4, clevel 5, byte shuffle, split streams; values whose low
  // byte is noise (like quantised reanalysis fields), so that plane is stored uncompressed.
  std::mt19937 rng(11);
  for (std::size_t typesize : {2, 4, 8}) {
    SCOPED_TRACE(typesize);
    std::vector<std::byte> data(1 << 20);
    for (std::size_t i = 0; i < data.size(); ++i)
      data[i] = static_cast<std::byte>(i % typesize == 0 ? rng() % 256 : (i / 4096) % 7);
    const auto frame = blosc_compress(data, "lz4", BLOSC_SHUFFLE, typesize, 0, BLOSC_ALWAYS_SPLIT);
    std::uint32_t blocksize, start, first_stream;
    std::memcpy(&blocksize, frame.data() + 8, 4);
    std::memcpy(&start, frame.data() + 16, 4);
    std::memcpy(&first_stream, frame.data() + start, 4);
    EXPECT_EQ(first_stream, blocksize / typesize) << "the noise plane should be stored";
    std::vector<std::byte> out(data.size());
    if (!detail::unshuffle_is_vectorised(typesize))
      GTEST_SKIP() << "no AVX2 on this CPU: shuffled frames go to libblosc";
    EXPECT_TRUE(decode_blosc_lz4_frame(view(frame), {out.data(), out.size()}));
    EXPECT_EQ(out, data);
  }
}

TEST(BloscLz4Frame, DamagedFramesNameTheBlock) {
  const auto data = sample(3000000, 3);
  const auto frame = blosc_compress(data, "lz4", BLOSC_SHUFFLE, 4, 0, BLOSC_ALWAYS_SPLIT);
  std::uint32_t blocksize;
  std::memcpy(&blocksize, frame.data() + 8, 4);
  ASSERT_GE(data.size() / blocksize, 3u);
  std::vector<std::byte> out(data.size());
  const MutableByteView dest{out.data(), out.size()};
  ASSERT_TRUE(decode_blosc_lz4_frame(view(frame), dest));

  // Block 2's offset points past the end of the frame.
  auto bad = frame;
  bad[16 + 2 * 4 + 3] = std::byte{0x7f};
  EXPECT_CODEC_ERROR(decode_blosc_lz4_frame(view(bad), dest), "block 2: offset");

  // Block 1's first stream claims more compressed bytes than the frame holds.
  bad = frame;
  std::uint32_t start;
  std::memcpy(&start, frame.data() + 16 + 4, 4);
  bad[start + 3] = std::byte{0x40};
  EXPECT_CODEC_ERROR(decode_blosc_lz4_frame(view(bad), dest), "block 1: truncated stream");

  // Garbage inside block 0's first LZ4 stream.
  bad = frame;
  std::memcpy(&start, frame.data() + 16, 4);
  for (std::size_t i = start + 4; i < start + 40; ++i) bad[i] = std::byte{0xff};
  EXPECT_CODEC_ERROR(decode_blosc_lz4_frame(view(bad), dest), "block 0: bad lz4 stream");

  // Type size 0 (no writer produces it): refused here and by the codec, naming it, for any compressor.
  bad = frame;
  bad[3] = std::byte{0};
  EXPECT_CODEC_ERROR(decode_blosc_lz4_frame(view(bad), dest), "type size 0");
  for (const char* cname : {"lz4", "zstd", "blosclz"}) {
    auto other = blosc_compress(data, cname, BLOSC_SHUFFLE, 4, 0, BLOSC_ALWAYS_SPLIT);
    other[3] = std::byte{0};
    nlohmann::json cfg{{"id", "blosc"}, {"cname", cname}};
    auto codec = make_bytes_codec("blosc", cfg, spec_of(DataType::uint(1), {1}));
    EXPECT_CODEC_ERROR(decode_exact(*codec, view(other), data.size()), "type size 0");
  }

  // The frame cut short: the block offsets no longer fit, then the last block is missing.
  bad = frame;
  const std::uint32_t tiny = 20;
  std::memcpy(bad.data() + 12, &tiny, 4);
  EXPECT_CODEC_ERROR(decode_blosc_lz4_frame(view(bad), dest), "block offsets do not fit");
  bad = frame;
  bad.resize(frame.size() - 100);
  const auto cut = static_cast<std::uint32_t>(bad.size());
  std::memcpy(bad.data() + 12, &cut, 4);
  EXPECT_THROW(decode_blosc_lz4_frame(view(bad), dest), CodecError);
}

TEST(BloscLz4Frame, DeclinesWhatItDoesNotDecode) {
  const auto data = sample(10000, 5);
  std::vector<std::byte> out(data.size());
  const MutableByteView dest{out.data(), out.size()};
  // Another compressor, bitshuffle, a stored (memcpyed) frame, an unvectorised element size.
  EXPECT_FALSE(decode_blosc_lz4_frame(view(blosc_compress(data, "zstd", 1, 4, 0, BLOSC_ALWAYS_SPLIT)), dest));
  EXPECT_FALSE(decode_blosc_lz4_frame(view(blosc_compress(data, "lz4", 2, 4, 0, BLOSC_ALWAYS_SPLIT)), dest));
  auto stored = blosc_compress(data, "lz4", 1, 4, 0, BLOSC_ALWAYS_SPLIT);
  stored[2] |= std::byte{0x02};
  EXPECT_FALSE(decode_blosc_lz4_frame(view(stored), dest));
  EXPECT_FALSE(decode_blosc_lz4_frame(view(blosc_compress(data, "lz4", 1, 5, 0, BLOSC_ALWAYS_SPLIT)), dest));
  // A frame for another size is left to the caller's checks.
  std::vector<std::byte> other(data.size() - 4);
  EXPECT_FALSE(decode_blosc_lz4_frame(view(blosc_compress(data, "lz4", 1, 4, 0, BLOSC_ALWAYS_SPLIT)),
                                      {other.data(), other.size()}));
}

}  // namespace
}  // namespace lazycube::codec::testing
