// Every v3 codec chain the reader supports, written by hand (zarr.json + chunks encoded with our
// own encoders) and read back, including partial edge chunks and checksum failures.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lazycube/error.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "zarr_test_writer.hpp"

namespace lazycube {
namespace {

using namespace lazycube::test;
using nlohmann::json;

struct Chain {
  const char* name;
  json codecs;
};

json blosc(const char* cname, const char* shuffle) {
  return {{"name", "blosc"},
          {"configuration", {{"cname", cname}, {"clevel", 5}, {"shuffle", shuffle}, {"typesize", 4}, {"blocksize", 0}}}};
}

std::vector<Chain> chains() {
  return {
      {"bytes", json::array({bytes_codec()})},
      {"bytes_big", json::array({bytes_codec("big")})},
      {"blosc_lz4_shuffle", json::array({bytes_codec(), blosc("lz4", "shuffle")})},
      {"blosc_zstd_bitshuffle", json::array({bytes_codec(), blosc("zstd", "bitshuffle")})},
      {"blosc_zlib_noshuffle", json::array({bytes_codec(), blosc("zlib", "noshuffle")})},
      {"gzip", json::array({bytes_codec(), {{"name", "gzip"}, {"configuration", {{"level", 6}}}}})},
      {"zstd_crc32c", json::array({bytes_codec(), zstd_codec(3), crc32c_codec()})},
      {"big_crc32c", json::array({bytes_codec("big"), crc32c_codec()})},
      {"transpose_gzip", json::array({{{"name", "transpose"}, {"configuration", {{"order", {1, 0}}}}}, bytes_codec(),
                                      {{"name", "gzip"}, {"configuration", {{"level", 1}}}}})},
      {"numcodecs_zlib", json::array({bytes_codec(), {{"name", "numcodecs.zlib"}, {"configuration", {{"level", 3}}}}})},
      {"numcodecs_bz2", json::array({bytes_codec(), {{"name", "numcodecs.bz2"}, {"configuration", {{"level", 5}}}}})},
      {"numcodecs_lzma", json::array({bytes_codec(), {{"name", "numcodecs.lzma"}, {"configuration", json::object()}}})},
      {"numcodecs_lz4", json::array({bytes_codec(), {{"name", "numcodecs.lz4"}, {"configuration", {{"acceleration", 1}}}}})},
      {"numcodecs_shuffle_zstd", json::array({bytes_codec(), {{"name", "numcodecs.shuffle"}, {"configuration", {{"elementsize", 4}}}}, zstd_codec()})},
      {"numcodecs_adler32", json::array({bytes_codec(), {{"name", "numcodecs.adler32"}, {"configuration", json::object()}}})},
      {"numcodecs_fletcher32", json::array({bytes_codec(), {{"name", "numcodecs.fletcher32"}, {"configuration", json::object()}}})},
      {"numcodecs_astype", json::array({{{"name", "numcodecs.astype"}, {"configuration", {{"encode_dtype", "<f8"}, {"decode_dtype", "<f4"}}}},
                                        bytes_codec()})},
      {"sharded_blosc", json::array({sharding_codec({3, 2}, json::array({bytes_codec(), blosc("lz4", "shuffle")}))})},
  };
}

class V3Chain : public ::testing::TestWithParam<Chain> {};

TEST_P(V3Chain, RoundTripsWithPartialEdgeChunks) {
  TempDir tmp;
  const Shape shape{7, 9};  // chunks 6x4: partial chunks along both dims
  auto values = ramp(shape_size(shape));
  write_v3_array(tmp.path(), v3_array_json(shape, {6, 4}, "float32", GetParam().codecs, 0), values.data(), 4);
  auto a = zarr::open_array(make_file_store(tmp.str()), "");
  NDArray r = a->read_all();
  EXPECT_EQ(std::vector<float>(r.values<float>().begin(), r.values<float>().end()), values);
}

INSTANTIATE_TEST_SUITE_P(Codecs, V3Chain, ::testing::ValuesIn(chains()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ZarrV3, ChunkCrc32cMismatchNamesChunk) {
  TempDir tmp;
  auto values = ramp(8);
  write_v3_array(tmp.path(), v3_array_json({8}, {4}, "float32", json::array({bytes_codec(), crc32c_codec()})),
                 values.data(), 4);
  std::string c = read_file(tmp.path() / "c/1");
  c[3] ^= 1;
  write_file(tmp.path() / "c/1", c);
  auto a = zarr::open_array(make_file_store(tmp.str()), "");
  try {
    a->read_all();
    FAIL();
  } catch (const CodecError& e) {
    EXPECT_NE(std::string(e.what()).find("chunk 'c/1'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("crc32c"), std::string::npos) << e.what();
  }
  // The intact chunk still reads.
  NDArray first = a->read({{0, 4, 1}});
  EXPECT_EQ(first.values<float>()[3], values[3]);
}

TEST(ZarrV3, StringAndVlenBytesArrays) {
  TempDir tmp;
  json meta = v3_array_json({5}, {2}, "string", json::array({{{"name", "vlen-utf8"}}}), "∅");
  write_file(tmp.path() / "zarr.json", meta.dump());
  auto parsed = zarr::parse_v3_array(meta, "t");
  codec::ChunkData chunk;
  chunk.strings = {"héllo", ""};
  Buffer enc = parsed.codecs.encode(chunk, {parsed.dtype, {2}});
  write_file(tmp.path() / "c/0", enc.data(), enc.size());
  auto a = zarr::open_array(make_file_store(tmp.str()), "");
  NDArray r = a->read_all();
  EXPECT_EQ(r.strings, (std::vector<std::string>{"héllo", "", "∅", "∅", "∅"}));
  EXPECT_THROW(a->read({{0, 5, 1}}, MutableByteView{}), UsageError);
}

}  // namespace
}  // namespace lazycube
