// The Zarr writer on local directories: round trips through our own reader (v2, v3, sharded,
// edge units), the v3 shard layout against the spec, fill-value skipping, groups, attributes,
// dimension names, consolidated metadata, metadata absent before commit, Create / Overwrite /
// Resume, bad specs refused before any key is written, store failures, resume verification.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <nlohmann/json.hpp>

#include "zarr/sharding_codec.hpp"
#include "lazycube/codec/codec.hpp"
#include "lazycube/error.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "lazycube/zarr/writer.hpp"
#include "test_support.hpp"
#include "zarr_writer_test_data.hpp"

using namespace lazycube;
using namespace lazycube::zarr;
using lazycube::test::message_of;
using lazycube::test::TempDir;
using lazycube::test::values_array;
using lazycube::test::write_whole;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

ArraySpec spec_of(int format, Shape shape, Shape chunks, std::string codecs = "zstd:3", Shape shards = {}) {
  ArraySpec s;
  s.zarr_format = format;
  s.dtype = DataType::float_(4);
  s.shape = std::move(shape);
  s.chunk_shape = std::move(chunks);
  s.shard_shape = std::move(shards);
  s.codecs = std::move(codecs);
  s.fill_value = "NaN";
  return s;
}

NDArray read_back(const std::string& dir, const std::string& name, std::optional<bool> consolidated = std::nullopt) {
  const auto h = Hierarchy::open(open_location(dir), consolidated);
  return h.array(name)->read_all();
}

void expect_equal(const NDArray& got, const NDArray& want) {
  ASSERT_EQ(got.shape, want.shape);
  ASSERT_EQ(got.dtype, want.dtype);
  ASSERT_EQ(got.data.size(), want.data.size());
  EXPECT_EQ(std::memcmp(got.data.data(), want.data.data(), got.data.size()), 0);
}

json read_json_file(const fs::path& p) { return json::parse(lazycube::test::read_file(p)); }

}  // namespace

// Round trips through our reader, each format and layout, with edge units on every dim.
TEST(ZarrWriter, RoundTripsV2V3AndShardedWithEdges) {
  struct Case {
    int format;
    Shape shards;
    const char* codecs;
  };
  for (const Case& c : {Case{2, {}, "zstd:3"}, Case{3, {}, "blosc:lz4:5:shuffle"}, Case{3, {4, 6}, "gzip:6"},
                        Case{3, {8, 9}, "none"}}) {
    SCOPED_TRACE("v" + std::to_string(c.format) + " " + c.codecs + " shards " + json(c.shards).dump());
    TempDir dir;
    const NDArray values = values_array({10, 13}, 0.25f);
    {
      Writer w(open_location(dir.str()));
      auto a = w.create_array("x", spec_of(c.format, {10, 13}, {2, 3}, c.codecs, c.shards));
      write_whole(*a, values);
      w.commit();
    }
    expect_equal(read_back(dir.str(), "x"), values);
  }
}

// write_unit_by_chunks (convert's path): a shard asked for one inner chunk at a time, never
// whole, is stored byte for byte as write_unit stores it from the whole shard: inner chunks of
// only the fill value left out, those across the array's end padded, those past it never asked
// for; unsharded units asked for whole. One scratch buffer serves every unit.
TEST(ZarrWriter, UnitsWrittenChunkByChunkEqualWholeUnits) {
  for (const Shape& shards : {Shape{}, Shape{4, 6}, Shape{8, 9}}) {
    SCOPED_TRACE("shards " + json(shards).dump());
    TempDir dir;
    NDArray values = values_array({10, 13}, 0.25f);
    auto v = values.values<float>();
    for (std::size_t i = 0; i < 2 * 13; ++i) v[i] = std::numeric_limits<float>::quiet_NaN();  // rows 0-1: fill
    const ArraySpec spec = spec_of(3, {10, 13}, {2, 3}, "blosc:lz4:5:shuffle", shards);
    std::atomic<std::size_t> asked{0};  // the filler runs on several threads at once
    {
      Writer w(open_location(dir.str()));
      write_whole(*w.create_array("whole", spec), values);
      auto a = w.create_array("by_chunks", spec);
      Buffer scratch;
      for (std::uint64_t u = 0; u < a->num_units(); ++u) {
        const auto index = a->unit_index(u);
        a->write_unit_by_chunks(
            index,
            [&](const std::vector<std::uint64_t>& origin, const Shape& extent, MutableByteView dest) {
              ++asked;
              for (std::size_t d = 0; d < 2; ++d) {
                ASSERT_LT(origin[d], spec.shape[d]);
                ASSERT_LE(origin[d] + extent[d], spec.shape[d]);
                if (!shards.empty()) {
                  ASSERT_LE(extent[d], spec.chunk_shape[d]);  // one inner chunk
                }
              }
              const NDArray part = lazycube::test::slice(values, origin, extent);
              ASSERT_EQ(dest.size(), part.data.size());
              std::memcpy(dest.data(), part.data.data(), dest.size());
            },
            scratch);
      }
      w.commit();
    }
    // Every chunk inside the array asked for once: 5 x 5 inner chunks (or units).
    EXPECT_EQ(asked.load(), 5u * 5u);
    expect_equal(read_back(dir.str(), "by_chunks"), values);
    // A chunk that fails to arrive fails the unit (inner chunks are filled on several threads
    // and appended in order: the others must not wait for it forever).
    {
      Writer w = Writer::open((dir.path() / "failing").string());
      auto a = w.create_array("x", spec);
      Buffer scratch;
      EXPECT_THROW(a->write_unit_by_chunks(
                       a->unit_index(a->num_units() - 1),
                       [&](const std::vector<std::uint64_t>&, const Shape&, MutableByteView) {
                         throw StoreError("chunk lost");
                       },
                       scratch),
                   StoreError);
    }
    for (const auto& entry : fs::recursive_directory_iterator(dir.path() / "whole")) {
      if (!entry.is_regular_file() || entry.path().filename() == "zarr.json") continue;
      const fs::path twin = dir.path() / "by_chunks" / fs::relative(entry.path(), dir.path() / "whole");
      ASSERT_TRUE(fs::exists(twin)) << twin;
      EXPECT_EQ(lazycube::test::read_file(twin), lazycube::test::read_file(entry.path())) << twin;
    }
  }
}

