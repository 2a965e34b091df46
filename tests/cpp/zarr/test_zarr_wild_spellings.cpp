// Issue 48, files from the wild: v3 arrays spelled as other writers spell them, written by hand
// (zarr.json, chunks encoded through the array's own parsed pipeline, i.e. as the writer
// encodes) and read back.
//   - every checksum codec (crc32c, numcodecs.crc32 / adler32 / fletcher32) in every spelling
//     (short-hand string, object, object with configuration, numcodecs.* alias), sharded too:
//     every single-byte change of a stored chunk is a CodecError, never values;
//   - codec configurations take a dtype however NumPy spells it (parse_numpy_dtype), kerchunk's
//     GRIB references ("dtype": "float32") read end to end;
//   - reshape with lists of axes on a stored array (its fill value checked on the real chunk
//     shape), inside sharding, written through the parsed pipeline;
//   - struct with `bytes` and no endian: little-endian fields (zarr-python 3), and the writer
//     writes struct arrays that way;
//   - zarrs' optional data type and codec: null as NaN, integers widened to float64, sharded too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "lazycube/codec/codec.hpp"
#include "lazycube/dtype.hpp"
#include "grib_test_messages.hpp"
#include "lazycube/error.hpp"
#include "lazycube/refs/references.hpp"
#include "lazycube/store/store.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "lazycube/zarr/writer.hpp"
#include "test_support.hpp"
#include "zarr_test_writer.hpp"

namespace lazycube {
namespace {

using namespace lazycube::test;
using nlohmann::json;

std::vector<std::uint8_t> bytes_ramp(std::size_t n) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i * 7 + 3);
  return v;
}

std::vector<std::uint8_t> read_u8(const fs::path& dir) {
  const NDArray r = zarr::open_array(make_file_store(dir.string()), "")->read_all();
  return {reinterpret_cast<const std::uint8_t*>(r.data.data()), reinterpret_cast<const std::uint8_t*>(r.data.data()) + r.data.size()};
}

// Every spelling a v3 checksum codec is met in.
std::vector<json> spellings(const std::string& name) {
  std::vector<json> out = {json(name), json{{"name", name}}, json{{"name", name}, {"configuration", json::object()}},
                           json{{"name", name}, {"configuration", nullptr}}};
  return out;
}

struct ChecksumCase {
  std::string codec;   // as spelled in zarr.json
  std::string label;   // as named in the mismatch message
};

class ChecksumSpellings : public ::testing::TestWithParam<ChecksumCase> {};

