// The codec spec text of the writers (codec::parse_codec_spec): the v3 codec list and the v2
// compressor each text stands for, numcodecs' defaults, and clear errors naming the text.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lazycube/codec/codec.hpp"
#include "lazycube/error.hpp"
#include "test_support.hpp"

using namespace lazycube;
using codec::parse_codec_spec;
using lazycube::test::message_of;
using nlohmann::json;

namespace {
const DataType f4 = DataType::float_(4);
}

TEST(CodecSpecText, V3Lists) {
  EXPECT_EQ(parse_codec_spec("none", 3, f4), json::array());
  EXPECT_EQ(parse_codec_spec("zstd:3", 3, f4),
            json::parse(R"([{"name":"zstd","configuration":{"level":3,"checksum":false}}])"));
  EXPECT_EQ(parse_codec_spec("zstd", 3, f4)[0]["configuration"]["level"], 1);  // numcodecs' default
  EXPECT_EQ(parse_codec_spec("gzip:6", 3, f4), json::parse(R"([{"name":"gzip","configuration":{"level":6}}])"));
  EXPECT_EQ(parse_codec_spec("zlib:5", 3, f4)[0]["name"], "numcodecs.zlib");
  EXPECT_EQ(parse_codec_spec("lz4", 3, f4)[0], json::parse(R"({"name":"numcodecs.lz4","configuration":{"acceleration":1}})"));
  EXPECT_EQ(parse_codec_spec("blosc:zstd:7:bitshuffle", 3, DataType::int_(2))[0],
            json::parse(R"({"name":"blosc","configuration":{"cname":"zstd","clevel":7,"shuffle":"bitshuffle","typesize":2,"blocksize":0}})"));
  EXPECT_EQ(parse_codec_spec("blosc", 3, f4)[0]["configuration"]["cname"], "lz4");
  const json two = parse_codec_spec("zstd:1+crc32c", 3, f4);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1]["name"], "crc32c");
}

TEST(CodecSpecText, V2Compressors) {
  EXPECT_TRUE(parse_codec_spec("none", 2, f4).is_null());
  EXPECT_EQ(parse_codec_spec("zstd:3", 2, f4), json::parse(R"({"id":"zstd","level":3})"));
  EXPECT_EQ(parse_codec_spec("blosc:lz4:5:shuffle", 2, f4),
            json::parse(R"({"id":"blosc","cname":"lz4","clevel":5,"shuffle":1,"blocksize":0})"));
  EXPECT_EQ(parse_codec_spec("zlib:5", 2, f4), json::parse(R"({"id":"zlib","level":5})"));
  EXPECT_EQ(parse_codec_spec("gzip:6", 2, f4), json::parse(R"({"id":"gzip","level":6})"));
  EXPECT_EQ(parse_codec_spec("lz4", 2, f4), json::parse(R"({"id":"lz4","acceleration":1})"));
}

TEST(CodecSpecText, ErrorsNameTheText) {
  const std::pair<const char*, const char*> bad[] = {
      {"snappy", "unknown codec 'snappy'"},
      {"zstd:x", "must be an integer"},
      {"zstd:99", "level"},
      {"zstd:1:2", "at most 1 parameter"},
      {"blosc:lz4:5:sideways", "noshuffle, shuffle or bitshuffle"},
      {"blosc:nosuch", "nosuch"},
      {"gzip:10", "level"},
      {"none+zstd", "cannot be combined"},
      {"zstd+", "empty codec name"},
      {"", "empty codec name"},
  };
  for (const auto& entry : bad) {
    const auto& [text, expect] = entry;
    const std::string msg = message_of<CodecError>([&] { parse_codec_spec(entry.first, 3, f4); });
    EXPECT_NE(msg.find("codec spec '" + std::string(text) + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(expect), std::string::npos) << text << ": " << msg;
  }
  EXPECT_NE(message_of<CodecError>([] { parse_codec_spec("zstd+crc32c", 2, f4); }).find("Zarr v3"), std::string::npos);
  EXPECT_NE(message_of<CodecError>([] { parse_codec_spec("zstd+gzip", 2, f4); }).find("one compressor"), std::string::npos);
}

// bitround:KEEPBITS, the registry's array->array codec: v3 only, before the compressors.
TEST(CodecSpecText, BitroundGoesFirstInV3) {
  EXPECT_EQ(parse_codec_spec("bitround:10+zstd:3", 3, f4),
            json::parse(R"([{"name":"bitround","configuration":{"keepbits":10}},
                            {"name":"zstd","configuration":{"level":3,"checksum":false}}])"));
  const auto msg = [](const char* text, int format, DataType t) {
    return message_of<CodecError>([&] { parse_codec_spec(text, format, t); });
  };
  EXPECT_NE(msg("zstd:3+bitround:10", 3, f4).find("must come before the compressors"), std::string::npos);
  EXPECT_NE(msg("bitround", 3, f4).find("needs the mantissa bits"), std::string::npos);
  EXPECT_NE(msg("bitround:-2", 3, f4).find("'keepbits'"), std::string::npos);
  EXPECT_NE(msg("bitround:10", 2, f4).find("Zarr v3"), std::string::npos);
  EXPECT_NE(msg("bitround:10", 3, DataType::string()).find("unsupported data type"), std::string::npos);
}
