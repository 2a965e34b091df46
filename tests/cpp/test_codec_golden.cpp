// Decoding data written by other implementations. The hex strings were produced with Debian's
// numcodecs 0.11 (/usr/bin/python3), e.g. bytes(numcodecs.Zstd(5).encode(np.arange(10,
// dtype='<i4'))).hex(); each test names the exact call. Fletcher-32 is not in numcodecs 0.11:
// its data comes from the zarr-python fixtures in ../shared/data.
#include <filesystem>
#include <fstream>

#include "test_codec_helpers.hpp"

namespace lazycube::codec::testing {
namespace {

const ChunkSpec kI4 = spec_of(DataType::int_(4), {10});

std::vector<std::int32_t> iota_i4(int n) {
  std::vector<std::int32_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// Decodes `hex` with a v2 codec object and compares with np.arange(n, dtype='<i4').
void expect_arange(const nlohmann::json& codec, std::string_view hex, int n) {
  SCOPED_TRACE(codec.dump());
  auto c = make_v2_bytes_codec(codec, DataType::int_(4));
  const auto enc = from_hex(hex);
  EXPECT_EQ(from_bytes<std::int32_t>(view(decode_exact(*c, view(enc), 4 * n))), iota_i4(n));
  EXPECT_EQ(from_bytes<std::int32_t>(view(decode_unbounded(*c, view(enc)))), iota_i4(n));
  std::vector<std::byte> dest(4 * n);
  c->decode_into(view(enc), {dest.data(), dest.size()});
  EXPECT_EQ(from_bytes<std::int32_t>(view(dest)), iota_i4(n));
}

TEST(CodecGolden, Blosc) {
  // Blosc(cname='lz4', clevel=5, shuffle=1).encode(np.arange(256, dtype='<i4'))
  expect_arange({{"id", "blosc"}, {"cname", "lz4"}, {"clevel", 5}, {"shuffle", 1}, {"blocksize", 0}},
                "020121040004000000040000450100001400000000010000000102030405060708090a0b0c0d0e0f"
                "101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f3031323334353637"
                "38393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
                "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f8081828384858687"
                "88898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeaf"
                "b0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7"
                "d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"
                "0b0000001f000100e75000000000000b0000001f000100e75000000000000b0000001f000100e750"
                "0000000000",
                256);
}

TEST(CodecGolden, BloscZstdBitshuffleFloat64) {
  // Blosc(cname='zstd', clevel=5, shuffle=2).encode(np.arange(256, dtype='<f8'))
  auto c = make_v2_bytes_codec({{"id", "blosc"}, {"cname", "zstd"}, {"clevel", 5}, {"shuffle", 2}},
                               DataType::float_(8));
  const auto enc = from_hex(
      "0201940800080000000800007c000000140000006400000028b52ffd600007d5020004020000aaccf00000aa"
      "aa00ffaacccc00ffa0ccf0f0c8f000f202ff020200fcff001da0f0f2369082443e3422c4bd11f54439af0476"
      "dc1d380696c7f0e012bb9ce620d9dfe4e6d0e558bb5eb9a81fe44b0c9d05b90eabfd0105");
  const auto out = from_bytes<double>(view(decode_exact(*c, view(enc), 2048)));
  ASSERT_EQ(out.size(), 256u);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(out[i], i);
}

TEST(CodecGolden, Compressors) {
  // Zstd(5).encode(np.arange(10, dtype='<i4'))
  expect_arange({{"id", "zstd"}, {"level", 5}},
                "28b52ffd202841010000000000010000000200000003000000040000000500000006000000070000"
                "000800000009000000", 10);
  // `zstd -c --no-check` of the same bytes from stdin: a frame without a content size.
  expect_arange({{"id", "zstd"}, {"level", 5}},
                "28b52ffd005841010000000000010000000200000003000000040000000500000006000000070000"
                "000800000009000000", 10);
  // LZ4().encode(np.arange(10, dtype='<i4'))
  expect_arange({{"id", "lz4"}, {"acceleration", 1}},
                "28000000f01900000000010000000200000003000000040000000500000006000000070000000800"
                "000009000000", 10);
  // GZip(1).encode(np.arange(10, dtype='<i4'))
  expect_arange({{"id", "gzip"}, {"level", 1}},
                "1f8b08002e7f026b04ff0dc3890d00200c04a0d3fa75ff85858424194ecbe5f6787db61f0279ef8d"
                "28000000", 10);
  // Zlib(1).encode(np.arange(10, dtype='<i4'))
  expect_arange({{"id", "zlib"}, {"level", 1}},
                "78010dc3890d00200c04a0d3fa75ff85858424194ecbe5f6787db61f02bc002e", 10);
  // BZ2(1).encode(np.arange(10, dtype='<i4'))
  expect_arange({{"id", "bz2"}, {"level", 1}},
                "425a6831314159265359312fccce000001c0007fe0200021900c8400c1c113579bc9a241f1772453"
                "85090312fccce0", 10);
  // LZMA().encode(np.arange(10, dtype='<i4'))  (xz container, CRC64)
  expect_arange({{"id", "lzma"}, {"format", 1}, {"check", -1}, {"preset", nullptr}, {"filters", nullptr}},
                "fd377a585a000004e6d6b4460200210116000000742fe5a3e0002700175d0000687ebf0a82ad1ce6"
                "5c818cf6d9477bccf98d5d3667520000dd25b14807784cff00013328e17858e11fb6f37d01000000"
                "0004595a", 10);
  // LZMA(format=lzma.FORMAT_ALONE).encode(...)
  expect_arange({{"id", "lzma"}, {"format", 2}},
                "5d00008000ffffffffffffffff0000687ebf0a82ad1ce65c818cf6d9477bccf98d601722c9ffff13"
                "540000", 10);
  // LZMA(format=lzma.FORMAT_RAW, filters=[dict(id=lzma.FILTER_DELTA, dist=4),
  //                                        dict(id=lzma.FILTER_LZMA2, preset=1)]).encode(...)
  expect_arange({{"id", "lzma"}, {"format", 3},
                 {"filters", {{{"id", 3}, {"dist", 4}}, {{"id", 33}, {"preset", 1}}}}},
                "e0002700095d0000687eca427eef400000", 10);
}

TEST(CodecGolden, GzipMultiMember) {
  // Two gzip members (`gzip -c` of bytes 0..40 and 40..80 of np.arange(300, dtype='<i4')).
  auto c = make_v2_bytes_codec({{"id", "gzip"}, {"level", 1}}, DataType::int_(4));
  const auto enc = from_hex(
      "1f8b08000000000000030dc3890d00200c04a0d3fa75ff85858424194ecbe5f6787db61f0279ef8d2800000"
      "01f8b08000000000000030dc3c90d00201004a0797baeda7faf42424bd21d4e97dbf2787d7e4bd4738928000000");
  EXPECT_EQ(from_bytes<std::int32_t>(view(decode_exact(*c, view(enc), 80))), iota_i4(20));
  EXPECT_EQ(from_bytes<std::int32_t>(view(decode_unbounded(*c, view(enc)))), iota_i4(20));
  std::vector<std::byte> dest(80);
  c->decode_into(view(enc), {dest.data(), dest.size()});
  EXPECT_EQ(from_bytes<std::int32_t>(view(dest)), iota_i4(20));
}

TEST(CodecGolden, Checksums) {
  // Adler32().encode(np.arange(10, dtype='<i4')) and CRC32().encode(...): checksum prefix.
  expect_arange({{"id", "adler32"}},
                "2e00bc0200000000010000000200000003000000040000000500000006000000070000000800000009000000",
                10);
  expect_arange({{"id", "crc32"}},
                "0279ef8d00000000010000000200000003000000040000000500000006000000070000000800000009000000",
                10);
  // Shuffle(elementsize=4).encode(np.arange(10, dtype='<i4'))
  expect_arange({{"id", "shuffle"}, {"elementsize", 4}},
                "00010203040506070809000000000000000000000000000000000000000000000000000000000000", 10);
}

TEST(CodecGolden, Filters) {
  const ChunkSpec any = spec_of(DataType::uint(1), {1});
  // Delta(dtype='<i2', astype='|i1').encode(np.array([100, 102, ..., 118], dtype='<i2'))
  auto delta = make_v2_bytes_codec({{"id", "delta"}, {"dtype", "<i2"}, {"astype", "|i1"}},
                                   DataType::int_(2));
  const auto d = from_bytes<std::int16_t>(view(decode_exact(*delta, view(from_hex("64020202020202020202")), 20)));
  for (int i = 0; i < 10; ++i) EXPECT_EQ(d[i], 100 + 2 * i);
  EXPECT_EQ(*delta->encoded_dtype(DataType::int_(2)), DataType::int_(1));

  // FixedScaleOffset(offset=1000, scale=10, dtype='<f8', astype='|u1')
  //   .encode(np.linspace(1000, 1001, 10))
  auto fso = make_v2_bytes_codec(
      {{"id", "fixedscaleoffset"}, {"offset", 1000}, {"scale", 10}, {"dtype", "<f8"}, {"astype", "|u1"}},
      DataType::float_(8));
  const auto f = from_bytes<double>(view(decode_exact(*fso, view(from_hex("0001020304060708090a")), 80)));
  const std::vector<double> f_expected = {1000.0, 1000.1, 1000.2, 1000.3, 1000.4,
                                          1000.6, 1000.7, 1000.8, 1000.9, 1001.0};
  EXPECT_EQ(f, f_expected);  // bit-exact with numcodecs' decode

  // Quantize(digits=1, dtype='<f8', astype='<f4').encode(np.linspace(0, 1, 10))
  auto q = make_v2_bytes_codec({{"id", "quantize"}, {"digits", 1}, {"dtype", "<f8"}, {"astype", "<f4"}},
                               DataType::float_(8));
  const auto qd = from_bytes<double>(view(decode_exact(
      *q, view(from_hex("000000000000003e0000803e0000a03e0000e03e0000103f0000303f0000403f0000603f0000803f")),
      80)));
  const std::vector<double> q_expected = {0.0, 0.125, 0.25, 0.3125, 0.4375, 0.5625, 0.6875, 0.75, 0.875, 1.0};
  EXPECT_EQ(qd, q_expected);
  // Our encoder agrees with numcodecs bit for bit.
  std::vector<double> lin(10);
  for (int i = 0; i < 10; ++i) lin[i] = i / 9.0;
  const Buffer qenc = q->encode(view(as_bytes(lin)));
  EXPECT_EQ(std::vector<std::byte>(qenc.view().begin(), qenc.view().end()),
            from_hex("000000000000003e0000803e0000a03e0000e03e0000103f0000303f0000403f0000603f0000803f"));

  // AsType(encode_dtype='|i1', decode_dtype='<i8').encode(np.arange(5, dtype='<i8') * 3 - 4)
  auto at = make_v2_bytes_codec({{"id", "astype"}, {"encode_dtype", "|i1"}, {"decode_dtype", "<i8"}},
                                DataType::int_(8));
  EXPECT_EQ(from_bytes<std::int64_t>(view(decode_exact(*at, view(from_hex("fcff020508")), 40))),
            (std::vector<std::int64_t>{-4, -1, 2, 5, 8}));

  // PackBits().encode(np.array([True, False, False, True, True]))
  auto pb = make_v2_bytes_codec({{"id", "packbits"}}, DataType::boolean());
  EXPECT_EQ(decode_exact(*pb, view(from_hex("0398")), 5), from_hex("0100000101"));

  // Categorize(['ümlaut', 'b', 'ccc'], dtype='<U4').encode(np.array(['b', 'ccc', 'x', 'ümla', 'b'],
  // dtype='<U4')) -> decodes to ['b', 'ccc', '', '', 'b']
  auto cat = make_v2_bytes_codec(
      {{"id", "categorize"}, {"labels", {"\xc3\xbcmlaut", "b", "ccc"}}, {"dtype", "<U4"}, {"astype", "|u1"}},
      DataType::unicode(4));
  const auto cells = from_bytes<char32_t>(view(decode_exact(*cat, view(from_hex("0203000002")), 80)));
  const std::vector<char32_t> expected = {U'b', 0, 0, 0, U'c', U'c', U'c', 0, 0, 0, 0, 0,
                                          0,    0, 0, 0, U'b', 0,    0,    0};
  EXPECT_EQ(cells, expected);
  (void)any;
}

TEST(CodecGolden, DeltaBigEndian) {
  // Delta(dtype='>i4').encode(np.arange(5, dtype='>i4') * 7)
  auto delta = make_v2_bytes_codec({{"id", "delta"}, {"dtype", ">i4"}}, DataType::int_(4));
  // np.arange(5, dtype='>i4') * 7 is native '<i4', which Delta viewed as '>i4': the decoded bytes
  // are that little-endian input again.
  EXPECT_EQ(decode_exact(*delta, view(from_hex("0000000007000000070000000700000007000000")), 20),
            from_hex("00000000070000000e000000150000001c000000"));
}

TEST(CodecGolden, VlenUtf8AndBytes) {
  // VLenUTF8().encode(np.array(['a', 'héllo', '', '日本'], dtype=object))
  auto utf8 = make_v2_object_codec({{"id", "vlen-utf8"}});
  ChunkData out;
  utf8->decode(view(from_hex("0400000001000000610600000068c3a96c6c6f0000000006000000e697a5e69cac")),
               spec_of(DataType::string(), {2, 2}), out);
  EXPECT_EQ(out.strings, (std::vector<std::string>{"a", "h\xc3\xa9llo", "", "\xe6\x97\xa5\xe6\x9c\xac"}));
  // VLenBytes().encode(np.array([b'a', b'\x00\x01', b''], dtype=object))
  auto raw = make_v2_object_codec({{"id", "vlen-bytes"}});
  raw->decode(view(from_hex("03000000010000006102000000000100000000")), spec_of(DataType::vlen_bytes(), {3}), out);
  EXPECT_EQ(out.strings, (std::vector<std::string>{"a", std::string("\0\1", 2), ""}));
}

// Chunk 0.0 of a zarr-python fixture: 50x50 '<u2' of np.arange(10000).reshape(100, 100).
std::vector<std::byte> read_fixture(const std::string& name, const std::string& chunk) {
  const std::filesystem::path path = std::filesystem::path(LAZYCUBE_SHARED_DATA_DIR) /
                                     "zarr-fixtures/zarrs/zarr_python_compat" / name / chunk;
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  std::vector<char> raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(raw.size());
  std::memcpy(out.data(), raw.data(), raw.size());
  return out;
}

void expect_fixture_chunks(const std::string& fixture, const std::string& id) {
  if (!std::filesystem::exists(LAZYCUBE_SHARED_DATA_DIR))
    GTEST_SKIP() << "shared data not found at " << LAZYCUBE_SHARED_DATA_DIR;
  auto codec = make_v2_bytes_codec({{"id", id}}, DataType::uint(2));
  for (int ci = 0; ci < 2; ++ci) {
    for (int cj = 0; cj < 2; ++cj) {
      const auto enc = read_fixture(fixture, std::to_string(ci) + "." + std::to_string(cj));
      if (enc.empty()) GTEST_SKIP() << fixture << " not found";
      const auto values = from_bytes<std::uint16_t>(view(decode_exact(*codec, view(enc), 5000)));
      ASSERT_EQ(values.size(), 2500u);
      for (int i = 0; i < 50; ++i)
        for (int j = 0; j < 50; ++j)
          ASSERT_EQ(values[i * 50 + j], (ci * 50 + i) * 100 + cj * 50 + j);
    }
  }
}

TEST(CodecGolden, Fletcher32Fixture) { expect_fixture_chunks("fletcher32.zarr", "fletcher32"); }
TEST(CodecGolden, Adler32Fixture) { expect_fixture_chunks("adler32.zarr", "adler32"); }

}  // namespace
}  // namespace lazycube::codec::testing