// Every codec of the spec text, in both formats (crc32c: v3 only), read back by our reader.
TEST(ZarrWriter, EachSpecTextCodecRoundTrips) {
  const NDArray values = values_array({7, 5}, 0.5f);
  for (int format : {2, 3})
    for (const char* codecs : {"none", "zstd:5", "gzip:6", "zlib:5", "lz4", "blosc", "blosc:zstd:3:bitshuffle",
                               "blosc:lz4:5:noshuffle", "crc32c", "zstd:1+crc32c"}) {
      if (format == 2 && std::string(codecs).find("crc32c") != std::string::npos) continue;
      SCOPED_TRACE(std::string(codecs) + " v" + std::to_string(format));
      TempDir dir;
      Writer w(open_location(dir.str()));
      write_whole(*w.create_array("x", spec_of(format, {7, 5}, {3, 2}, codecs)), values);
      w.commit();
      expect_equal(read_back(dir.str(), "x"), values);
    }
}

// bitround in the spec text: the array->array codec goes before `bytes`, and what reads back
// is the data rounded as the codec rounds it (keepbits 4 of float32's 23 mantissa bits).
TEST(ZarrWriter, BitroundSpecTextWritesRoundedData) {
  const NDArray values = values_array({6, 5}, 0.37f);
  for (const Shape& shards : {Shape{}, Shape{6, 4}}) {
    TempDir dir;
    {
      Writer w(open_location(dir.str()));
      write_whole(*w.create_array("x", spec_of(3, {6, 5}, {3, 2}, "bitround:4+zstd:3", shards)), values);
      w.commit();
    }
    const json meta = read_json_file(fs::path(dir.str()) / "x" / "zarr.json");
    const json& chain = shards.empty() ? meta["codecs"] : meta["codecs"][0]["configuration"]["codecs"];
    EXPECT_EQ(chain[0]["name"], "bitround");
    EXPECT_EQ(chain[1]["name"], "bytes");
    EXPECT_EQ(chain[2]["name"], "zstd");
    const NDArray got = read_back(dir.str(), "x");
    ASSERT_EQ(got.data.size(), values.data.size());
    for (std::size_t i = 0; i < values.data.size() / 4; ++i) {
      std::uint32_t b;
      std::memcpy(&b, values.data.data() + 4 * i, 4);
      b = (b + ((b >> 19) & 1u) + ((1u << 18) - 1)) & ~((1u << 19) - 1);  // numcodecs BitRound
      float want, have;
      std::memcpy(&want, &b, 4);
      std::memcpy(&have, got.data.data() + 4 * i, 4);
      EXPECT_EQ(have, want) << i;
    }
  }
}

// The whole-unit form of write_unit: the padding past the array's end is replaced by the fill.
TEST(ZarrWriter, WholeUnitDataAtTheEdgeIsPaddedWithFill) {
  TempDir dir;
  Writer w(open_location(dir.str()), {.write_empty_chunks = true});
  auto spec = spec_of(3, {5}, {4}, "none");
  spec.fill_value = -1;
  auto a = w.create_array("x", spec);
  std::vector<float> whole = {1, 2, 3, 4}, edge = {5, 99, 99, 99};
  a->write_unit({0}, ByteView(reinterpret_cast<const std::byte*>(whole.data()), 16));
  a->write_unit({1}, ByteView(reinterpret_cast<const std::byte*>(edge.data()), 16));
  w.commit();
  // The stored edge chunk (codec "bytes" only) holds 5 then the fill value -1.
  const std::string raw = lazycube::test::read_file(dir.path() / "x" / "c" / "1");
  ASSERT_EQ(raw.size(), 16u);
  float stored[4];
  std::memcpy(stored, raw.data(), 16);
  EXPECT_EQ(stored[0], 5.0f);
  for (int i = 1; i < 4; ++i) EXPECT_EQ(stored[i], -1.0f);
  const NDArray back = read_back(dir.str(), "x");
  EXPECT_EQ(back.values<float>()[4], 5.0f);
}