TEST_P(ChecksumSpellings, EveryByteOfEveryChunkIsChecked) {
  const auto& c = GetParam();
  for (const json& bytes : {json("bytes"), json{{"name", "bytes"}}, bytes_codec()}) {
    for (const json& checksum : spellings(c.codec)) {
      SCOPED_TRACE(bytes.dump() + " " + checksum.dump());
      TempDir tmp;
      const auto values = bytes_ramp(16);
      write_v3_array(tmp.path(), v3_array_json({16}, {8}, "uint8", json::array({bytes, checksum})), values.data(), 1);
      EXPECT_EQ(read_u8(tmp.path()), values);
      const std::string good = read_file(tmp.path() / "c" / "1");
      ASSERT_EQ(good.size(), 12u);
      // The issue's damage: the last eight bytes overwritten with 0xFF.
      std::string bad = good;
      for (std::size_t i = bad.size() - 8; i < bad.size(); ++i) bad[i] = '\xff';
      write_file(tmp.path() / "c" / "1", bad);
      std::string e = message_of<CodecError>([&] { read_u8(tmp.path()); });
      EXPECT_NE(e.find(c.label + " mismatch"), std::string::npos) << e;
      EXPECT_NE(e.find("c/1"), std::string::npos) << e;
      // Every single byte.
      for (std::size_t i = 0; i < good.size(); ++i) {
        bad = good;
        bad[i] = static_cast<char>(bad[i] ^ 0x10);
        write_file(tmp.path() / "c" / "1", bad);
        e = message_of<CodecError>([&] { read_u8(tmp.path()); });
        EXPECT_NE(e.find(c.label + " mismatch"), std::string::npos) << "byte " << i << ": " << e;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Wild, ChecksumSpellings,
                         ::testing::Values(ChecksumCase{"crc32c", "crc32c"}, ChecksumCase{"numcodecs.crc32c", "crc32c"},
                                           ChecksumCase{"numcodecs.crc32", "crc32"},
                                           ChecksumCase{"numcodecs.adler32", "adler32"},
                                           ChecksumCase{"numcodecs.fletcher32", "fletcher32"}),
                         [](const auto& info) {
                           std::string s = info.param.codec;
                           for (char& ch : s)
                             if (ch == '.') ch = '_';
                           return s;
                         });

TEST(ZarrWildSpellings, ShardedChecksumsInShortHandAreChecked) {
  TempDir tmp;
  const auto values = bytes_ramp(8);
  const json codecs = json::array({{{"name", "sharding_indexed"},
                                    {"configuration",
                                     {{"chunk_shape", {4}},
                                      {"codecs", json::array({"bytes", "crc32c"})},
                                      {"index_codecs", json::array({bytes_codec(), "crc32c"})}}}}});
  write_v3_array(tmp.path(), v3_array_json({8}, {8}, "uint8", codecs), values.data(), 1);
  EXPECT_EQ(read_u8(tmp.path()), values);
  const std::string good = read_file(tmp.path() / "c" / "0");
  ASSERT_EQ(good.size(), 2 * 8u + 2 * 16 + 4);
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    write_file(tmp.path() / "c" / "0", bad);
    const std::string e = message_of<CodecError>([&] { read_u8(tmp.path()); });
    EXPECT_NE(e.find("crc32c mismatch"), std::string::npos) << "byte " << i << ": " << e;
  }
}

// ---------------------------------------------------------------- dtypes however NumPy spells them

TEST(ZarrWildSpellings, ParseNumpyDtypeTakesNumpysSpellings) {
  const std::vector<std::pair<std::string, DataType>> same = {
      {"float32", DataType::float_(4)},  {"<f4", DataType::float_(4)},     {"f4", DataType::float_(4)},
      {"=f4", DataType::float_(4)},      {"single", DataType::float_(4)},  {"f", DataType::float_(4)},
      {"float64", DataType::float_(8)},  {"double", DataType::float_(8)},  {"float", DataType::float_(8)},
      {"d", DataType::float_(8)},        {"float16", DataType::float_(2)}, {"half", DataType::float_(2)},
      {"e", DataType::float_(2)},        {"int8", DataType::int_(1)},      {"b", DataType::int_(1)},
      {"int16", DataType::int_(2)},      {"h", DataType::int_(2)},         {"int32", DataType::int_(4)},
      {"i", DataType::int_(4)},          {"int64", DataType::int_(8)},     {"int", DataType::int_(8)},
      {"uint8", DataType::uint(1)},      {"B", DataType::uint(1)},         {"uint16", DataType::uint(2)},
      {"uint32", DataType::uint(4)},     {"uint64", DataType::uint(8)},    {"bool", DataType::boolean()},
      {"?", DataType::boolean()},        {"b1", DataType::boolean()},      {"complex64", DataType::complex(8)},
      {"complex128", DataType::complex(16)}, {"F", DataType::complex(8)},
      {"datetime64[ns]", DataType::datetime("ns", 1)}, {"timedelta64[s]", DataType::timedelta("s", 1)}};
  for (const auto& [text, want] : same) {
    SCOPED_TRACE(text);
    EXPECT_EQ(parse_numpy_dtype(text).dtype, want);
  }
  EXPECT_EQ(parse_numpy_dtype(">float32").order, ByteOrder::Big);
  EXPECT_EQ(parse_numpy_dtype("=float32").order, ByteOrder::Little);
  EXPECT_EQ(parse_numpy_dtype(">f4").order, ByteOrder::Big);
  for (const char* text : {"float31", "floaty", "int128", "f3", "", "<"}) {
    SCOPED_TRACE(text);
    EXPECT_NE(message_of<MetadataError>([&] { parse_numpy_dtype(text); }).find("unsupported numpy dtype"),
              std::string::npos);
  }
}

// Every codec with a dtype key builds from every spelling, and encodes as the '<f4' one does.
TEST(ZarrWildSpellings, CodecDtypeKeysTakeEverySpelling) {
  const codec::ChunkSpec spec{DataType::float_(4), {6}};
  const std::vector<float> values = {0.5f, 1.25f, -3.0f, 10.0f, 7.75f, 0.0f};
  codec::ChunkData in;
  in.bytes = Buffer::copy_of(ByteView(reinterpret_cast<const std::byte*>(values.data()), values.size() * 4));
  struct Codec {
    std::string name;
    json config;  // with "@" where the dtype goes
    std::string key;
  };
  const std::vector<Codec> codecs = {
      {"numcodecs.fixedscaleoffset", {{"offset", 1.0}, {"scale", 4}, {"astype", "<i2"}}, "dtype"},
      {"numcodecs.delta", json::object(), "dtype"},
      {"numcodecs.quantize", {{"digits", 3}}, "dtype"},
      {"numcodecs.astype", {{"encode_dtype", "<f8"}}, "decode_dtype"},
  };
  for (const auto& c : codecs) {
    json reference = c.config;
    reference[c.key] = "<f4";
    const auto want = codec::make_array_codec(c.name, reference, spec);
    codec::ChunkData want_out;
    want->encode(in, spec, want_out);
    for (const char* spelling : {"float32", "f4", "=f4", "single", "f"}) {
      SCOPED_TRACE(c.name + " " + spelling);
      json config = c.config;
      config[c.key] = spelling;
      const auto got = codec::make_array_codec(c.name, config, spec);
      codec::ChunkData out;
      got->encode(in, spec, out);
      ASSERT_EQ(out.bytes.size(), want_out.bytes.size());
      EXPECT_EQ(std::memcmp(out.bytes.data(), want_out.bytes.data(), out.bytes.size()), 0);
    }
  }
}

// kerchunk's scan_grib: {"id": "grib", "var": "t2m", "dtype": "float32"} (str(data.dtype)).
TEST(ZarrWildSpellings, KerchunkGribFilterDtypeByName) {
#ifdef LAZYCUBE_HAVE_ECCODES
  for (const char* spelling : {"float32", "<f4", "f4", "=f4"}) {
    SCOPED_TRACE(spelling);
    EXPECT_NO_THROW(codec::make_v2_bytes_codec({{"id", "grib"}, {"var", "t2m"}, {"dtype", spelling}}, DataType::float_(4)));
    EXPECT_NO_THROW(codec::make_v2_bytes_codec({{"id", "gribberish"}, {"var", "t2m"}, {"dtype", spelling}}, DataType::float_(4)));
  }
  EXPECT_NO_THROW(codec::make_v2_bytes_codec({{"id", "grib"}, {"var", "t2m"}, {"dtype", "float64"}}, DataType::float_(8)));
  // Another type than the array's is still refused, named as the array has it.
  const std::string e = message_of<CodecError>(
      [] { codec::make_v2_bytes_codec({{"id", "grib"}, {"var", "t2m"}, {"dtype", "float64"}}, DataType::float_(4)); });
  EXPECT_NE(e.find("'dtype'"), std::string::npos) << e;
#else
  GTEST_SKIP() << "built without ecCodes: the grib codec is refused naming the library";
#endif
}

// The whole kerchunk path: a references file as scan_grib writes it, the filter's dtype as
// str(data.dtype), its chunk one GRIB2 message; the values as ecCodes decodes them (float32).
TEST(ZarrWildSpellings, KerchunkGribReferencesRead) {
#ifdef LAZYCUBE_HAVE_ECCODES
  TempDir tmp;
  const auto message = test::grib::sample_message("GRIB2", [](std::size_t i) { return 250.0 + 0.5 * static_cast<double>(i % 37); });
  const auto want = test::grib::decode(message);
  write_file(tmp.path() / "t.grib2", std::string(reinterpret_cast<const char*>(message.data()), message.size()));
  const json zarray = {{"zarr_format", 2},  {"shape", {want.size()}},   {"chunks", {want.size()}},
                       {"dtype", "<f4"},     {"compressor", nullptr},    {"fill_value", nullptr},
                       {"order", "C"},
                       {"filters", json::array({{{"id", "grib"}, {"var", "t2m"}, {"dtype", "float32"}}})}};
  const json refs = {{"version", 1},
                     {"refs",
                      {{".zgroup", json{{"zarr_format", 2}}.dump()},
                       {"t2m/.zarray", zarray.dump()},
                       {"t2m/.zattrs", json{{"_ARRAY_DIMENSIONS", {"x"}}}.dump()},
                       {"t2m/0", json::array({(tmp.path() / "t.grib2").string(), 0, message.size()})}}}};
  write_file(tmp.path() / "refs.json", refs.dump());
  const NDArray r = zarr::Hierarchy::open(refs::open_references((tmp.path() / "refs.json").string())).array("t2m")->read_all();
  ASSERT_EQ(r.dtype, DataType::float_(4));
  const auto got = r.values<float>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], static_cast<float>(want[i])) << i;
#else
  GTEST_SKIP() << "built without ecCodes";
#endif
}

