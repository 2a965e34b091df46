// Hand-written Zarr v3 arrays: sharding (index at start/end, nested, empty inner chunks,
// missing shards, partial range reads), transpose, endianness, key encodings, fill values.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>
#include <nlohmann/json.hpp>

#include "zarr/zarr_array.hpp"
#include "lazycube/error.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "zarr_test_writer.hpp"

namespace lazycube {
namespace {

using namespace lazycube::test;
using nlohmann::json;

ArrayPtr open_root(const fs::path& dir) { return zarr::open_array(make_file_store(dir.string()), ""); }

// Reference selection: values[start + k*step] per dim, C order.
std::vector<float> select_ref(const std::vector<float>& v, const Shape& shape, const ArraySelection& sel) {
  std::vector<float> out;
  Shape counts;
  for (auto& r : sel) counts.push_back(r.count);
  const auto strides = grid::c_strides(shape);
  for (std::uint64_t i = 0; i < shape_size(counts); ++i) {
    auto k = grid::unravel(i, counts);
    std::uint64_t off = 0;
    for (std::size_t d = 0; d < k.size(); ++d) off += sel[d].at(k[d]) * strides[d];
    out.push_back(v[off]);
  }
  return out;
}

std::vector<float> read_f32(const Array& a, const ArraySelection& sel) {
  NDArray r = a.read(sel);
  auto s = r.values<float>();
  return {s.begin(), s.end()};
}

// Rewrites one index entry of a shard file as "empty" (2^64-1 twice), fixing the CRC.
void mark_inner_empty(const fs::path& shard_file, std::uint64_t entry, std::uint64_t n_inner, bool at_end) {
  std::string bytes = read_file(shard_file);
  const std::size_t isz = 16 * n_inner + 4;
  const std::size_t start = at_end ? bytes.size() - isz : 0;
  std::string index = bytes.substr(start, 16 * n_inner);
  std::memset(index.data() + 16 * entry, 0xff, 16);
  auto crc = codec::make_bytes_codec("crc32c", json::object(), {DataType::uint(1), {index.size()}});
  Buffer enc = crc->encode(ByteView(reinterpret_cast<const std::byte*>(index.data()), index.size()));
  bytes.replace(start, isz, std::string(reinterpret_cast<const char*>(enc.data()), enc.size()));
  write_file(shard_file, bytes);
}

class ShardedV3 : public ::testing::TestWithParam<const char*> {};

TEST_P(ShardedV3, ReadsWholeAndPartialSelectionsWithEmptyAndMissingChunks) {
  TempDir tmp;
  const Shape shape{10, 12};
  const std::string loc = GetParam();
  // Shards of 4x6 with inner chunks 2x3: the last shard row is partial (rows 8-9 of 8-11).
  json meta = v3_array_json(shape, {4, 6}, "float32",
                            json::array({sharding_codec({2, 3}, json::array({bytes_codec(), zstd_codec()}), loc.c_str())}),
                            -1.5);
  auto values = ramp(shape_size(shape));
  // Shard (1, 1) is missing entirely.
  write_v3_array(tmp.path(), meta, values.data(), 4,
                 [](const std::vector<std::uint64_t>& c) { return c[0] == 1 && c[1] == 1; });
  // Inner chunk 3 (row 1, col 1 of the 2x2 grid) of shard (0, 0) is empty.
  mark_inner_empty(tmp.path() / "c/0/0", 3, 4, loc == "end");
  auto expected = values;
  auto set_fill = [&](std::uint64_t r0, std::uint64_t r1, std::uint64_t c0, std::uint64_t c1) {
    for (auto r = r0; r < r1; ++r)
      for (auto c = c0; c < c1; ++c) expected[r * 12 + c] = -1.5f;
  };
  set_fill(2, 4, 3, 6);   // empty inner chunk
  set_fill(4, 8, 6, 12);  // missing shard

  auto a = open_root(tmp.path());
  EXPECT_EQ(a->chunk_shape(), (Shape{4, 6}));
  EXPECT_EQ(a->read_chunk_shape(), (Shape{2, 3}));
  const ArraySelection all{IndexRange::all(10), IndexRange::all(12)};
  EXPECT_EQ(read_f32(*a, all), expected);
  for (const ArraySelection& sel : {
           ArraySelection{{1, 5, 2}, {2, 7, 1}},
           ArraySelection{{9, 4, -2}, {11, 6, -2}},
           ArraySelection{{3, 1, 1}, {0, 12, 1}},
           ArraySelection{{0, 4, 3}, {5, 1, 1}},
       })
    EXPECT_EQ(read_f32(*a, sel), select_ref(expected, shape, sel));
}

INSTANTIATE_TEST_SUITE_P(IndexLocation, ShardedV3, ::testing::Values("end", "start"));

TEST(ZarrV3, NestedShardingReadsInnermostChunks) {
  TempDir tmp;
  const Shape shape{8, 8};
  json inner = json::array({sharding_codec({2, 2}, json::array({bytes_codec(), zstd_codec()}), "start")});
  json meta = v3_array_json(shape, {8, 8}, "float32", json::array({sharding_codec({4, 4}, inner, "end")}));
  auto values = ramp(64);
  write_v3_array(tmp.path(), meta, values.data(), 4);
  auto a = open_root(tmp.path());
  EXPECT_EQ(a->read_chunk_shape(), (Shape{2, 2}));
  const ArraySelection all{IndexRange::all(8), IndexRange::all(8)};
  EXPECT_EQ(read_f32(*a, all), values);
  const ArraySelection part{{3, 3, 2}, {1, 5, 1}};
  EXPECT_EQ(read_f32(*a, part), select_ref(values, shape, part));
}

// A store wrapper that records every request.
class RecordingStore : public Store {
 public:
  explicit RecordingStore(std::shared_ptr<Store> inner) : inner_(std::move(inner)) {}
  std::string url() const override { return inner_->url(); }
  std::optional<Buffer> get(std::string_view key, ByteRange range) override {
    std::lock_guard lock(mutex_);
    requests.push_back({std::string(key), range});
    return inner_->get(key, range);
  }
  std::optional<std::uint64_t> size(std::string_view key) override { return inner_->size(key); }
  std::vector<std::string> list(std::string_view p) override { return inner_->list(p); }
  std::vector<std::string> list_dir(std::string_view p) override { return inner_->list_dir(p); }
  std::vector<ByteRequest> requests;