// zarr.json as zarr-python 3 writes it; the shard: inner chunks then the index at the end,
// 16 bytes (offset, nbytes: little-endian u64) per inner chunk in C order, empty ones all ones,
// then the CRC-32C of the index.
TEST(ZarrWriter, ShardLayoutFollowsTheSpec) {
  TempDir dir;
  Writer w(open_location(dir.str()));
  auto spec = spec_of(3, {4, 4}, {2, 2}, "none", {4, 4});
  spec.fill_value = 0;
  auto a = w.create_array("s", spec);
  NDArray values = values_array({4, 4}, 1.0f);
  // Inner chunk (0, 1) holds only the fill value: left out of the shard.
  for (int r = 0; r < 2; ++r)
    for (int c = 2; c < 4; ++c) values.values<float>()[r * 4 + c] = 0;
  a->write_region({0, 0}, values);
  w.commit();

  const json meta = read_json_file(dir.path() / "s" / "zarr.json");
  EXPECT_EQ(meta["chunk_grid"]["configuration"]["chunk_shape"], json({4, 4}));
  const json& sharding = meta["codecs"][0];
  EXPECT_EQ(sharding["name"], "sharding_indexed");
  EXPECT_EQ(sharding["configuration"]["chunk_shape"], json({2, 2}));
  EXPECT_EQ(sharding["configuration"]["index_location"], "end");
  EXPECT_EQ(sharding["configuration"]["index_codecs"][1]["name"], "crc32c");

  const std::string shard = lazycube::test::read_file(dir.path() / "s" / "c" / "0" / "0");
  const std::size_t index_bytes = 4 * 16 + 4;
  ASSERT_EQ(shard.size(), 3 * 16 + index_bytes);  // three stored chunks of 2x2 float32
  const std::string index = shard.substr(shard.size() - index_bytes);
  auto u64 = [&](std::size_t at) {
    std::uint64_t v;
    std::memcpy(&v, index.data() + at, 8);
    return v;
  };
  EXPECT_EQ(u64(0), 0u);    // chunk (0,0) first
  EXPECT_EQ(u64(8), 16u);
  EXPECT_EQ(u64(16), ~std::uint64_t{0});  // chunk (0,1): empty
  EXPECT_EQ(u64(24), ~std::uint64_t{0});
  EXPECT_EQ(u64(32), 16u);  // chunk (1,0)
  EXPECT_EQ(u64(48), 32u);  // chunk (1,1)
  // The checksum: the crc32c codec of our registry over the 64 index bytes.
  auto crc = codec::make_bytes_codec("crc32c", json::object(), {DataType::uint(1), {}});
  const Buffer with_crc = crc->encode(ByteView(reinterpret_cast<const std::byte*>(index.data()), 64));
  EXPECT_EQ(std::memcmp(with_crc.data() + 64, index.data() + 64, 4), 0);
  // Inner chunk (1,0) holds rows 2-3, columns 0-1.
  float inner[4];
  std::memcpy(inner, shard.data() + 16, 16);
  EXPECT_EQ(inner[0], values.values<float>()[8]);
  EXPECT_EQ(inner[3], values.values<float>()[13]);
  expect_equal(read_back(dir.str(), "s"), values);
}

// An edge shard's inner chunks wholly past the array's end are never stored, even when empty
// chunks are written (zarr-python writes only the chunks a selection touches).
TEST(ZarrWriter, InnerChunksPastTheEndAreNotStored) {
  TempDir dir;
  Writer w(open_location(dir.str()), {.write_empty_chunks = true});
  auto spec = spec_of(3, {5}, {2}, "none", {4});
  spec.fill_value = 0;
  auto a = w.create_array("x", spec);
  write_whole(*a, values_array({5}, 0.0f));  // all 1.0
  w.commit();
  const std::string shard = lazycube::test::read_file(dir.path() / "x" / "c" / "1");
  ASSERT_EQ(shard.size(), 8u + 2 * 16 + 4);  // one stored inner chunk of 2 float32, then the index
  std::uint64_t entry[4];
  std::memcpy(entry, shard.data() + 8, 32);
  EXPECT_EQ(entry[0], 0u);
  EXPECT_EQ(entry[1], 8u);
  EXPECT_EQ(entry[2], ~std::uint64_t{0});
  EXPECT_EQ(entry[3], ~std::uint64_t{0});
  expect_equal(read_back(dir.str(), "x"), values_array({5}, 0.0f));
}

TEST(ZarrWriter, UnitsOfOnlyTheFillValueAreSkippedUnlessAsked) {
  for (bool write_empty : {false, true}) {
    SCOPED_TRACE(write_empty);
    TempDir dir;
    Writer w(open_location(dir.str()), {.write_empty_chunks = write_empty});
    auto a = w.create_array("x", spec_of(2, {4}, {2}));
    std::vector<float> nan(2, std::nanf("")), data = {1, 2};
    EXPECT_EQ(a->write_unit({0}, ByteView(reinterpret_cast<const std::byte*>(nan.data()), 8)), write_empty);
    EXPECT_TRUE(a->write_unit({1}, ByteView(reinterpret_cast<const std::byte*>(data.data()), 8)));
    w.commit();
    EXPECT_EQ(fs::exists(dir.path() / "x" / "0"), write_empty);
    EXPECT_TRUE(fs::exists(dir.path() / "x" / "1"));
    const NDArray back = read_back(dir.str(), "x");
    EXPECT_TRUE(std::isnan(back.values<float>()[0]));
    EXPECT_EQ(back.values<float>()[3], 2.0f);
  }
  // A v2 array without a fill value stores every chunk: readers have nothing to fill with.
  TempDir dir;
  Writer w(open_location(dir.str()));
  auto spec = spec_of(2, {2}, {2});
  spec.fill_value = nullptr;
  auto a = w.create_array("x", spec);
  std::vector<float> zeros(2, 0.0f);
  EXPECT_TRUE(a->write_unit({0}, ByteView(reinterpret_cast<const std::byte*>(zeros.data()), 8)));
  w.commit();
  EXPECT_TRUE(read_json_file(dir.path() / "x" / ".zarray")["fill_value"].is_null());
}