// ---------------------------------------------------------------- reshape with lists of axes

std::vector<std::int16_t> i16_ramp(std::size_t n) {
  std::vector<std::int16_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int16_t>(i * 3 - 100);
  return v;
}

TEST(ZarrWildSpellings, ReshapeWithListsOfAxesOnAStoredArray) {
  const auto values = i16_ramp(6 * 4 * 10);
  for (const json& shape : {json::array({json::array({0, 1}), json::array({2})}), json::array({json::array({0}), -1}),
                            json::array({12, json::array({2})})}) {
    SCOPED_TRACE(shape.dump());
    TempDir tmp;
    const json reshape = {{"name", "reshape"}, {"configuration", {{"shape", shape}}}};
    write_v3_array(tmp.path(), v3_array_json({6, 4, 10}, {3, 4, 10}, "int16", json::array({reshape, bytes_codec()}), -5),
                   values.data(), 2, [](const auto& idx) { return idx[0] == 0; });
    // Stored in the same C order: chunk 1 is the second half as it is.
    const std::string stored = read_file(tmp.path() / "c" / "1" / "0" / "0");
    ASSERT_EQ(stored.size(), 120u * 2);
    EXPECT_EQ(std::memcmp(stored.data(), values.data() + 120, 240), 0);
    const NDArray r = zarr::open_array(make_file_store(tmp.str()), "")->read_all();
    const auto got = r.values<std::int16_t>();
    for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(got[i], i < 120 ? -5 : values[i]) << i;
  }
}

