// Bad input: each failure is a typed exception whose message names what was wrong.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "lazycube/error.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "zarr_test_writer.hpp"

namespace lazycube {
namespace {

using namespace lazycube::test;
using nlohmann::json;

json zarray(const json& shape, const json& chunks, const std::string& dtype = "<f4", const json& compressor = nullptr) {
  return {{"zarr_format", 2}, {"shape", shape}, {"chunks", chunks}, {"dtype", dtype}, {"compressor", compressor},
          {"fill_value", 0}, {"order", "C"}, {"filters", nullptr}};
}

template <class E>
void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    FAIL() << "no exception";
  } catch (const E& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << "'" << p << "' not in: " << e.what();
  } catch (const std::exception& e) {
    FAIL() << "wrong exception type: " << e.what();
  }
}

ArrayPtr open_dir(const TempDir& t) { return zarr::open_array(make_file_store(t.str()), ""); }

TEST(ZarrErrors, MalformedJson) {
  TempDir t;
  write_file(t.path() / ".zarray", "{\"zarr_format\": 2, \"shape\": [4,");
  expect_error<MetadataError>([&] { open_dir(t); }, {"malformed JSON", ".zarray"});
}

TEST(ZarrErrors, ShapeAndChunksDisagree) {
  TempDir t;
  write_file(t.path() / ".zarray", zarray({4, 4}, {2}).dump());
  expect_error<MetadataError>([&] { open_dir(t); }, {"'chunks' has 1 dims", "'shape' has 2"});
}

TEST(ZarrErrors, NegativeAndZeroSizes) {
  TempDir t;
  write_file(t.path() / ".zarray", zarray({-4}, {2}).dump());
  expect_error<MetadataError>([&] { open_dir(t); }, {"'shape'", "negative", "-4"});
  write_file(t.path() / ".zarray", zarray({4}, {0}).dump());
  expect_error<MetadataError>([&] { open_dir(t); }, {"'chunks'", "positive"});
}

TEST(ZarrErrors, UnknownDtypes) {
  TempDir t;
  write_file(t.path() / ".zarray", zarray({4}, {2}, "<x3").dump());
  expect_error<MetadataError>([&] { open_dir(t); }, {"unsupported numpy dtype '<x3'"});
  json v3 = v3_array_json({4}, {2}, "float128", json::array({bytes_codec()}));
  TempDir t3;
  write_file(t3.path() / "zarr.json", v3.dump());
  expect_error<MetadataError>([&] { open_dir(t3); }, {"unsupported data_type", "float128"});
}

TEST(ZarrErrors, UnknownCodecNamesCodecAndArray) {
  TempDir t;
  write_file(t.path() / ".zarray", zarray({4}, {2}, "<f4", {{"id", "frobnicate"}}).dump());
  expect_error<CodecError>([&] { open_dir(t); }, {"frobnicate", t.str()});
  TempDir t3;
  write_file(t3.path() / "zarr.json",
             v3_array_json({4}, {2}, "float32", json::array({bytes_codec(), {{"name", "superzip"}}})).dump());
  expect_error<CodecError>([&] { open_dir(t3); }, {"unknown codec 'superzip'", t3.str()});
}

TEST(ZarrErrors, TruncatedAndOversizedChunksNameTheKey) {
  TempDir t;
  write_file(t.path() / ".zarray", zarray({4}, {2}).dump());
  write_file(t.path() / "0", std::string(8, '\0'));
  write_file(t.path() / "1", std::string(5, '\0'));  // 5 bytes for a 2 x float32 chunk
  auto a = open_dir(t);
  expect_error<CodecError>([&] { a->read_all(); }, {"chunk '1'"});
  // Larger than its encoded-size bound (8 bytes): refused by the store before reading (issue 32).
  write_file(t.path() / "1", std::string(4096, '\0'));
  expect_error<StoreError>([&] { a->read_all(); }, {(t.path() / "1").string(), "4096 bytes", "the 8 bytes"});
}

TEST(ZarrErrors, CorruptCompressedStream) {
  TempDir t;
  write_file(t.path() / ".zarray", zarray({4}, {4}, "<f4", {{"id", "zstd"}, {"level", 1}}).dump());
  write_file(t.path() / "0", std::string("\x28\xb5\x2f\xfd garbage garbage", 21));
  auto a = open_dir(t);
  expect_error<CodecError>([&] { a->read_all(); }, {"chunk '0'", "zstd"});
}

TEST(ZarrErrors, SelectionOutOfRange) {
  TempDir t;
  write_file(t.path() / ".zarray", zarray({4}, {2}).dump());
  auto a = open_dir(t);
  expect_error<SelectionError>([&] { a->read({{3, 2, 1}}); }, {"outside [0, 4)"});
  expect_error<SelectionError>([&] { a->read({IndexRange::all(4), IndexRange::all(1)}); }, {"selection has 2 dims"});
}

TEST(ZarrErrors, MissingNodeIsNotFound) {
  TempDir t;
  expect_error<NotFound>([&] { zarr::Hierarchy::open(open_location(t.str())); }, {"no Zarr group or array"});
  expect_error<NotFound>([&] { open_location(t.str() + "/nope"); }, {"no such file"});
}

TEST(ZarrErrors, KeysCannotEscapeTheStore) {
  TempDir t;
  auto s = make_file_store(t.str());
  EXPECT_THROW(s->get("../etc/passwd"), StoreError);
  EXPECT_THROW(s->get("/etc/passwd"), StoreError);
}

TEST(ZarrV2, OrderFSeparatorSlashAndMissingChunksFill) {
  TempDir t;
  json z = zarray({3, 4}, {2, 3}, ">i2");
  z["order"] = "F";
  z["dimension_separator"] = "/";
  z["fill_value"] = -9;
  write_file(t.path() / ".zarray", z.dump());
  // Chunk (0,0): rows 0-1, cols 0-2, values 10*r + c, stored column-major big-endian.
  std::string chunk;
  for (int c = 0; c < 3; ++c)
    for (int r = 0; r < 2; ++r) {
      std::int16_t v = static_cast<std::int16_t>(10 * r + c);
      chunk.push_back(static_cast<char>((v >> 8) & 0xff));
      chunk.push_back(static_cast<char>(v & 0xff));
    }
  write_file(t.path() / "0/0", chunk);
  auto r = open_dir(t)->read_all();
  EXPECT_EQ(r.dtype.numpy_str(), "<i2");
  std::vector<std::int16_t> got(r.values<std::int16_t>().begin(), r.values<std::int16_t>().end());
  EXPECT_EQ(got, (std::vector<std::int16_t>{0, 1, 2, -9, 10, 11, 12, -9, -9, -9, -9, -9}));
}

}  // namespace
}  // namespace lazycube