TEST(ZarrWriter, GroupsAttributesDimensionNamesAndConsolidatedMetadata) {
  for (int format : {2, 3}) {
    SCOPED_TRACE(format);
    TempDir dir;
    const NDArray t = values_array({3, 4}, 0.5f), lat = values_array({3}, 10.0f);
    {
      Writer w(open_location(dir.str()));
      w.create_group("", {{"title", "test"}});
      w.create_group("sub", {{"level", 2}});
      auto spec = spec_of(format, {3, 4}, {2, 2});
      spec.dimension_names = {"lat", "lon"};
      spec.attributes = {{"units", "K"}};
      write_whole(*w.create_array("t", spec), t);
      auto lat_spec = spec_of(format, {3}, {3});
      lat_spec.dimension_names = {"lat"};
      write_whole(*w.create_array("sub/lat", lat_spec), lat);
      w.commit();
    }
    for (std::optional<bool> consolidated : {std::optional<bool>(true), std::optional<bool>(false)}) {
      const auto h = Hierarchy::open(open_location(dir.str()), consolidated);
      EXPECT_EQ(h.zarr_format(), format);
      EXPECT_EQ(h.used_consolidated(), *consolidated);
      EXPECT_EQ(h.attrs().value("title", ""), "test");
      EXPECT_EQ(h.array_names(), std::vector<std::string>{"t"});
      EXPECT_EQ(h.group_names(), std::vector<std::string>{"sub"});
      const auto a = h.array("t");
      EXPECT_EQ(a->dimension_names(), (std::vector<std::string>{"lat", "lon"}));
      EXPECT_EQ(a->attrs().value("units", ""), "K");
      expect_equal(a->read_all(), t);
      const auto sub = Hierarchy::open({open_location(dir.str()).store, "sub"}, false);
      EXPECT_EQ(sub.attrs().value("level", 0), 2);
      EXPECT_EQ(sub.array("lat")->dimension_names(), std::vector<std::string>{"lat"});
      expect_equal(sub.array("lat")->read_all(), lat);
    }
    if (format == 2) {
      // As xarray writes it: the names in the _ARRAY_DIMENSIONS attribute.
      EXPECT_EQ(read_json_file(dir.path() / "t" / ".zattrs")["_ARRAY_DIMENSIONS"], json({"lat", "lon"}));
      const json zmeta = read_json_file(dir.path() / ".zmetadata");
      EXPECT_EQ(zmeta["zarr_consolidated_format"], 1);
      EXPECT_TRUE(zmeta["metadata"].contains("sub/lat/.zarray"));
      EXPECT_TRUE(zmeta["metadata"].contains(".zgroup"));
    } else {
      const json root = read_json_file(dir.path() / "zarr.json");
      EXPECT_EQ(root["consolidated_metadata"]["kind"], "inline");
      const json& members = root["consolidated_metadata"]["metadata"];
      EXPECT_EQ(members["sub/lat"]["node_type"], "array");
      // As zarr-python 3 flattens it: a sub-group with an empty inline block; on disk, none.
      EXPECT_EQ(members["sub"]["consolidated_metadata"]["metadata"], json::object());
      EXPECT_FALSE(read_json_file(dir.path() / "sub" / "zarr.json").contains("consolidated_metadata"));
    }
  }
}

TEST(ZarrWriter, NoMetadataBeforeCommit) {
  for (int format : {2, 3}) {
    TempDir dir;
    Writer w(open_location(dir.str()));
    auto a = w.create_array("x", spec_of(format, {4}, {2}));
    write_whole(*a, values_array({4}, 1.0f));
    EXPECT_THROW(Hierarchy::open(open_location(dir.str())), NotFound);
    EXPECT_THROW(open_array(open_location(dir.str()).store, "x"), NotFound);
    w.commit();
    EXPECT_NO_THROW(Hierarchy::open(open_location(dir.str())).array("x"));
  }
}

TEST(ZarrWriter, ExistingDestinationIsRefusedUnlessOverwrite) {
  TempDir dir;
  {
    Writer w(open_location(dir.str()));
    write_whole(*w.create_array("old", spec_of(3, {4}, {2})), values_array({4}, 1.0f));
    w.commit();
  }
  const std::string msg = message_of<StoreError>([&] { Writer w(open_location(dir.str())); });
  EXPECT_NE(msg.find("already exists"), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir.str()), std::string::npos) << msg;

  Writer w(open_location(dir.str()), {.mode = WriteMode::Overwrite});
  write_whole(*w.create_array("new", spec_of(3, {4}, {2})), values_array({4}, 2.0f));
  w.commit();
  const auto h = Hierarchy::open(open_location(dir.str()));
  EXPECT_EQ(h.array_names(), std::vector<std::string>{"new"});
  EXPECT_FALSE(fs::exists(dir.path() / "old" / "zarr.json"));
  EXPECT_FALSE(fs::exists(dir.path() / "old" / "c" / "0"));
}

