// Round trips through every bytes->bytes codec and configuration variant.
#include <blosc.h>

#include <random>
#include <nlohmann/json.hpp>

#include "test_codec_helpers.hpp"

namespace lazycube::codec::testing {
namespace {

// Smooth data (compressible) of `n` bytes plus some noise.
std::vector<std::byte> sample_bytes(std::size_t n, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = static_cast<std::byte>((i / 7) + (rng() % 4 == 0 ? rng() % 256 : 0));
  return out;
}

void expect_round_trip(const BytesToBytesCodec& codec, const std::vector<std::byte>& data) {
  SCOPED_TRACE(codec.to_json().dump() + " size " + std::to_string(data.size()));
  const Buffer enc = codec.encode(view(data));
  EXPECT_EQ(decode_exact(codec, enc.view(), data.size()), data);
  EXPECT_EQ(decode_unbounded(codec, enc.view()), data);
  std::vector<std::byte> dest(data.size());
  codec.decode_into(enc.view(), {dest.data(), dest.size()});
  EXPECT_EQ(dest, data);
}

const std::vector<std::size_t> kSizes = {0, 1, 7, 64, 1000, 65536 + 12, 300000};

std::vector<std::string> blosc_cnames() {
  std::vector<std::string> out;
  for (const char* c : {"blosclz", "lz4", "lz4hc", "zlib", "zstd", "snappy"})
    if (blosc_compname_to_compcode(c) >= 0) out.push_back(c);
  return out;
}

TEST(CodecBlosc, RoundTripAllCnames) {
  for (const auto& cname : blosc_cnames()) {
    for (const char* shuffle : {"noshuffle", "shuffle", "bitshuffle"}) {
      for (std::size_t typesize : {1, 2, 4, 8}) {
        nlohmann::json cfg{{"cname", cname}, {"clevel", 5}, {"shuffle", shuffle},
                           {"typesize", typesize}, {"blocksize", 0}};
        auto codec = make_bytes_codec("blosc", cfg, spec_of(DataType::uint(typesize), {1}));
        for (std::size_t n : {std::size_t{0}, std::size_t{64}, std::size_t{100000}})
          expect_round_trip(*codec, sample_bytes(n / typesize * typesize));
      }
    }
  }
}

TEST(CodecBlosc, V2ConfigAndAutoShuffle) {
  for (int shuffle : {-1, 0, 1, 2}) {
    nlohmann::json cfg{{"id", "blosc"}, {"cname", "zstd"}, {"clevel", 3}, {"shuffle", shuffle},
                       {"blocksize", 0}};
    auto codec = make_v2_bytes_codec(cfg, DataType::float_(8));
    expect_round_trip(*codec, sample_bytes(8 * 5000));
    EXPECT_EQ(codec->to_json()["configuration"]["shuffle"], shuffle);
  }
}

TEST(CodecCompressors, RoundTripAllSizes) {
  const ChunkSpec spec = spec_of(DataType::float_(4), {1});
  const std::vector<std::pair<std::string, nlohmann::json>> codecs = {
      {"zstd", {{"level", 0}}},
      {"zstd", {{"level", 19}, {"checksum", true}}},
      {"zstd", {{"level", -3}}},
      {"numcodecs.zstd", {{"level", 1}}},
      {"numcodecs.lz4", {{"acceleration", 1}}},
      {"numcodecs.lz4", {{"acceleration", 10}}},
      {"gzip", {{"level", 1}}},
      {"gzip", {{"level", 9}}},
      {"numcodecs.zlib", {{"level", 0}}},
      {"numcodecs.zlib", {{"level", 6}}},
      {"numcodecs.bz2", {{"level", 1}}},
      {"numcodecs.bz2", {{"level", 9}}},
      {"numcodecs.lzma", nlohmann::json::object()},
      {"numcodecs.lzma", {{"format", 1}, {"check", 0}, {"preset", 1}}},
      {"numcodecs.lzma", {{"format", 1}, {"check", 4}, {"preset", 0}}},
      {"numcodecs.lzma", {{"format", 2}, {"preset", 1}}},
      {"numcodecs.lzma",
       {{"format", 3},
        {"filters", {{{"id", 3}, {"dist", 4}}, {{"id", 33}, {"preset", 1}}}}}},
      {"numcodecs.lzma", {{"format", 1}, {"filters", {{{"id", 33}, {"preset", 2}}}}}},
      {"crc32c", nlohmann::json::object()},
      {"numcodecs.crc32", nlohmann::json::object()},
      {"numcodecs.adler32", nlohmann::json::object()},
      {"numcodecs.fletcher32", nlohmann::json::object()},
      {"numcodecs.shuffle", {{"elementsize", 4}}},
      {"numcodecs.shuffle", {{"elementsize", 1}}},
  };
  for (const auto& [name, cfg] : codecs) {
    auto codec = make_bytes_codec(name, cfg, spec);
    for (std::size_t n : kSizes) expect_round_trip(*codec, sample_bytes(n / 4 * 4, n));
  }
}

TEST(CodecChecksum, OddLengthsAndViews) {
  const ChunkSpec spec = spec_of(DataType::uint(1), {1});
  for (const char* name : {"crc32c", "numcodecs.crc32", "numcodecs.adler32", "numcodecs.fletcher32"}) {
    auto codec = make_bytes_codec(name, nlohmann::json::object(), spec);
    for (std::size_t n : {0, 1, 3, 719, 720, 721, 5001}) expect_round_trip(*codec, sample_bytes(n));
    // Decoding returns a view into the input: no copy.
    const auto data = sample_bytes(100);
    const Buffer enc = codec->encode(view(data));
    Buffer scratch;
    DecodeLimits limits;
    limits.exact_size = 100;
    const ByteView out = codec->decode(enc.view(), scratch, limits);
    EXPECT_GE(out.data(), enc.data());
    EXPECT_LE(out.data() + out.size(), enc.data() + enc.size());
    EXPECT_TRUE(scratch.empty());
  }
}

TEST(CodecChecksum, Crc32cKnownValue) {
  // CRC-32C("123456789") = 0xe3069283 (RFC 3720 check value), stored little-endian after the data.
  auto codec = make_bytes_codec("crc32c", nlohmann::json::object(), spec_of(DataType::uint(1), {9}));
  const std::string text = "123456789";
  std::vector<std::byte> data(text.size());
  std::memcpy(data.data(), text.data(), text.size());
  const Buffer enc = codec->encode(view(data));
  ASSERT_EQ(enc.size(), 13u);
  EXPECT_EQ(from_bytes<std::uint32_t>(enc.view().subspan(9))[0], 0xe3069283u);
}

template <class T>
void expect_filter_round_trip(const std::string& name, const nlohmann::json& cfg,
                              const std::vector<T>& values) {
  SCOPED_TRACE(name + " " + cfg.dump());
  auto codec = make_bytes_codec(name, cfg, spec_of(DataType::uint(1), {1}));
  const auto data = as_bytes(values);
  const Buffer enc = codec->encode(view(data));
  EXPECT_EQ(from_bytes<T>(view(decode_exact(*codec, enc.view(), data.size()))), values);
  EXPECT_EQ(from_bytes<T>(view(decode_unbounded(*codec, enc.view()))), values);
}

TEST(CodecFilters, DeltaRoundTrip) {
  expect_filter_round_trip<std::int32_t>("delta", {{"dtype", "<i4"}}, {5, -3, 1000000, 7, 7, 0});
  expect_filter_round_trip<std::int16_t>("delta", {{"dtype", "<i2"}, {"astype", "<i1"}},
                                         {100, 102, 104, 101, 90});
  expect_filter_round_trip<std::uint8_t>("delta", {{"dtype", "|u1"}}, {250, 3, 255, 0});
  expect_filter_round_trip<double>("delta", {{"dtype", "<f8"}}, {1.5, 2.5, -4.0, 1e10});
  expect_filter_round_trip<std::int64_t>("numcodecs.delta", {{"dtype", "<i8"}},
                                         {INT64_MIN, INT64_MAX, 0, -1});
  expect_filter_round_trip<std::int32_t>("delta", {{"dtype", "<i4"}}, {});
}

TEST(CodecFilters, DeltaBigEndianConfig) {
  // The filter's dtype names big-endian data: it reads and writes big-endian words.
  auto codec = make_bytes_codec("delta", {{"dtype", ">i4"}}, spec_of(DataType::int_(4), {1}));
  const auto encoded = from_hex("0000000007000000070000000700000007000000");  // numcodecs, see golden test
  EXPECT_EQ(decode_exact(*codec, view(encoded), 20),
            from_hex("00000000070000000e000000150000001c000000"));
}

TEST(CodecFilters, OtherFiltersRoundTrip) {
  expect_filter_round_trip<double>(
      "fixedscaleoffset", {{"offset", 1000}, {"scale", 10}, {"dtype", "<f8"}, {"astype", "|u1"}},
      {1000.0, 1000.5, 1001.0, 1025.5});
  expect_filter_round_trip<std::int32_t>(
      "fixedscaleoffset", {{"offset", 5}, {"scale", 1}, {"dtype", "<i4"}, {"astype", "<i2"}},
      {5, 6, -100, 30000});
  expect_filter_round_trip<double>("quantize", {{"digits", 3}, {"dtype", "<f8"}},
                                   {0.0, 0.5, 0.25, -2.0});
  expect_filter_round_trip<float>("quantize", {{"digits", 2}, {"dtype", "<f4"}, {"astype", "<f8"}},
                                  {0.0f, 0.5f, 0.25f, -2.0f});
  expect_filter_round_trip<std::int64_t>("astype", {{"encode_dtype", "|i1"}, {"decode_dtype", "<i8"}},
                                         {-4, -1, 2, 5, 8});
  expect_filter_round_trip<float>("astype", {{"encode_dtype", "<f8"}, {"decode_dtype", "<f4"}},
                                  {1.5f, -3.25f});
  expect_filter_round_trip<std::uint8_t>("packbits", nlohmann::json::object(), {1, 0, 0, 1, 1});
  expect_filter_round_trip<std::uint8_t>("packbits", nlohmann::json::object(), {1, 0, 0, 1, 1, 1, 1, 0});
  expect_filter_round_trip<std::uint8_t>("packbits", nlohmann::json::object(), {});
  expect_filter_round_trip<std::uint32_t>("shuffle", {{"elementsize", 4}}, {1, 2, 0xdeadbeef, 4});
  expect_filter_round_trip<std::uint64_t>("shuffle", {{"elementsize", 8}}, {});
}

TEST(CodecFilters, CategorizeRoundTrip) {
  nlohmann::json cfg{{"labels", {"a", "bb", "ccc"}}, {"dtype", "<U3"}, {"astype", "|u1"}};
  auto codec = make_bytes_codec("categorize", cfg, spec_of(DataType::unicode(3), {4}));
  std::vector<char32_t> cells = {U'b', U'b', 0, U'a', 0, 0, U'c', U'c', U'c', 0, 0, 0};
  const auto data = as_bytes(cells);
  const Buffer enc = codec->encode(view(data));
  EXPECT_EQ(std::vector<std::byte>(enc.view().begin(), enc.view().end()), from_hex("02010300"));
  EXPECT_EQ(decode_exact(*codec, enc.view(), data.size()), data);
  EXPECT_EQ(*codec->encoded_dtype(DataType::unicode(3)), DataType::uint(1));
}

}  // namespace
}  // namespace lazycube::codec::testing