TEST(ZarrWildSpellings, ReshapeWithListsOfAxesInsideSharding) {
  TempDir tmp;
  const auto values = i16_ramp(4 * 4 * 6);
  const json inner = json::array({{{"name", "reshape"}, {"configuration", {{"shape", {{0, 1}, {2}}}}}}, bytes_codec()});
  write_v3_array(tmp.path(), v3_array_json({4, 4, 6}, {4, 4, 6}, "int16", json::array({sharding_codec({2, 4, 6}, inner)})),
                 values.data(), 2);
  const NDArray r = zarr::open_array(make_file_store(tmp.str()), "")->read_all();
  const auto got = r.values<std::int16_t>();
  EXPECT_EQ(std::vector<std::int16_t>(got.begin(), got.end()), values);
}

// ---------------------------------------------------------------- struct, bytes without endian

json point_type() {
  return {{"name", "struct"},
          {"configuration", {{"fields", json::array({{{"name", "x"}, {"data_type", "float32"}},
                                                     {{"name", "n"}, {"data_type", "int16"}}})}}}};
}

TEST(ZarrWildSpellings, StructWithBytesWithoutEndianReadsLittleEndianFields) {
  // Two records {x: 1.5, n: -2}, {x: -0.25, n: 300}, little-endian fields, packed (6 bytes each).
  std::string stored;
  auto put = [&](float x, std::int16_t n) {
    stored.append(reinterpret_cast<const char*>(&x), 4);
    stored.append(reinterpret_cast<const char*>(&n), 2);
  };
  put(1.5f, -2);
  put(-0.25f, 300);
  for (const json& bytes : {json("bytes"), json{{"name", "bytes"}}, json{{"name", "bytes"}, {"configuration", json::object()}}}) {
    SCOPED_TRACE(bytes.dump());
    TempDir tmp;
    write_file(tmp.path() / "zarr.json",
               v3_array_json({2}, {2}, point_type(), json::array({bytes}), json{{"x", 0.0}, {"n", 0}}).dump());
    write_file(tmp.path() / "c" / "0", stored);
    const NDArray r = zarr::open_array(make_file_store(tmp.str()), "")->read_all();
    ASSERT_EQ(r.data.size(), stored.size());
    EXPECT_EQ(std::memcmp(r.data.data(), stored.data(), stored.size()), 0);
  }
}