// prepare(): what Overwrite removes is gone before any unit is written (writers in several
// processes prepare before any of them writes), once: units written after it stay.
TEST(ZarrWriter, PrepareRemovesTheOldStoreBeforeAnyWrite) {
  TempDir dir;
  {
    Writer w(open_location(dir.str()));
    write_whole(*w.create_array("old", spec_of(3, {4}, {2})), values_array({4}, 1.0f));
    w.commit();
  }
  Writer w(open_location(dir.str()), {.mode = WriteMode::Overwrite});
  auto a = w.create_array("new", spec_of(3, {4}, {2}));
  EXPECT_TRUE(fs::exists(dir.path() / "old" / "zarr.json"));  // nothing removed before prepare()
  w.prepare();
  EXPECT_TRUE(open_location(dir.str()).store->list("").empty());
  write_whole(*a, values_array({4}, 2.0f));
  w.prepare();  // once per writer: the new units stay
  w.commit();
  EXPECT_EQ(Hierarchy::open(open_location(dir.str())).array_names(), std::vector<std::string>{"new"});
  EXPECT_TRUE(fs::exists(dir.path() / "new" / "c" / "0"));
}

TEST(ZarrWriter, BadSpecsFailBeforeAnyKeyIsWritten) {
  struct Bad {
    ArraySpec spec;
    const char* expect;
  };
  auto with = [](std::function<void(ArraySpec&)> f) {
    ArraySpec s = spec_of(3, {10, 10}, {5, 5});
    f(s);
    return s;
  };
  const std::vector<Bad> bad = {
      {with([](ArraySpec& s) { s.codecs = "snappy:3"; }), "unknown codec 'snappy'"},
      {with([](ArraySpec& s) { s.codecs = "zstd:high"; }), "'zstd:high'"},
      {with([](ArraySpec& s) { s.codecs = "blosc:nope"; }), "nope"},
      {with([](ArraySpec& s) { s.codecs = "gzip:12"; }), "level"},
      {with([](ArraySpec& s) { s.shard_shape = {10, 7}; s.dimension_names = {"y", "x"}; }), "dim 1 ('x')"},
      {with([](ArraySpec& s) { s.zarr_format = 2; s.shard_shape = {10, 10}; }), "Zarr v3"},
      {with([](ArraySpec& s) { s.chunk_shape = {5}; }), "chunk shape"},
      {with([](ArraySpec& s) { s.dimension_names = {"a"}; }), "dimension names"},
      {with([](ArraySpec& s) { s.dtype = DataType::int_(2); s.fill_value = "NaN"; }), "fill_value"},
      {with([](ArraySpec& s) { s.zarr_format = 2; s.codecs = "zstd+crc32c"; }), "crc32c"},
  };
  TempDir dir;
  Writer w(open_location(dir.str()), {.mode = WriteMode::Overwrite});
  for (const auto& b : bad) {
    std::string msg;
    try {
      w.create_array("x", b.spec);
      msg = "<no exception>";
    } catch (const Error& e) {
      msg = e.what();
    }
    EXPECT_NE(msg.find(b.expect), std::string::npos) << "expected '" << b.expect << "' in: " << msg;
  }
  EXPECT_TRUE(open_location(dir.str()).store->list("").empty());
}

TEST(ZarrWriter, StoreFailureNamesTheKeyAndCommitWritesNoMetadata) {
  TempDir dir;
  Writer w(open_location(dir.str()));
  auto a = w.create_array("x", spec_of(3, {4}, {2}));
  // A file where the chunks' directory belongs: every chunk put fails (for root too).
  lazycube::test::write_file(dir.path() / "x" / "c", "in the way");
  const std::string msg = message_of<StoreError>([&] { write_whole(*a, values_array({4}, 1.0f)); });
  EXPECT_NE(msg.find("x/c/"), std::string::npos) << msg;
  const std::string commit = message_of<StoreError>([&] { w.commit(); });
  EXPECT_NE(commit.find("an earlier write failed"), std::string::npos) << commit;
  EXPECT_FALSE(fs::exists(dir.path() / "x" / "zarr.json"));
  EXPECT_FALSE(fs::exists(dir.path() / "zarr.json"));
}

TEST(ZarrWriter, ReadOnlyStoresAreRefused) {
  const std::string msg = message_of<StoreError>([] { open_writable_location("http://127.0.0.1:1/x.zarr"); });
  EXPECT_NE(msg.find("read-only"), std::string::npos) << msg;
}

TEST(ZarrWriter, OpenCreatesAMissingLocalDirectory) {
  TempDir dir;
  const std::string url = (dir.path() / "a" / "b.zarr").string();
  Writer w = Writer::open(url);
  write_whole(*w.create_array("x", spec_of(2, {3}, {2})), values_array({3}, 1.0f));
  w.commit();
  expect_equal(read_back(url, "x"), values_array({3}, 1.0f));
}

