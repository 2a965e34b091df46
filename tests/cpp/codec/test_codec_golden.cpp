// Decoding data written by other implementations. Most hex strings were produced with Debian's
// numcodecs 0.11 (/usr/bin/python3), e.g. bytes(numcodecs.Zstd(5).encode(np.arange(10,
// dtype='<i4'))).hex(); each names the exact call. Fletcher-32 is not in numcodecs 0.11: its
// data comes from HDF5 (h5py) and from the zarr-python fixtures in ../shared/data. Every
// registered codec must have at least one reference in the table.
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "test_codec_helpers.hpp"

namespace lazycube::codec::testing {
namespace {

std::vector<std::int32_t> iota_i4(int n) {
  std::vector<std::int32_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

template <class T>
ChunkData cells(const std::vector<T>& values) {
  ChunkData d;
  d.bytes = Buffer::copy_of(view(as_bytes(values)));
  return d;
}
ChunkData arange_i4(int n) { return cells(iota_i4(n)); }
ChunkData texts(std::vector<std::string> s) {
  ChunkData d;
  d.strings = std::move(s);
  return d;
}

// Bytes another implementation wrote, and what they decode to.
struct Reference {
  std::string made_by;   // the call that wrote `hex`
  nlohmann::json codec;  // a v2 codec object {"id": ...}, or v3 {"name": ..., "configuration": ...}
  ChunkSpec spec;        // the decoded side
  std::string hex;
  ChunkData decoded;

  // The registry id of the codec (v2 id, or v3 name less its numcodecs. prefix).
  std::string id() const {
    if (codec.contains("id")) return codec["id"].get<std::string>();
    const auto name = codec["name"].get<std::string>();
    return name.starts_with("numcodecs.") ? name.substr(10) : name;
  }
};

const ChunkSpec kI4 = spec_of(DataType::int_(4), {10});
// ecCodes' GRIB2 sample on a 3 x 2 grid, IEEE float32 packing (see its reference below).
constexpr std::string_view kGrib2Hex =
    "47524942ffff000200000000000000c200000015010062000004000107d703170c00000002000000480300000000060000000000ff"
    "ffffffffffffffffffffffffffff000000030000000200000000ffffffff039387000000000030038444c0001e8480000f424000"
    "0f424000000000220400000000000000ff80000000010000000001ffffffffffffffffffffff0000000c05000000060004010000"
    "000606ff0000001d073f80000040200000c040000042c800003e8000004388c00037373737";
// Quantize(digits=1, dtype='<f8', astype='<f4').encode(np.linspace(0, 1, 10))
constexpr std::string_view kQuantizeHex =
    "000000000000003e0000803e0000a03e0000e03e0000103f0000303f0000403f0000603f0000803f";

const std::vector<Reference>& references() {
  using nlohmann::json;
  static const std::vector<Reference> refs = {
      {"Blosc(cname='lz4', clevel=5, shuffle=1).encode(np.arange(256, dtype='<i4'))",
       {{"id", "blosc"}, {"cname", "lz4"}, {"clevel", 5}, {"shuffle", 1}, {"blocksize", 0}},
       spec_of(DataType::int_(4), {256}),
       "020121040004000000040000450100001400000000010000000102030405060708090a0b0c0d0e0f"
                "101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f3031323334353637"
                "38393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
                "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f8081828384858687"
                "88898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeaf"
                "b0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7"
                "d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"
                "0b0000001f000100e75000000000000b0000001f000100e75000000000000b0000001f000100e750"
                "0000000000",
       arange_i4(256)},
      {"Zstd(5).encode(np.arange(10, dtype='<i4'))", {{"id", "zstd"}, {"level", 5}}, kI4,
       "28b52ffd202841010000000000010000000200000003000000040000000500000006000000070000"
       "000800000009000000", arange_i4(10)},
      {"`zstd -c --no-check` of the same bytes from stdin: a frame without a content size",
       {{"id", "zstd"}, {"level", 5}}, kI4,
       "28b52ffd005841010000000000010000000200000003000000040000000500000006000000070000"
       "000800000009000000", arange_i4(10)},
      {"LZ4().encode(np.arange(10, dtype='<i4'))", {{"id", "lz4"}, {"acceleration", 1}}, kI4,
       "28000000f01900000000010000000200000003000000040000000500000006000000070000000800"
       "000009000000", arange_i4(10)},
      {"GZip(1).encode(np.arange(10, dtype='<i4'))", {{"id", "gzip"}, {"level", 1}}, kI4,
       "1f8b08002e7f026b04ff0dc3890d00200c04a0d3fa75ff85858424194ecbe5f6787db61f0279ef8d"
       "28000000", arange_i4(10)},
      {"Zlib(1).encode(np.arange(10, dtype='<i4'))", {{"id", "zlib"}, {"level", 1}}, kI4,
       "78010dc3890d00200c04a0d3fa75ff85858424194ecbe5f6787db61f02bc002e", arange_i4(10)},
      {"BZ2(1).encode(np.arange(10, dtype='<i4'))", {{"id", "bz2"}, {"level", 1}}, kI4,
       "425a6831314159265359312fccce000001c0007fe0200021900c8400c1c113579bc9a241f1772453"
       "85090312fccce0", arange_i4(10)},
      {"LZMA().encode(np.arange(10, dtype='<i4'))  (xz container, CRC64)",
       {{"id", "lzma"}, {"format", 1}, {"check", -1}, {"preset", nullptr}, {"filters", nullptr}}, kI4,
       "fd377a585a000004e6d6b4460200210116000000742fe5a3e0002700175d0000687ebf0a82ad1ce6"
       "5c818cf6d9477bccf98d5d3667520000dd25b14807784cff00013328e17858e11fb6f37d01000000"
       "0004595a", arange_i4(10)},
      {"LZMA(format=lzma.FORMAT_ALONE).encode(np.arange(10, dtype='<i4'))",
       {{"id", "lzma"}, {"format", 2}}, kI4,
       "5d00008000ffffffffffffffff0000687ebf0a82ad1ce65c818cf6d9477bccf98d601722c9ffff13"
       "540000", arange_i4(10)},
      {"LZMA(format=lzma.FORMAT_RAW, filters=[dict(id=lzma.FILTER_DELTA, dist=4), "
       "dict(id=lzma.FILTER_LZMA2, preset=1)]).encode(np.arange(10, dtype='<i4'))",
       {{"id", "lzma"}, {"format", 3}, {"filters", {{{"id", 3}, {"dist", 4}}, {{"id", 33}, {"preset", 1}}}}},
       kI4, "e0002700095d0000687eca427eef400000", arange_i4(10)},
      {"Adler32().encode(np.arange(10, dtype='<i4')): checksum prefix", {{"id", "adler32"}}, kI4,
       "2e00bc0200000000010000000200000003000000040000000500000006000000070000000800000009000000",
       arange_i4(10)},
      {"CRC32().encode(np.arange(10, dtype='<i4')): checksum prefix", {{"id", "crc32"}}, kI4,
       "0279ef8d00000000010000000200000003000000040000000500000006000000070000000800000009000000",
       arange_i4(10)},
      {"CRC-32C of b'123456789' is 0xe3069283 (RFC 3720's check value), stored little-endian after the data",
       {{"name", "crc32c"}}, spec_of(DataType::uint(1), {9}), "313233343536373839839206e3",
       cells(std::vector<std::uint8_t>{'1', '2', '3', '4', '5', '6', '7', '8', '9'})},
      {"h5py 3.7 / HDF5 1.10.8 create_dataset(data=np.arange(10, dtype='<i4'), chunks=(10,), "
       "fletcher32=True), dset.id.read_direct_chunk((0,))",
       {{"id", "fletcher32"}}, kI4,
       "00000000010000000200000003000000040000000500000006000000070000000800000009000000002d014a",
       arange_i4(10)},
      {"Shuffle(elementsize=4).encode(np.arange(10, dtype='<i4'))", {{"id", "shuffle"}, {"elementsize", 4}},
       kI4, "00010203040506070809000000000000000000000000000000000000000000000000000000000000",
       arange_i4(10)},
      {"Delta(dtype='<i2', astype='|i1').encode(np.array([100, 102, ..., 118], dtype='<i2'))",
       {{"id", "delta"}, {"dtype", "<i2"}, {"astype", "|i1"}}, spec_of(DataType::int_(2), {10}),
       "64020202020202020202",
       cells(std::vector<std::int16_t>{100, 102, 104, 106, 108, 110, 112, 114, 116, 118})},
      {"FixedScaleOffset(offset=1000, scale=10, dtype='<f8', astype='|u1').encode(np.linspace(1000, "
       "1001, 10)), decoded bit-exact as numcodecs decodes it",
       {{"id", "fixedscaleoffset"}, {"offset", 1000}, {"scale", 10}, {"dtype", "<f8"}, {"astype", "|u1"}},
       spec_of(DataType::float_(8), {10}), "0001020304060708090a",
       cells(std::vector<double>{1000.0, 1000.1, 1000.2, 1000.3, 1000.4, 1000.6, 1000.7, 1000.8, 1000.9,
                                 1001.0})},
      {"Quantize(digits=1, dtype='<f8', astype='<f4').encode(np.linspace(0, 1, 10))",
       {{"id", "quantize"}, {"digits", 1}, {"dtype", "<f8"}, {"astype", "<f4"}},
       spec_of(DataType::float_(8), {10}), std::string(kQuantizeHex),
       cells(std::vector<double>{0.0, 0.125, 0.25, 0.3125, 0.4375, 0.5625, 0.6875, 0.75, 0.875, 1.0})},
      {"AsType(encode_dtype='|i1', decode_dtype='<i8').encode(np.arange(5, dtype='<i8') * 3 - 4)",
       {{"id", "astype"}, {"encode_dtype", "|i1"}, {"decode_dtype", "<i8"}}, spec_of(DataType::int_(8), {5}),
       "fcff020508", cells(std::vector<std::int64_t>{-4, -1, 2, 5, 8})},
      {"PackBits().encode(np.array([True, False, False, True, True]))", {{"id", "packbits"}},
       spec_of(DataType::boolean(), {5}), "0398", cells(std::vector<std::uint8_t>{1, 0, 0, 1, 1})},
      {"Categorize(['\u00fcmlaut', 'b', 'ccc'], dtype='<U4').encode(np.array(['b', 'ccc', 'x', "
       "'\u00fcmla', 'b'], dtype='<U4')) -> decodes to ['b', 'ccc', '', '', 'b']",
       {{"id", "categorize"}, {"labels", {"\xc3\xbcmlaut", "b", "ccc"}}, {"dtype", "<U4"}, {"astype", "|u1"}},
       spec_of(DataType::unicode(4), {5}), "0203000002",
       cells(std::vector<char32_t>{U'b', 0, 0, 0, U'c', U'c', U'c', 0, 0, 0, 0, 0, 0, 0, 0, 0, U'b', 0, 0, 0})},
      {"VLenUTF8().encode(np.array(['a', 'h\u00e9llo', '', '\u65e5\u672c'], dtype=object))",
       {{"id", "vlen-utf8"}}, spec_of(DataType::string(), {2, 2}),
       "0400000001000000610600000068c3a96c6c6f0000000006000000e697a5e69cac",
       texts({"a", "h\xc3\xa9llo", "", "\xe6\x97\xa5\xe6\x9c\xac"})},
      {"VLenBytes().encode(np.array([b'a', b'\\x00\\x01', b''], dtype=object))", {{"id", "vlen-bytes"}},
       spec_of(DataType::vlen_bytes(), {3}), "03000000010000006102000000000100000000",
       texts({"a", std::string("\0\1", 2), ""})},
      {"np.arange(10, dtype='>i4').tobytes(): the Zarr v3 spec's big-endian `bytes`",
       {{"name", "bytes"}, {"configuration", {{"endian", "big"}}}}, kI4,
       "00000000000000010000000200000003000000040000000500000006000000070000000800000009",
       arange_i4(10)},
      {"np.arange(6, dtype='<i4').reshape(2, 3).T.tobytes() (C order): the Zarr v3 spec's "
       "transpose with order [1, 0]",
       {{"name", "transpose"}, {"configuration", {{"order", {1, 0}}}}}, spec_of(DataType::int_(4), {2, 3}),
       "000000000300000001000000040000000200000005000000", arange_i4(6)},
      // The Zarr v3 codecs of the zarr-extensions registry. No other implementation of them runs
      // here (zarrs is Rust, zarr-python 3 is not installable): their bytes come from numpy,
      // numcodecs and libzfp following each registry entry.
      {"numpy: e = np.float32([0, 1, 2.5, -3, 100]); decoded e / np.float32(0.1) + np.float32(5) "
       "(scale_offset decodes in float32)",
       {{"name", "scale_offset"}, {"configuration", {{"offset", 5}, {"scale", 0.1}}}}, spec_of(DataType::float_(4), {5}),
       "000000000000803f00002040000040c00000c842", cells(std::vector<float>{5.0f, 15.0f, 30.0f, -25.0f, 1005.0f})},
      {"numpy: np.uint8([0, 1, 2, 255]).tobytes() cast to float64 (exactly representable)",
       {{"name", "cast_value"}, {"configuration", {{"data_type", "uint8"}}}}, spec_of(DataType::float_(8), {4}), "000102ff",
       cells(std::vector<double>{0, 1, 2, 255})},
      {"numcodecs 0.11 BitRound(keepbits=3).encode(np.float32([0, 1.23456789, -8.3587192834, 98765.4321])): "
       "decoding is the identity",
       {{"name", "bitround"}, {"configuration", {{"keepbits", 3}}}}, spec_of(DataType::float_(4), {4}),
       "000000000000a03f000000c10000c047", cells(std::vector<float>{0.0f, 1.25f, -8.0f, 98304.0f})},
      {"numpy: np.arange(6, dtype='<i4').reshape(2, 3).reshape(-1).tobytes() (reshape keeps C order)",
       {{"name", "reshape"}, {"configuration", {{"shape", json::array({-1})}}}}, spec_of(DataType::int_(4), {2, 3}),
       "000000000100000002000000030000000400000005000000", arange_i4(6)},
      {"numpy: np.packbits([1, 0, 0, 1, 1], bitorder='little') after the padding count 3 (first_byte)",
       {{"name", "packbits"}, {"configuration", {{"padding_encoding", "first_byte"}}}}, spec_of(DataType::boolean(), {5}),
       "0319", cells(std::vector<std::uint8_t>{1, 0, 0, 1, 1})},
      {"libzfp 1.0.0: zfp_stream_set_reversible, zfp_compress of zfp_field_2d(a, zfp_type_double, 4, 4) with "
       "a[i] = i * 0.5 - 3",
       {{"name", "zfp"}, {"configuration", {{"mode", "reversible"}}}}, spec_of(DataType::float_(8), {4, 4}), "09b0602b04",
       cells(std::vector<double>{-3, -2.5, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5})},
      {"the optional proposal's layout by hand: mask byte 0x01 (codecs[0] applied), then "
       "Zstd(5).encode(np.arange(10, dtype='<i4')) from numcodecs",
       {{"name", "optional"}, {"configuration", {{"codecs", json::array({{{"name", "zstd"}, {"configuration", {{"level", 5}}}}})}}}},
       kI4,
       "0128b52ffd202841010000000000010000000200000003000000040000000500000006000000070000"
       "000800000009000000", arange_i4(10)},
      {"the same under the registry's name `conditional`, header_bits 16: mask bytes 01 00",
       {{"name", "conditional"},
        {"configuration", {{"codecs", json::array({{{"name", "zstd"}, {"configuration", {{"level", 5}}}}})}, {"header_bits", 16}}}},
       kI4,
       "010028b52ffd202841010000000000010000000200000003000000040000000500000006000000070000"
       "000800000009000000", arange_i4(10)},
      // Virtual GRIB: messages written by ecCodes 2.28 (the library the codec decodes with; no
      // other GRIB decoder is installed) from its samples, on a 3 x 2 grid (Ni = 3, Nj = 2).
      {"ecCodes 2.28: sample GRIB2, packingType grid_ieee, precision 1 (float32), values "
       "{1, 2.5, -3, 100, 0.25, 273.5}",
       {{"name", "gribberish"}, {"configuration", {{"var", "t"}}}}, spec_of(DataType::float_(8), {2, 3}), std::string(kGrib2Hex),
       cells(std::vector<double>{1, 2.5, -3, 100, 0.25, 273.5})},
      {"the same message as kerchunk's v2 grib filter on a float32 array",
       {{"id", "gribberish"}, {"var", "t"}, {"dtype", "<f4"}}, spec_of(DataType::float_(4), {6}), std::string(kGrib2Hex),
       cells(std::vector<float>{1, 2.5f, -3, 100, 0.25f, 273.5f})},
      {"ecCodes 2.28: sample GRIB1, bitsPerValue 8, bitmapPresent 1, values {0, 1, 2, 3, missing, 5}",
       {{"id", "grib"}, {"var", "t"}, {"dtype", "<f8"}}, spec_of(DataType::float_(8), {6}),
       "475249420000780100003480627fffc0816401f40603100c00010000000000001500000000000000000000000000000001010204"
       "013030303100000000002000ff000003000200ea600000008000e6780007d003e803e800000000000000080a0000f40000001000"
       "8005000000000800204060a037373737",
       cells(std::vector<double>{0, 1, 2, 3, std::numeric_limits<double>::quiet_NaN(), 5})},
  };
  return refs;
}

void expect_decodes(const Reference& r) {
  SCOPED_TRACE(r.made_by);
  const auto enc = from_hex(r.hex);
  ChunkData out;
  const auto bytes_of = [](const ChunkData& d) { return std::vector<std::byte>(d.bytes.view().begin(), d.bytes.view().end()); };
  if (r.codec.contains("id") && is_v2_object_codec(r.id())) {
    make_v2_object_codec(r.codec)->decode(view(enc), r.spec, out);
  } else if (r.codec.contains("id")) {
    const auto c = make_v2_bytes_codec(r.codec, r.spec.dtype);
    const auto want = bytes_of(r.decoded);
    EXPECT_EQ(decode_unbounded(*c, view(enc)), want);
    std::vector<std::byte> dest(want.size());
    c->decode_into(view(enc), {dest.data(), dest.size()});
    EXPECT_EQ(dest, want);
    out.bytes = Buffer::copy_of(view(decode_exact(*c, view(enc), want.size())));
  } else {
    const std::string name = r.codec["name"].get<std::string>();
    const nlohmann::json config = r.codec.value("configuration", nlohmann::json::object());
    switch (*v3_codec_kind(name)) {
      case CodecKind::BytesToBytes:
        out.bytes = Buffer::copy_of(view(decode_unbounded(*make_bytes_codec(name, config, r.spec), view(enc))));
        break;
      case CodecKind::ArrayToBytes:
        make_array_to_bytes_codec(name, config, r.spec)->decode(view(enc), r.spec, out);
        break;
      case CodecKind::ArrayToArray: {
        ChunkData in;
        in.bytes = Buffer::copy_of(view(enc));
        make_array_codec(name, config, r.spec)->decode(in, r.spec, out);
        break;
      }
    }
  }
  EXPECT_EQ(out.strings, r.decoded.strings);
  EXPECT_EQ(bytes_of(out), bytes_of(r.decoded));
}

// Every registered codec decodes bytes another implementation wrote (a new codec needs its
// reference above).
class CodecReference : public ::testing::TestWithParam<RegisteredCodec> {};

TEST_P(CodecReference, DecodesBytesAnotherImplementationWrote) {
#ifndef LAZYCUBE_HAVE_ZFP
  if (GetParam().id == "zfp") GTEST_SKIP() << "built without libzfp";
#endif
#ifndef LAZYCUBE_HAVE_ECCODES
  if (GetParam().id == "gribberish" || GetParam().id == "grib") GTEST_SKIP() << "built without ecCodes";
#endif
  int found = 0;
  for (const Reference& r : references()) {
    if (r.id() != GetParam().id) continue;
    ++found;
    expect_decodes(r);
  }
  EXPECT_GT(found, 0) << "no reference bytes for codec '" << GetParam().id << "' in " << __FILE__;
}

INSTANTIATE_TEST_SUITE_P(Registry, CodecReference, ::testing::ValuesIn(registered_codecs()),
                         codec_case_name);

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

TEST(CodecGolden, FilterTypesAndQuantizeEncoder) {
  auto delta = make_v2_bytes_codec({{"id", "delta"}, {"dtype", "<i2"}, {"astype", "|i1"}},
                                   DataType::int_(2));
  EXPECT_EQ(*delta->encoded_dtype(DataType::int_(2)), DataType::int_(1));
  // Our quantize encoder agrees with numcodecs bit for bit (its reference is above).
  auto q = make_v2_bytes_codec({{"id", "quantize"}, {"digits", 1}, {"dtype", "<f8"}, {"astype", "<f4"}},
                               DataType::float_(8));
  std::vector<double> lin(10);
  for (int i = 0; i < 10; ++i) lin[i] = i / 9.0;
  const Buffer qenc = q->encode(view(as_bytes(lin)));
  EXPECT_EQ(std::vector<std::byte>(qenc.view().begin(), qenc.view().end()), from_hex(kQuantizeHex));
}

TEST(CodecGolden, DeltaBigEndian) {
  // Delta(dtype='>i4').encode(np.arange(5, dtype='>i4') * 7)
  auto delta = make_v2_bytes_codec({{"id", "delta"}, {"dtype", ">i4"}}, DataType::int_(4));
  // np.arange(5, dtype='>i4') * 7 is native '<i4', which Delta viewed as '>i4': the decoded bytes
  // are that little-endian input again.
  EXPECT_EQ(decode_exact(*delta, view(from_hex("0000000007000000070000000700000007000000")), 20),
            from_hex("00000000070000000e000000150000001c000000"));
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