TEST(ZarrWildSpellings, WriterWritesStructsWithBytesWithoutEndian) {
  TempDir tmp;
  zarr::ArraySpec spec;
  spec.dtype = DataType::record({{"x", 0, DataType::float_(4)}, {"n", 4, DataType::int_(2)}}, 6);
  spec.shape = {2};
  spec.chunk_shape = {2};
  spec.codecs = "none";
  zarr::Writer w(open_location(tmp.str()));
  auto a = w.create_array("p", spec);
  NDArray data;
  data.dtype = spec.dtype;
  data.shape = {2};
  data.data = Buffer(12);
  const float x0 = 1.5f, x1 = -0.25f;
  const std::int16_t n0 = -2, n1 = 300;
  std::memcpy(data.data.data(), &x0, 4);
  std::memcpy(data.data.data() + 4, &n0, 2);
  std::memcpy(data.data.data() + 6, &x1, 4);
  std::memcpy(data.data.data() + 10, &n1, 2);
  a->write_region({0}, data);
  w.commit();
  const json meta = json::parse(read_file(tmp.path() / "p" / "zarr.json"));
  EXPECT_EQ(meta["codecs"], json::array({{{"name", "bytes"}}})) << meta.dump();
  EXPECT_EQ(meta["data_type"], point_type()) << meta.dump();
  EXPECT_EQ(meta["fill_value"], (json{{"x", 0.0}, {"n", 0}})) << meta.dump();
  const std::string stored = read_file(tmp.path() / "p" / "c" / "0");
  ASSERT_EQ(stored.size(), 12u);
  EXPECT_EQ(std::memcmp(stored.data(), data.data.data(), 12), 0);
  const NDArray back = zarr::Hierarchy::open(open_location(tmp.str())).array("p")->read_all();
  ASSERT_EQ(back.data.size(), 12u);
  EXPECT_EQ(std::memcmp(back.data.data(), data.data.data(), 12), 0);
  // Zarr v2 has no struct type: refused naming the format.
  TempDir v2;
  zarr::Writer w2(open_location(v2.str()));
  spec.zarr_format = 2;
  const std::string e = message_of<MetadataError>([&] { w2.create_array("p", spec); });
  EXPECT_NE(e.find("in Zarr v3 only"), std::string::npos) << e;
}

// ---------------------------------------------------------------- zarrs' optional data type

// The optional codec's chunk: u64 LE mask and data lengths, the mask packed LSB first
// (packbits of bool), the present int16 values little-endian.
std::string optional_chunk(const std::vector<std::int16_t>& values, const std::vector<bool>& present) {
  std::string mask((present.size() + 7) / 8, '\0');
  std::string data;
  for (std::size_t i = 0; i < present.size(); ++i) {
    if (!present[i]) continue;
    mask[i / 8] = static_cast<char>(mask[i / 8] | (1 << (i % 8)));
    data.append(reinterpret_cast<const char*>(&values[i]), 2);
  }
  std::string out(16, '\0');
  const std::uint64_t m = mask.size(), d = data.size();
  std::memcpy(out.data(), &m, 8);
  std::memcpy(out.data() + 8, &d, 8);
  return out + mask + data;
}

json optional_codec() {
  return {{"name", "optional"},
          {"configuration", {{"mask_codecs", json::array({{{"name", "packbits"}}})}, {"data_codecs", json::array({bytes_codec()})}}}};
}