// Resume: a truncated shard or a corrupt chunk counts as missing; good units are kept.
TEST(ZarrWriter, VerifyDetectsTruncatedAndCorruptUnits) {
  for (bool sharded : {true, false}) {
    SCOPED_TRACE(sharded);
    TempDir dir;
    const NDArray values = values_array({8, 8}, 1.0f);
    auto spec = sharded ? spec_of(3, {8, 8}, {2, 2}, "none", {4, 4}) : spec_of(3, {8, 8}, {4, 4}, "zstd:1");
    {
      Writer w(open_location(dir.str()));
      write_whole(*w.create_array("x", spec), values);
      // Killed before commit.
    }
    // A put the kill interrupted leaves its temporary file: resume removes it.
    const fs::path partial = dir.path() / "x" / "c" / "0" / "0.lazycube-tmp-a1B2c3";
    lazycube::test::write_file(partial, "half");
    Writer w(open_location(dir.str()), {.mode = WriteMode::Resume});
    auto a = w.create_array("x", spec);
    for (std::uint64_t i = 0; i < a->num_units(); ++i) EXPECT_TRUE(a->unit_verified(a->unit_index(i)));
    const fs::path first = dir.path() / a->unit_key({0, 0});
    const std::string bytes = lazycube::test::read_file(first);
    lazycube::test::write_file(first, bytes.substr(0, bytes.size() - 3));
    EXPECT_FALSE(a->unit_verified({0, 0}));
    if (sharded) {  // a bit flipped in the shard index fails its crc32c
      std::string flipped = lazycube::test::read_file(dir.path() / a->unit_key({1, 1}));
      flipped[flipped.size() - 10] ^= 0x5a;
      lazycube::test::write_file(dir.path() / a->unit_key({1, 1}), flipped);
      EXPECT_FALSE(a->unit_verified({1, 1}));
    }
    fs::remove(dir.path() / a->unit_key({0, 1}));
    EXPECT_FALSE(a->unit_verified({0, 1}));
    EXPECT_TRUE(a->unit_verified({1, 0}));
    // The resumed run rewrites what is not verified; the store then equals an uninterrupted one.
    for (std::uint64_t i = 0; i < a->num_units(); ++i) {
      const auto idx = a->unit_index(i);
      if (a->unit_verified(idx)) continue;
      const auto origin = a->unit_origin(idx);
      NDArray part = lazycube::test::slice(values, origin, a->unit_extent(idx));
      a->write_unit(idx, part);
    }
    w.commit();
    expect_equal(read_back(dir.str(), "x"), values);
    EXPECT_FALSE(fs::exists(partial));
  }
}

// --resume after a kill: the resumed store equals an uninterrupted run's, key for key and byte
// for byte (a unit of only fill included: skipped by both).
TEST(ZarrWriter, ResumeAfterAKillEqualsAnUninterruptedRun) {
  for (int format : {2, 3}) {
    SCOPED_TRACE(format);
    NDArray values = values_array({14, 20}, 0.5f);
    for (std::size_t r = 0; r < 4; ++r)  // unit (0, 0) holds only the fill value
      for (std::size_t c = 0; c < 10; ++c) values.values<float>()[r * 20 + c] = std::nanf("");
    const ArraySpec spec = format == 3 ? spec_of(3, {14, 20}, {2, 5}, "zstd:3", {4, 10}) : spec_of(2, {14, 20}, {4, 10});
    auto declare = [&](Writer& w) {
      w.create_group("", {{"title", "resume"}});
      return w.create_array("x", spec);
    };
    auto write = [&](ArrayWriter& a, std::uint64_t i) {
      const auto idx = a.unit_index(i);
      a.write_unit(idx, lazycube::test::slice(values, a.unit_origin(idx), a.unit_extent(idx)));
    };
    TempDir whole, resumed;
    {
      Writer w(open_location(whole.str()));
      auto a = declare(w);
      for (std::uint64_t i = 0; i < a->num_units(); ++i) write(*a, i);
      w.commit();
    }
    {
      Writer w(open_location(resumed.str()));
      auto a = declare(w);
      for (std::uint64_t i = 0; i < a->num_units(); i += 2) write(*a, i);
      // Killed: no commit, the last unit's file cut short, a put's temporary file left behind.
      const fs::path last = resumed.path() / a->unit_key(a->unit_index((a->num_units() - 1) & ~std::uint64_t{1}));
      const std::string bytes = lazycube::test::read_file(last);
      lazycube::test::write_file(last, bytes.substr(0, bytes.size() / 2));
      lazycube::test::write_file(resumed.path() / "x" / "half.lazycube-tmp-Zz9Yy8", "half");
    }
    {
      Writer w(open_location(resumed.str()), {.mode = WriteMode::Resume});
      auto a = declare(w);
      std::uint64_t rewritten = 0;
      for (std::uint64_t i = 0; i < a->num_units(); ++i)
        if (!a->unit_verified(a->unit_index(i))) {
          write(*a, i);
          ++rewritten;
        }
      EXPECT_LT(rewritten, a->num_units());
      w.commit();
    }
    const auto want = open_location(whole.str()).store, got = open_location(resumed.str()).store;
    const auto keys = want->list("");
    ASSERT_EQ(got->list(""), keys);
    for (const auto& k : keys) {
      const auto a = want->get(k), b = got->get(k);
      ASSERT_TRUE(a && b) << k;
      EXPECT_TRUE(a->size() == b->size() && std::memcmp(a->data(), b->data(), a->size()) == 0) << k;
    }
  }
}

