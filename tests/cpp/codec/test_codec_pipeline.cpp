// CodecPipeline, the registry, and the array->bytes / array->array codecs.
#include <nlohmann/json.hpp>

#include "test_codec_helpers.hpp"

namespace lazycube::codec::testing {
namespace {

ChunkData chunk_of(std::vector<std::byte> bytes) {
  ChunkData d;
  d.bytes = Buffer::copy_of(view(bytes));
  return d;
}

std::vector<std::byte> iota_bytes_i4(std::size_t n) {
  std::vector<std::int32_t> v(n);
  std::iota(v.begin(), v.end(), -5);
  return as_bytes(v);
}

void expect_pipeline_round_trip(const CodecPipeline& p, const ChunkSpec& spec,
                                const std::vector<std::byte>& data) {
  SCOPED_TRACE(p.to_json().dump());
  const Buffer enc = p.encode(chunk_of(data), spec);
  std::vector<std::byte> dest(data.size());
  p.decode_into(enc.view(), spec, {dest.data(), dest.size()});
  EXPECT_EQ(dest, data);
  ChunkData out;
  p.decode(enc.view(), spec, out);
  EXPECT_EQ(std::vector<std::byte>(out.bytes.view().begin(), out.bytes.view().end()), data);
}

TEST(CodecKinds, V3Names) {
  EXPECT_EQ(v3_codec_kind("bytes"), CodecKind::ArrayToBytes);
  EXPECT_EQ(v3_codec_kind("sharding_indexed"), CodecKind::ArrayToBytes);
  EXPECT_EQ(v3_codec_kind("vlen-utf8"), CodecKind::ArrayToBytes);
  EXPECT_EQ(v3_codec_kind("vlen-bytes"), CodecKind::ArrayToBytes);
  EXPECT_EQ(v3_codec_kind("transpose"), CodecKind::ArrayToArray);
  for (const char* n : {"blosc", "zstd", "gzip", "crc32c", "numcodecs.lz4", "numcodecs.zlib",
                        "numcodecs.bz2", "numcodecs.lzma", "numcodecs.crc32", "numcodecs.adler32",
                        "numcodecs.fletcher32", "numcodecs.shuffle", "numcodecs.blosc"})
    EXPECT_EQ(v3_codec_kind(n), CodecKind::BytesToBytes) << n;
  for (const char* n : {"numcodecs.delta", "numcodecs.fixedscaleoffset", "numcodecs.quantize",
                        "numcodecs.astype", "numcodecs.packbits", "numcodecs.categorize"})
    EXPECT_EQ(v3_codec_kind(n), CodecKind::ArrayToArray) << n;
  EXPECT_FALSE(v3_codec_kind("zlib").has_value());
  EXPECT_FALSE(v3_codec_kind("foo").has_value());
  EXPECT_TRUE(is_v2_object_codec("vlen-utf8"));
  EXPECT_TRUE(is_v2_object_codec("vlen-bytes"));
  EXPECT_FALSE(is_v2_object_codec("pickle"));
}

TEST(CodecSpec, Sizes) {
  EXPECT_EQ(spec_of(DataType::float_(8), {3, 4}).nbytes(), 96u);
  EXPECT_EQ(spec_of(DataType::float_(8), {}).num_elements(), 1u);
  EXPECT_EQ(spec_of(DataType::float_(8), {3, 0}).nbytes(), 0u);
  EXPECT_CODEC_ERROR(spec_of(DataType::string(), {3}).nbytes(), "variable-length");
  EXPECT_THROW(spec_of(DataType::uint(1), {1ull << 40, 1ull << 40}).num_elements(), CodecError);
}

TEST(CodecBytes, EndianSwaps) {
  const ChunkSpec spec = spec_of(DataType::int_(4), {3});
  auto be = make_array_to_bytes_codec("bytes", {{"endian", "big"}}, spec);
  const auto data = as_bytes(std::vector<std::int32_t>{1, 2, -1});
  const Buffer enc = be->encode(chunk_of(data), spec);
  EXPECT_EQ(std::vector<std::byte>(enc.view().begin(), enc.view().end()),
            from_hex("0000000100000002ffffffff"));
  ChunkData out;
  be->decode(enc.view(), spec, out);
  EXPECT_EQ(std::vector<std::byte>(out.bytes.view().begin(), out.bytes.view().end()), data);
  EXPECT_EQ(*be->encoded_size(spec), 12u);
  EXPECT_EQ(be->to_json()["configuration"]["endian"], "big");
  // Complex swaps each half; unicode each code unit; 1-byte types need no endian.
  const ChunkSpec c8 = spec_of(DataType::complex(8), {1});
  auto be_c = make_endian_codec(ByteOrder::Big);
  const auto c = from_hex("0000803f00000040");  // 1.0f, 2.0f
  const Buffer cenc = be_c->encode(chunk_of(c), c8);
  EXPECT_EQ(std::vector<std::byte>(cenc.view().begin(), cenc.view().end()), from_hex("3f80000040000000"));
  auto u1 = make_array_to_bytes_codec("bytes", nlohmann::json::object(), spec_of(DataType::uint(1), {2}));
  EXPECT_EQ(*u1->encoded_size(spec_of(DataType::uint(1), {2})), 2u);
  EXPECT_CODEC_ERROR(be->decode(view(from_hex("00")), spec, out), "bytes: chunk holds 1 bytes, expected 12");
}

TEST(CodecPipeline, FastPathAndChains) {
  const ChunkSpec spec = spec_of(DataType::int_(4), {10, 30});
  const auto data = iota_bytes_i4(300);
  const std::vector<std::vector<std::pair<std::string, nlohmann::json>>> chains = {
      {},
      {{"zstd", {{"level", 3}}}},
      {{"blosc", {{"cname", "lz4"}, {"clevel", 5}, {"shuffle", "shuffle"}, {"typesize", 4}}}},
      {{"crc32c", nlohmann::json::object()}},
      {{"zstd", {{"level", 1}}}, {"crc32c", nlohmann::json::object()}},
      {{"numcodecs.shuffle", {{"elementsize", 4}}}, {"gzip", {{"level", 1}}},
       {"numcodecs.adler32", nlohmann::json::object()}},
  };
  for (const char* endian : {"little", "big"}) {
    for (const auto& chain : chains) {
      CodecPipeline p;
      p.array_to_bytes = make_array_to_bytes_codec("bytes", {{"endian", endian}}, spec);
      for (const auto& [name, cfg] : chain) p.bytes_codecs.push_back(make_bytes_codec(name, cfg, spec));
      expect_pipeline_round_trip(p, spec, data);
    }
  }
}

TEST(CodecPipeline, TransposeAndFilters) {
  const ChunkSpec spec = spec_of(DataType::int_(4), {2, 3, 4});
  const auto data = iota_bytes_i4(24);
  CodecPipeline p;
  p.array_codecs.push_back(make_array_codec("transpose", {{"order", {2, 0, 1}}}, spec));
  p.array_codecs.push_back(make_array_codec("numcodecs.delta", {{"dtype", "<i4"}, {"astype", "<i2"}},
                                            p.array_to_bytes_spec(spec)));
  EXPECT_EQ(p.array_to_bytes_spec(spec).shape, (std::vector<std::uint64_t>{4, 2, 3}));
  EXPECT_EQ(p.array_to_bytes_spec(spec).dtype, DataType::int_(2));
  p.array_to_bytes = make_array_to_bytes_codec("bytes", {{"endian", "big"}}, p.array_to_bytes_spec(spec));
  p.bytes_codecs.push_back(make_bytes_codec("zstd", nlohmann::json::object(), spec));
  expect_pipeline_round_trip(p, spec, data);
  EXPECT_EQ(p.to_json().size(), 4u);
  EXPECT_EQ(p.to_json()[0]["name"], "transpose");

  // Transposed layout is what the spec says: encoded[i][j][k] = decoded[j][k][i].
  CodecPipeline t;
  t.array_codecs.push_back(make_transpose_codec({2, 0, 1}));
  t.array_to_bytes = make_endian_codec(ByteOrder::Little);
  const Buffer enc = t.encode(chunk_of(data), spec);
  const auto e = from_bytes<std::int32_t>(enc.view());
  const auto d = from_bytes<std::int32_t>(view(data));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) EXPECT_EQ(e[(i * 2 + j) * 3 + k], d[(j * 3 + k) * 4 + i]);

