// Corrupt, truncated and lying inputs must fail with a CodecError that says what went wrong.
#include <nlohmann/json.hpp>

#include "test_codec_helpers.hpp"

namespace lazycube::codec::testing {
namespace {

std::vector<std::byte> ramp(std::size_t n) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>(i * 7 / 13);
  return out;
}

const ChunkSpec kSpec = spec_of(DataType::int_(4), {1000});

std::vector<std::byte> encode_with(const BytesToBytesCodec& c, const std::vector<std::byte>& d) {
  const Buffer b = c.encode(view(d));
  return {b.view().begin(), b.view().end()};
}

TEST(CodecCorruption, TruncatedStreams) {
  const auto data = ramp(4000);
  for (const char* name : {"blosc", "zstd", "numcodecs.lz4", "gzip", "numcodecs.zlib",
                           "numcodecs.bz2", "numcodecs.lzma"}) {
    SCOPED_TRACE(name);
    auto c = make_bytes_codec(name, nlohmann::json::object(), kSpec);
    auto enc = encode_with(*c, data);
    enc.resize(enc.size() / 2);
    EXPECT_THROW(decode_exact(*c, view(enc), data.size()), CodecError);
    EXPECT_THROW(decode_unbounded(*c, view(enc)), CodecError);
    std::vector<std::byte> dest(data.size());
    EXPECT_THROW(c->decode_into(view(enc), {dest.data(), dest.size()}), CodecError);
    // Shorter than any header.
    EXPECT_THROW(decode_unbounded(*c, view(from_hex("01"))), CodecError);
    EXPECT_THROW(decode_exact(*c, ByteView{}, 16), CodecError);
  }
  auto zstd = make_bytes_codec("zstd", nlohmann::json::object(), kSpec);
  auto enc = encode_with(*zstd, data);
  enc.resize(enc.size() - 3);
  EXPECT_CODEC_ERROR(decode_exact(*zstd, view(enc), data.size()), "zstd");
  auto blosc = make_bytes_codec("blosc", nlohmann::json::object(), kSpec);
  EXPECT_CODEC_ERROR(decode_exact(*blosc, view(from_hex("0201")), 8), "blosc: truncated");
}

// Flipped bytes and wrong decoded sizes for every registered codec: test_codec_registry.cpp.

TEST(CodecCorruption, ChecksumMismatch) {
  const auto data = ramp(100);
  for (const auto& [name, label] : std::vector<std::pair<std::string, std::string>>{
           {"crc32c", "crc32c mismatch: stored 0x"},
           {"numcodecs.crc32", "crc32 mismatch: stored 0x"},
           {"numcodecs.adler32", "adler32 mismatch: stored 0x"},
           {"numcodecs.fletcher32", "fletcher32 mismatch: stored 0x"}}) {
    auto c = make_bytes_codec(name, nlohmann::json::object(), kSpec);
    auto enc = encode_with(*c, data);
    enc[enc.size() / 2] ^= std::byte{1};
    EXPECT_CODEC_ERROR(decode_exact(*c, view(enc), data.size()), label);
    EXPECT_CODEC_ERROR(decode_exact(*c, view(enc), data.size()), ", computed 0x");
    EXPECT_CODEC_ERROR(decode_exact(*c, view(from_hex("0102")), 0), "truncated");
  }
}

TEST(CodecCorruption, WrongExactSize) {
  auto zstd = make_bytes_codec("zstd", nlohmann::json::object(), kSpec);
  const auto zenc = encode_with(*zstd, ramp(400));
  EXPECT_CODEC_ERROR(decode_exact(*zstd, view(zenc), 1000), "expected 1000");
  std::vector<std::byte> dest(1000);
  EXPECT_CODEC_ERROR(zstd->decode_into(view(zenc), {dest.data(), dest.size()}), "expected 1000");
  // A zstd frame without a content size (`zstd -c --no-check` of 10 int32s) streams.
  const auto stream = from_hex(
      "28b52ffd005841010000000000010000000200000003000000040000000500000006000000070000000800"
      "000009000000");
  EXPECT_CODEC_ERROR(decode_exact(*zstd, view(stream), 20), "zstd: decoded more than");
  EXPECT_CODEC_ERROR(decode_exact(*zstd, view(stream), 80), "zstd: decoded 40 bytes, expected 80");
  {
    Buffer scratch;
    DecodeLimits limits;
    limits.max_size = 16;
    EXPECT_CODEC_ERROR(zstd->decode(view(stream), scratch, limits), "more than the limit of 16");
  }
}

TEST(CodecCorruption, HugeClaimedSizesRefusedBeforeAllocating) {
  auto blosc = make_bytes_codec("blosc", nlohmann::json::object(), kSpec);
  auto enc = encode_with(*blosc, ramp(1000));
  // Patch the header's nbytes (bytes 4..8) to claim ~4 GB.
  enc[4] = enc[5] = enc[6] = std::byte{0xff};
  enc[7] = std::byte{0x7f};
  EXPECT_CODEC_ERROR(decode_exact(*blosc, view(enc), 1000), "blosc: stream claims");
  EXPECT_CODEC_ERROR(decode_unbounded(*blosc, view(enc)), "more than the limit");

  auto lz4 = make_bytes_codec("numcodecs.lz4", nlohmann::json::object(), kSpec);
  auto lenc = encode_with(*lz4, ramp(1000));
  lenc[0] = lenc[1] = lenc[2] = lenc[3] = std::byte{0xff};
  EXPECT_CODEC_ERROR(decode_unbounded(*lz4, view(lenc)), "lz4: stream claims 4294967295");

  // zstd frame header with a 2^40-byte content size.
  auto zstd = make_bytes_codec("zstd", nlohmann::json::object(), kSpec);
  Buffer zenc = zstd->encode(view(ramp(1000)));
  std::vector<std::byte> big = {std::byte{0x28}, std::byte{0xb5}, std::byte{0x2f}, std::byte{0xfd},
                                std::byte{0xe0}};  // FCS 8 bytes, single segment
  for (int i = 0; i < 8; ++i) big.push_back(i == 5 ? std::byte{1} : std::byte{0});
  big.insert(big.end(), std::byte{1});
  EXPECT_CODEC_ERROR(decode_unbounded(*zstd, view(big)), "zstd");

  // gzip whose trailer claims 4 GB: the hint is ignored above the limit.
  auto gzip = make_bytes_codec("gzip", nlohmann::json::object(), kSpec);
  auto genc = encode_with(*gzip, ramp(1000));
  for (int i = 1; i <= 4; ++i) genc[genc.size() - i] = std::byte{0xff};
  EXPECT_THROW(decode_unbounded(*gzip, view(genc)), CodecError);

  // vlen header claiming 2^32-1 elements in 8 bytes.
  auto vlen = make_v2_object_codec({{"id", "vlen-utf8"}});
  ChunkData out;
  EXPECT_CODEC_ERROR(vlen->decode(view(from_hex("ffffffff00000000")), spec_of(DataType::string(), {4294967295ull}), out),
                     "truncated");
  // Packbits claiming more than the limit.
  auto pb = make_bytes_codec("packbits", nlohmann::json::object(), kSpec);
  EXPECT_CODEC_ERROR(decode_exact(*pb, view(from_hex("00ff")), 4), "packbits: stream claims 8");
  EXPECT_CODEC_ERROR(decode_exact(*pb, view(from_hex("09ff")), 4), "corrupt header");
}

TEST(CodecCorruption, VlenMalformed) {
  auto vlen = make_v2_object_codec({{"id", "vlen-utf8"}});
  ChunkData out;
  const ChunkSpec two = spec_of(DataType::string(), {2});
  EXPECT_CODEC_ERROR(vlen->decode(view(from_hex("0300000000000000000000000000000000000000")), two, out),
                     "holds 3 elements, expected 2");
  EXPECT_CODEC_ERROR(vlen->decode(view(from_hex("02000000010000006105000000")), two, out),
                     "element 1 claims 5 bytes");
  EXPECT_CODEC_ERROR(vlen->decode(view(from_hex("020000000100000061000000")), two, out), "truncated");
  EXPECT_CODEC_ERROR(vlen->decode(view(from_hex("020000000000000000000000ff")), two, out), "trailing");
}

TEST(CodecErrors, UnknownAndBadConfig) {
  EXPECT_CODEC_ERROR(make_bytes_codec("foo", nlohmann::json::object(), kSpec), "unknown codec 'foo'");
  EXPECT_CODEC_ERROR(make_v2_bytes_codec({{"id", "foo"}}, DataType::int_(4)), "unknown codec 'foo'");
  EXPECT_CODEC_ERROR(make_array_codec("bar", nlohmann::json::object(), kSpec), "unknown codec 'bar'");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("baz", nlohmann::json::object(), kSpec),
                     "unknown codec 'baz'");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("sharding_indexed", nlohmann::json::object(), kSpec),
                     "built by the zarr layer");
  EXPECT_CODEC_ERROR(make_bytes_codec("blosc", {{"cname", "nope"}}, kSpec), "'blosc'");
  EXPECT_CODEC_ERROR(make_bytes_codec("blosc", {{"cname", "nope"}}, kSpec), "'cname'");
  EXPECT_CODEC_ERROR(make_bytes_codec("blosc", {{"shuffle", "sideways"}}, kSpec), "'shuffle'");
  EXPECT_CODEC_ERROR(make_bytes_codec("blosc", {{"clevel", 12}}, kSpec), "'clevel'");
  EXPECT_CODEC_ERROR(make_bytes_codec("zstd", {{"level", "high"}}, kSpec), "'level'");
  EXPECT_CODEC_ERROR(make_bytes_codec("gzip", {{"level", 42}}, kSpec), "codec 'gzip'");
  EXPECT_CODEC_ERROR(make_bytes_codec("numcodecs.lzma", {{"format", 3}}, kSpec), "'filters'");
  EXPECT_CODEC_ERROR(make_bytes_codec("numcodecs.lzma", {{"format", 3}, {"filters", {{{"id", 999}}}}}, kSpec),
                     "unsupported lzma filter id 999");
  EXPECT_CODEC_ERROR(make_v2_bytes_codec({{"id", "delta"}}, DataType::int_(4)), "'dtype'");
  EXPECT_CODEC_ERROR(make_v2_bytes_codec({{"id", "delta"}, {"dtype", "<x9"}}, DataType::int_(4)),
                     "codec 'delta': bad configuration key 'dtype'");
  EXPECT_CODEC_ERROR(make_v2_bytes_codec({{"id", "quantize"}, {"digits", 2}, {"dtype", "<i4"}},
                                         DataType::int_(4)), "'dtype'");
  EXPECT_CODEC_ERROR(make_v2_bytes_codec({{"id", "categorize"}, {"labels", {"a"}}, {"dtype", "|O"}},
                                         DataType::string()), "'dtype'");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("bytes", {{"endian", "middle"}}, kSpec), "'endian'");
  EXPECT_CODEC_ERROR(make_array_to_bytes_codec("bytes", nlohmann::json::object(), kSpec), "'endian'");
  EXPECT_CODEC_ERROR(make_array_codec("transpose", {{"order", {0, 0}}}, spec_of(DataType::int_(4), {2, 2})),
                     "'order'");
  EXPECT_CODEC_ERROR(make_v2_object_codec({{"id", "pickle"}}), "'pickle' is not supported");
  EXPECT_CODEC_ERROR(make_v2_object_codec({{"id", "json2"}}), "'json2' is not supported");
  EXPECT_CODEC_ERROR(make_v2_object_codec({{"id", "msgpack2"}}), "'msgpack2' is not supported");
  EXPECT_CODEC_ERROR(make_v2_bytes_codec({{"cname", "lz4"}}, DataType::int_(4)), "'id'");
}

}  // namespace
}  // namespace lazycube::codec::testing