TEST(ZarrWildSpellings, OptionalInt16ReadsNullAsNaNWidenedToFloat64) {
  const json type = {{"name", "optional"}, {"configuration", {{"name", "int16"}, {"configuration", json::object()}}}};
  const std::vector<std::int16_t> values = {7, 0, -3, 0, 12, 5};
  const std::vector<bool> present = {true, false, true, false, true, true};
  for (bool sharded : {false, true}) {
    SCOPED_TRACE(sharded ? "sharded" : "plain");
    TempDir tmp;
    if (sharded) {
      // One shard of two inner chunks of 3, index [bytes, crc32c] in short-hand.
      const json codecs = json::array({{{"name", "sharding_indexed"},
                                        {"configuration",
                                         {{"chunk_shape", {3}},
                                          {"codecs", json::array({optional_codec()})},
                                          {"index_codecs", json::array({bytes_codec(), "crc32c"})}}}}});
      const std::string a = optional_chunk({7, 0, -3}, {true, false, true}), b = optional_chunk({0, 12, 5}, {false, true, true});
      std::string index(32, '\0');
      const std::uint64_t entries[4] = {0, a.size(), a.size(), b.size()};
      std::memcpy(index.data(), entries, 32);
      write_file(tmp.path() / "zarr.json", v3_array_json({6}, {6}, type, codecs, nullptr).dump());
      // The index's crc32c through the codec itself.
      const auto crc = codec::make_bytes_codec("crc32c", json::object(), {});
      const Buffer framed = crc->encode(ByteView(reinterpret_cast<const std::byte*>(index.data()), index.size()));
      write_file(tmp.path() / "c" / "0", a + b + std::string(reinterpret_cast<const char*>(framed.data()), framed.size()));
    } else {
      write_file(tmp.path() / "zarr.json", v3_array_json({6}, {6}, type, json::array({optional_codec()}), nullptr).dump());
      write_file(tmp.path() / "c" / "0", optional_chunk(values, present));
    }
    const auto array = zarr::open_array(make_file_store(tmp.str()), "");
    ASSERT_EQ(array->dtype(), DataType::float_(8));
    const NDArray r = array->read_all();
    const auto got = r.values<double>();
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (present[i]) EXPECT_EQ(got[i], values[i]) << i;
      else EXPECT_TRUE(std::isnan(got[i])) << i;
    }
  }
}

TEST(ZarrWildSpellings, OptionalFillAndErrors) {
  const json type = {{"name", "optional"}, {"configuration", {{"name", "float32"}}}};
  TempDir tmp;
  write_file(tmp.path() / "zarr.json", v3_array_json({4}, {2}, type, json::array({optional_codec()}), json::array({2.5})).dump());
  const NDArray r = zarr::open_array(make_file_store(tmp.str()), "")->read_all();
  ASSERT_EQ(r.dtype, DataType::float_(4));
  for (float v : r.values<float>()) EXPECT_EQ(v, 2.5f);
  // The optional type needs the optional codec; other inner types are refused by name.
  TempDir bad;
  write_file(bad.path() / "zarr.json", v3_array_json({4}, {2}, type, json::array({bytes_codec()}), nullptr).dump());
  std::string e = message_of<Error>([&] { zarr::open_array(make_file_store(bad.str()), ""); });
  EXPECT_NE(e.find("optional codec"), std::string::npos) << e;
  write_file(bad.path() / "zarr.json",
             v3_array_json({4}, {2}, {{"name", "optional"}, {"configuration", {{"name", "string"}}}}, json::array({optional_codec()}),
                           nullptr).dump());
  e = message_of<Error>([&] { zarr::open_array(make_file_store(bad.str()), ""); });
  EXPECT_NE(e.find("optional of string is not supported"), std::string::npos) << e;
  // A truncated chunk.
  write_file(bad.path() / "zarr.json", v3_array_json({4}, {4}, type, json::array({optional_codec()}), nullptr).dump());
  write_file(bad.path() / "c" / "0", std::string(12, '\0'));
  e = message_of<CodecError>([&] { zarr::open_array(make_file_store(bad.str()), "")->read_all(); });
  EXPECT_NE(e.find("optional"), std::string::npos) << e;
}

}  // namespace
}  // namespace lazycube