 private:
  std::shared_ptr<Store> inner_;
  std::mutex mutex_;
};

TEST(ZarrV3, ShardedReadFetchesOnlyNeededInnerChunksByRange) {
  TempDir tmp;
  json meta = v3_array_json({8, 8}, {8, 8}, "float32",
                            json::array({sharding_codec({2, 2}, json::array({bytes_codec(), zstd_codec()}))}));
  auto values = ramp(64);
  write_v3_array(tmp.path(), meta, values.data(), 4);
  auto rec = std::make_shared<RecordingStore>(make_file_store(tmp.str()));
  auto a = zarr::open_array(rec, "");
  rec->requests.clear();
  // Rows 2-3, cols 4-5: exactly inner chunk (1, 2).
  const ArraySelection sel{{2, 2, 1}, {4, 2, 1}};
  EXPECT_EQ(read_f32(*a, sel), select_ref(values, {8, 8}, sel));
  ASSERT_EQ(rec->requests.size(), 2u);
  EXPECT_EQ(rec->requests[0].key, "c/0/0");
  EXPECT_EQ(rec->requests[0].range.kind, ByteRange::Kind::Suffix);
  EXPECT_EQ(rec->requests[0].range.length, 16u * 16 + 4);
  EXPECT_EQ(rec->requests[1].range.kind, ByteRange::Kind::Range);
  // A second read of another inner chunk reuses the cached index.
  rec->requests.clear();
  const ArraySelection sel2{{6, 2, 1}, {0, 1, 1}};
  EXPECT_EQ(read_f32(*a, sel2), select_ref(values, {8, 8}, sel2));
  ASSERT_EQ(rec->requests.size(), 1u);
  EXPECT_EQ(rec->requests[0].range.kind, ByteRange::Kind::Range);
}

TEST(ZarrV3, CorruptShardIndexChecksumIsCodecError) {
  TempDir tmp;
  json meta = v3_array_json({4, 4}, {4, 4}, "float32",
                            json::array({sharding_codec({2, 2}, json::array({bytes_codec()}))}));
  auto values = ramp(16);
  write_v3_array(tmp.path(), meta, values.data(), 4);
  std::string bytes = read_file(tmp.path() / "c/0/0");
  bytes[bytes.size() - 10] ^= 0x5a;  // inside the index
  write_file(tmp.path() / "c/0/0", bytes);
  auto a = open_root(tmp.path());
  try {
    a->read_all();
    FAIL() << "expected CodecError";
  } catch (const CodecError& e) {
    EXPECT_NE(std::string(e.what()).find("shard index of"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("c/0/0"), std::string::npos) << e.what();
  }
}

TEST(ZarrV3, TruncatedShardIsCodecErrorNamingTheChunk) {
  TempDir tmp;
  json meta = v3_array_json({4, 4}, {4, 4}, "float32",
                            json::array({sharding_codec({2, 2}, json::array({bytes_codec()}), "start")}));
  auto values = ramp(16);
  write_v3_array(tmp.path(), meta, values.data(), 4);
  std::string bytes = read_file(tmp.path() / "c/0/0");
  write_file(tmp.path() / "c/0/0", bytes.substr(0, bytes.size() - 8));
  auto a = open_root(tmp.path());
  try {
    a->read_all();
    FAIL() << "expected CodecError";
  } catch (const CodecError& e) {
    EXPECT_NE(std::string(e.what()).find("shard 'c/0/0'"), std::string::npos) << e.what();
  }
}

TEST(ZarrV3, TransposeBigEndianAndDotSeparator) {
  TempDir tmp;
  const Shape shape{3, 4, 5};
  json meta = v3_array_json(shape, {2, 3, 5}, "float32",
                            json::array({{{"name", "transpose"}, {"configuration", {{"order", {2, 0, 1}}}}},
                                         bytes_codec("big"), zstd_codec()}));
  meta["chunk_key_encoding"] = {{"name", "default"}, {"configuration", {{"separator", "."}}}};
  auto values = ramp(shape_size(shape));
  write_v3_array(tmp.path(), meta, values.data(), 4);
  EXPECT_TRUE(fs::exists(tmp.path() / "c.1.1.0"));
  auto a = open_root(tmp.path());
  EXPECT_EQ(read_f32(*a, {IndexRange::all(3), IndexRange::all(4), IndexRange::all(5)}), values);
}

TEST(ZarrV3, V2KeyEncodingAndZeroDimArray) {
  TempDir tmp;
  json meta = v3_array_json({}, {}, "int16", json::array({bytes_codec()}), 7);
  meta["chunk_key_encoding"] = {{"name", "v2"}, {"configuration", {{"separator", "/"}}}};
  write_file(tmp.path() / "zarr.json", meta.dump());
  auto a = open_root(tmp.path());
  NDArray r = a->read_all();  // chunk "0" is absent → fill
  ASSERT_EQ(r.values<std::int16_t>().size(), 1u);
  EXPECT_EQ(r.values<std::int16_t>()[0], 7);
  const std::int16_t v = -300;
  write_file(tmp.path() / "0", &v, 2);
  EXPECT_EQ(a->read_all().values<std::int16_t>()[0], -300);
}

TEST(ZarrV3, FillValueForms) {
  struct Case {
    json data_type, fill;
    std::string expect_hex;  // little-endian bytes of the fill
  };
  const std::vector<Case> cases = {
      {"float32", "NaN", "0000c07f"},
      {"float32", "0x7fc00001", "0100c07f"},
      {"float64", "-Infinity", "000000000000f0ff"},
      {"float16", "Infinity", "007c"},
      {"float16", 1.0, "003c"},
      {"complex64", json::array({1.0, "NaN"}), "0000803f0000c07f"},
      {"bool", true, "01"},
      {"int8", -2, "fe"},
      {"uint64", 18446744073709551615ull, "ffffffffffffffff"},
      {{{"name", "numpy.datetime64"}, {"configuration", {{"unit", "s"}, {"scale_factor", 1}}}}, "NaT", "0000000000000080"},
      {"int32", nullptr, "00000000"},
      // fixed-length bytes: base64 text (zarr-python 3.3), b"none"
      {{{"name", "null_terminated_bytes"}, {"configuration", {{"length_bytes", 4}}}}, "bm9uZQ==", "6e6f6e65"},
      {{{"name", "fixed_length_bytes"}, {"configuration", {{"length_bytes", 2}}}}, "AP8=", "00ff"},
      // the spec's "μs" is "us"
      {{{"name", "numpy.datetime64"}, {"configuration", {{"unit", "\u03bcs"}, {"scale_factor", 1}}}}, 5, "0500000000000000"},
  };
  for (const auto& c : cases) {
    TempDir tmp;
    json meta = v3_array_json({2}, {2}, c.data_type, json::array({bytes_codec()}), c.fill);
    write_file(tmp.path() / "zarr.json", meta.dump());
    NDArray r = open_root(tmp.path())->read_all();
    std::string hex;
    char buf[3];
    for (std::size_t i = 0; i < r.dtype.itemsize; ++i) {
      std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned>(r.data.data()[i]));
      hex += buf;
    }
    EXPECT_EQ(hex, c.expect_hex) << c.data_type.dump() << " fill " << c.fill.dump();
  }
}

TEST(ZarrV3, ConsolidatedGroupListsArraysWithoutReadingTheirMetadata) {
  TempDir tmp;
  json arr = v3_array_json({4}, {2}, "int32", json::array({bytes_codec()}), 0);
  arr["dimension_names"] = {"x"};
  json group = {{"zarr_format", 3},
                {"node_type", "group"},
                {"attributes", {{"title", "t"}}},
                {"consolidated_metadata", {{"kind", "inline"}, {"must_understand", false}, {"metadata", {{"a", arr}}}}}};
  write_file(tmp.path() / "zarr.json", group.dump());
  const std::int32_t v[2] = {5, 6};
  write_file(tmp.path() / "a/c/1", v, 8);  // no a/zarr.json on purpose
  auto h = zarr::Hierarchy::open(open_location(tmp.str()));
  EXPECT_TRUE(h.used_consolidated());
  ASSERT_EQ(h.array_names(), std::vector<std::string>{"a"});
  EXPECT_EQ(h.attrs()["title"], "t");
  auto a = h.array("a");
  EXPECT_EQ(a->dimension_names(), std::vector<std::string>{"x"});
  auto r = a->read_all();
  EXPECT_EQ(std::vector<std::int32_t>(r.values<std::int32_t>().begin(), r.values<std::int32_t>().end()),
            (std::vector<std::int32_t>{0, 0, 5, 6}));
  EXPECT_THROW(zarr::Hierarchy::open(open_location(tmp.str()), false).array("a"), NotFound);
}

TEST(ZarrV3, FieldsAReaderMustUnderstandAreRefusedByName) {
  auto attempt = [](const json& group, const json& array) {
    TempDir tmp;
    write_file(tmp.path() / "zarr.json", group.dump());
    write_file(tmp.path() / "a" / "zarr.json", array.dump());
    return message_of<MetadataError>([&] { zarr::Hierarchy::open(open_location(tmp.str()), false).array("a")->read_all(); });
  };
  auto with = [](json base, const std::string& key, const json& value) {
    base[key] = value;
    return base;
  };
  const json group = {{"zarr_format", 3}, {"node_type", "group"}, {"attributes", json::object()}};
  const json array = v3_array_json({4}, {2}, "int32", json::array({bytes_codec()}), 0);
  const json optional = {{"must_understand", false}, {"anything", 1}};
  json optional_ext = optional;
  optional_ext["name"] = "x";
  // optional fields and extensions, and null ones (zarr-python's "consolidated_metadata": null), are ignored
  EXPECT_EQ(attempt(with(with(group, "future", optional), "consolidated_metadata", nullptr),
                    with(with(array, "future", optional), "extensions", json::array({optional_ext}))),
            "<no exception>");
  // must_understand true, or absent (which means true), or a field that is not an object: refused by name
  for (const json& value : {json({{"must_understand", true}}), json({{"anything", 1}}), json(7)}) {
    const std::string on_array = attempt(group, with(array, "frobnicate", value));
    EXPECT_NE(on_array.find("'frobnicate'"), std::string::npos) << on_array;
    EXPECT_NE(on_array.find("must understand"), std::string::npos) << on_array;
    const std::string on_group = attempt(with(group, "frobnicate", value), array);
    EXPECT_NE(on_group.find("'frobnicate'"), std::string::npos) << on_group;
  }
  const std::string ext = attempt(group, with(array, "extensions", json::array({{{"name", "rectangles"}}})));
  EXPECT_NE(ext.find("\"rectangles\""), std::string::npos) << ext;
}

}  // namespace
}  // namespace lazycube