// Writers sharing a destination (Resume mode, as workers of one conversion open it): none
// removes another's in-flight temporary file before commit; commit (all writes done) does.
TEST(ZarrWriter, ResumeLeavesOtherWritersTemporaryFilesUntilCommit) {
  TempDir dir;
  const fs::path in_flight = dir.path() / "x" / "c" / "1.lazycube-tmp-Q1w2E3";
  lazycube::test::write_file(in_flight, "another process is writing this");
  Writer w(open_location(dir.str()), {.mode = WriteMode::Resume});
  auto a = w.create_array("x", spec_of(3, {4}, {2}));
  write_whole(*a, values_array({4}, 1.0f));
  EXPECT_TRUE(fs::exists(in_flight));
  w.commit();
  EXPECT_FALSE(fs::exists(in_flight));
  EXPECT_TRUE(fs::exists(dir.path() / "x" / "zarr.json"));
}

TEST(ZarrWriter, ShardsFromManyThreadsAtOnce) {
  TempDir dir;
  const NDArray values = values_array({64, 48}, 0.125f);
  Writer w(open_location(dir.str()));
  auto a = w.create_array("x", spec_of(3, {64, 48}, {4, 4}, "zstd:1", {8, 16}));
  std::vector<std::thread> threads;
  std::atomic<std::uint64_t> next{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (std::uint64_t i; (i = next++) < a->num_units();) {
        const auto idx = a->unit_index(i);
        a->write_unit(idx, lazycube::test::slice(values, a->unit_origin(idx), a->unit_extent(idx)));
      }
    });
  for (auto& t : threads) t.join();
  w.commit();
  expect_equal(read_back(dir.str(), "x"), values);
}

TEST(ZarrWriter, RegionWritesMustBeAlignedToUnits) {
  TempDir dir;
  Writer w(open_location(dir.str()));
  auto a = w.create_array("x", spec_of(3, {10, 10}, {2, 2}, "none", {4, 4}));
  const std::string msg = message_of<UsageError>([&] { a->write_region({2, 0}, values_array({4, 4}, 1.0f)); });
  EXPECT_NE(msg.find("dim 0"), std::string::npos) << msg;
  const std::string partial = message_of<UsageError>([&] { a->write_region({0, 0}, values_array({4, 3}, 1.0f)); });
  EXPECT_NE(partial.find("dim 1"), std::string::npos) << partial;
  // Two regions: the first shard row, then the rest reaching the array's end.
  const NDArray values = values_array({10, 10}, 3.0f);
  a->write_region({0, 0}, lazycube::test::slice(values, {0, 0}, {4, 10}));
  a->write_region({4, 0}, lazycube::test::slice(values, {4, 0}, {6, 10}));
  w.commit();
  expect_equal(read_back(dir.str(), "x"), values);
}

TEST(ZarrWriter, NodesMustFitTogether) {
  TempDir dir;
  Writer w(open_location(dir.str()));
  w.create_array("a", spec_of(3, {4}, {2}));
  EXPECT_THROW(w.create_array("a", spec_of(3, {4}, {2})), UsageError);
  EXPECT_THROW(w.create_array("a/b", spec_of(3, {4}, {2})), UsageError);
  EXPECT_THROW(w.create_array("c", spec_of(2, {4}, {2})), UsageError);  // mixed formats
  EXPECT_THROW(w.create_array("", spec_of(3, {4}, {2})), UsageError);   // root array holding "a"
  EXPECT_THROW(w.create_group("/x"), UsageError);
}

// Variable-length strings: vlen-utf8 (v3 array->bytes, v2 filter with dtype |O), sharded too;
// inner chunks of only the fill ("") are left out.
TEST(ZarrWriter, StringArraysRoundTrip) {
  NDArray names;
  names.dtype = DataType::string();
  names.shape = {5, 3};
  for (int i = 0; i < 15; ++i) names.strings.push_back(i < 6 ? "" : "név-" + std::to_string(i));
  for (int format : {2, 3})
    for (bool sharded : {false, true}) {
      if (format == 2 && sharded) continue;
      SCOPED_TRACE("v" + std::to_string(format) + (sharded ? " sharded" : ""));
      TempDir dir;
      Writer w(open_location(dir.str()));
      ArraySpec spec = spec_of(format, {5, 3}, {2, 3}, "zstd:1", sharded ? Shape{4, 3} : Shape{});
      spec.dtype = DataType::string();
      spec.fill_value = nullptr;
      write_whole(*w.create_array("names", spec), names);
      w.commit();
      const auto a = Hierarchy::open(open_location(dir.str())).array("names");
      std::vector<std::string> back;
      a->read_strings({{0, 5, 1}, {0, 3, 1}}, back);
      EXPECT_EQ(back, names.strings);
      if (format == 3 && sharded) {
        // Shard (0, 0) holds inner chunk rows 0-1 (all "": left out) and rows 2-3.
        const std::string shard = lazycube::test::read_file(dir.path() / "names" / "c" / "0" / "0");
        std::uint64_t first_offset;
        std::memcpy(&first_offset, shard.data() + shard.size() - 36, 8);
        EXPECT_EQ(first_offset, ~std::uint64_t{0});
      }
    }
}