  // Packbits and astype as v3 array->array codecs.
  const ChunkSpec bools = spec_of(DataType::boolean(), {13});
  CodecPipeline pb;
  pb.array_codecs.push_back(make_array_codec("numcodecs.packbits", nlohmann::json::object(), bools));
  EXPECT_EQ(pb.array_to_bytes_spec(bools).shape, (std::vector<std::uint64_t>{3}));
  pb.array_to_bytes = make_endian_codec(ByteOrder::NotApplicable);
  std::vector<std::byte> bits(13);
  for (int i = 0; i < 13; ++i) bits[i] = std::byte(i % 3 == 0);
  expect_pipeline_round_trip(pb, bools, bits);

  const ChunkSpec f8 = spec_of(DataType::float_(8), {4});
  CodecPipeline at;
  at.array_codecs.push_back(make_array_codec("numcodecs.astype", {{"encode_dtype", "<f4"}}, f8));
  at.array_to_bytes = make_array_to_bytes_codec("bytes", {{"endian", "little"}}, at.array_to_bytes_spec(f8));
  expect_pipeline_round_trip(at, f8, as_bytes(std::vector<double>{1.5, -2, 0, 1e6}));
}

TEST(CodecPipeline, V2FiltersOnBigEndianArray) {
  // v2 array '>i2' with filters [delta('>i2', astype '>i1')] and a zlib compressor: filters see
  // the stored (big-endian) bytes and the endian codec swaps last.
  const ChunkSpec spec = spec_of(DataType::int_(2), {6});
  CodecPipeline p;
  p.array_to_bytes = make_endian_codec(ByteOrder::Big);
  p.bytes_codecs.push_back(make_v2_bytes_codec({{"id", "delta"}, {"dtype", ">i2"}, {"astype", ">i1"}},
                                               DataType::int_(2)));
  p.bytes_codecs.push_back(make_v2_bytes_codec({{"id", "zlib"}, {"level", 1}}, DataType::int_(2)));
  const auto data = as_bytes(std::vector<std::int16_t>{100, 98, 120, 121, 90, 90});
  expect_pipeline_round_trip(p, spec, data);
}

TEST(CodecPipeline, VariableLength) {
  const ChunkSpec spec = spec_of(DataType::string(), {2, 2});
  CodecPipeline p;
  p.array_codecs.push_back(make_transpose_codec({1, 0}));
  p.array_to_bytes = make_array_to_bytes_codec("vlen-utf8", nlohmann::json::object(), spec);
  p.bytes_codecs.push_back(make_bytes_codec("zstd", nlohmann::json::object(), spec));
  ChunkData in;
  in.strings = {"a", "bb", "", "d\xc3\xa9"};
  const Buffer enc = p.encode(in, spec);
  ChunkData out;
  p.decode(enc.view(), spec, out);
  EXPECT_EQ(out.strings, in.strings);
  // A chunk larger than the array still holds chunk-shape elements.
  auto vlen = make_v2_object_codec({{"id", "vlen-bytes"}});
  ChunkData raw;
  raw.strings = {"x", "", std::string("\0\xff", 2)};
  const Buffer venc = vlen->encode(raw, spec_of(DataType::vlen_bytes(), {3}));
  vlen->decode(venc.view(), spec_of(DataType::vlen_bytes(), {3}), out);
  EXPECT_EQ(out.strings, raw.strings);
  EXPECT_CODEC_ERROR(p.decode_into(enc.view(), spec, {}), "variable-length");
}

TEST(CodecPipeline, SizeMismatchReportsStage) {
  const ChunkSpec spec = spec_of(DataType::int_(4), {10});
  CodecPipeline p;
  p.array_to_bytes = make_endian_codec(ByteOrder::Little);
  p.bytes_codecs.push_back(make_bytes_codec("zstd", nlohmann::json::object(), spec));
  const Buffer enc = p.encode(chunk_of(iota_bytes_i4(5)), spec_of(DataType::int_(4), {5}));
  std::vector<std::byte> dest(40);
  EXPECT_CODEC_ERROR(p.decode_into(enc.view(), spec, {dest.data(), dest.size()}),
                     "zstd: stream claims 20 decoded bytes, expected 40");
  ChunkData out;
  EXPECT_CODEC_ERROR(p.decode(enc.view(), spec, out), "expected 40");
  std::vector<std::byte> wrong(12);
  EXPECT_THROW(p.decode_into(enc.view(), spec, {wrong.data(), wrong.size()}), UsageError);
}

}  // namespace
}  // namespace lazycube::codec::testing