// Each fixed-size dtype with a fill value in the form the format writes, read back the same
// (the fill bytes through the reader's parser, the data byte for byte); a chunk of only the fill
// value is left out and reads as it.
TEST(ZarrWriter, DtypesAndFillValueForms) {
  struct Case {
    DataType dtype;
    json fill;     // as given in the spec
    json v2, v3;   // as each format writes it
  };
  const std::vector<Case> cases = {
      {DataType::boolean(), true, true, true},
      {DataType::int_(2), -7, -7, -7},
      {DataType::uint(8), 18446744073709551615ull, 18446744073709551615ull, 18446744073709551615ull},
      {DataType::float_(2), "-Infinity", "-Infinity", "-Infinity"},
      {DataType::float_(8), 1.5, 1.5, 1.5},
      {DataType::complex(8), json::array({"NaN", 2.0}), json::array({"NaN", 2.0}), json::array({"NaN", 2.0})},
      {DataType::datetime("s"), "NaT", std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::min()},
      {DataType::timedelta("ms", 10), 5, 5, 5},
      {DataType::unicode(3), nullptr, nullptr, ""},
      {DataType::bytes(4), nullptr, nullptr, ""},
  };
  for (int format : {2, 3})
    for (const auto& c : cases) {
      SCOPED_TRACE(c.dtype.name() + " v" + std::to_string(format));
      TempDir dir;
      Writer w(open_location(dir.str()));
      ArraySpec spec = spec_of(format, {6}, {3}, "zstd:1");
      spec.dtype = c.dtype;
      spec.fill_value = c.fill;
      auto a = w.create_array("x", spec);
      // Chunk 0: three fill values (when there is one); chunk 1: bytes 1, 2, 3, ...
      NDArray values;
      values.dtype = c.dtype;
      values.shape = {6};
      values.data.resize(6 * c.dtype.itemsize);
      for (std::size_t i = 0; i < values.data.size(); ++i) values.data.data()[i] = std::byte(i + 1);
      const Buffer& fill = a->fill_value_bytes();
      ASSERT_EQ(fill.size(), c.dtype.itemsize);
      const bool has_fill = !(format == 2 && c.fill.is_null());
      if (has_fill)
        for (std::size_t i = 0; i < 3; ++i) std::memcpy(values.data.data() + i * fill.size(), fill.data(), fill.size());
      write_whole(*a, values);
      w.commit();
      EXPECT_EQ(fs::exists(dir.path() / a->unit_key({0})), !has_fill);
      const json doc = read_json_file(dir.path() / "x" / (format == 2 ? ".zarray" : "zarr.json"));
      EXPECT_EQ(doc["fill_value"], format == 2 ? c.v2 : c.v3) << doc["fill_value"].dump();
      const auto back = Hierarchy::open(open_location(dir.str())).array("x");
      expect_equal(back->read_all(), values);
    }
}

// 0-d arrays (xarray's scalar variables, e.g. a CRS holder): one chunk, key "0" (v2) / "c" (v3).
TEST(ZarrWriter, ScalarArrays) {
  for (int format : {2, 3}) {
    SCOPED_TRACE(format);
    TempDir dir;
    Writer w(open_location(dir.str()));
    auto a = w.create_array("crs", spec_of(format, {}, {}, "none"));
    EXPECT_EQ(a->num_units(), 1u);
    EXPECT_EQ(a->unit_key({}), format == 2 ? "crs/0" : "crs/c");
    write_whole(*a, values_array({}, 1.0f));
    w.commit();
    expect_equal(read_back(dir.str(), "crs"), values_array({}, 1.0f));
  }
}

// An array at the root of the location: no group, no consolidated metadata.
TEST(ZarrWriter, ArrayAtTheRoot) {
  TempDir dir;
  Writer w(open_location(dir.str()));
  auto spec = spec_of(2, {5}, {2}, "lz4");
  spec.dimension_names = {"x"};
  write_whole(*w.create_array("", spec), values_array({5}, 1.0f));
  w.commit();
  EXPECT_TRUE(fs::exists(dir.path() / ".zarray"));
  EXPECT_FALSE(fs::exists(dir.path() / ".zgroup"));
  const auto h = Hierarchy::open(open_location(dir.str()));
  EXPECT_TRUE(h.is_array());
  expect_equal(h.array("")->read_all(), values_array({5}, 1.0f));
}

// A put cut short by a killed process while others go on (a lost Dask worker whose regions ran
// again elsewhere) leaves its temporary file: the commit removes it with the metadata it writes.
TEST(ZarrWriter, CommitRemovesAKilledPutsTemporaryFile) {
  TempDir dir;
  const NDArray values = values_array({8, 10}, 1.5f);
  Writer w(open_location(dir.str()));
  auto a = w.create_array("x", spec_of(3, {8, 10}, {4, 5}));
  for (std::uint64_t i = 0; i < a->num_units(); ++i) {
    const auto idx = a->unit_index(i);
    a->write_unit(idx, lazycube::test::slice(values, a->unit_origin(idx), a->unit_extent(idx)));
  }
  const fs::path leftover = dir.path() / "x" / "c" / "0" / "1.lazycube-tmp-Ab3Cd4";
  lazycube::test::write_file(leftover, "half a shard");
  w.commit();
  EXPECT_FALSE(fs::exists(leftover));
  EXPECT_TRUE(fs::exists(dir.path() / "x" / "zarr.json"));
}
