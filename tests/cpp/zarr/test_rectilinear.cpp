// Rectilinear chunk grids (zarr-extensions `rectilinear`): stores written by hand from the
// registry's definition (each chunk holds exactly its edge lengths; run-length pairs, a bare
// integer axis, overflowing lists, encoded_chunk_shapes), read through every path (direct reads,
// the cached planner, HTTP's batched fetch, fetch-ahead units, chunk starts), shards on a
// rectilinear grid written by lazycube's writer and read back, and bad grids refused by name.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <nlohmann/json.hpp>

#include "lazycube/cache/chunk_cache.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "icechunk_test_writer.hpp"
#include "lazycube/error.hpp"
#include "lazycube/icechunk/repository.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "lazycube/zarr/writer.hpp"
#include "nginx_server.hpp"
#include "test_support.hpp"
#include "zarr_test_writer.hpp"

namespace lazycube {
namespace {

using namespace lazycube::test;
using nlohmann::json;
using Edges = std::vector<std::vector<std::uint64_t>>;

// Writes `values` (int32, C order over `shape`) as chunks whose edge lengths are `edges` (each
// chunk stored at exactly its edge lengths, or `decoded` where given, the rest of a chunk past
// the array or past its edge filled with -1), encoded with `codecs`. `skip` leaves chunks out.
void write_rectilinear(const fs::path& dir, const Shape& shape, const json& chunk_grid, const Edges& edges,
                       const Edges& decoded, const json& codecs, const std::vector<std::int32_t>& values,
                       const std::function<bool(const std::vector<std::uint64_t>&)>& skip = {}) {
  json doc = v3_array_json(shape, Shape(shape.size(), 1), "int32", codecs, -9);
  doc["chunk_grid"] = chunk_grid;
  write_file(dir / "zarr.json", doc.dump(2));
  const auto meta = zarr::parse_v3_array(doc, dir.string());
  // Starts of the chunks along each dim, from the edges alone.
  Edges starts(shape.size());
  Shape counts;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    std::uint64_t at = 0;
    for (const auto e : edges[d]) {
      if (at >= shape[d] && shape[d] > 0) break;
      starts[d].push_back(at);
      at += e;
    }
    counts.push_back(starts[d].size());
  }
  for (std::uint64_t c = 0; c < shape_size(counts); ++c) {
    const auto at = grid::unravel(c, counts);
    const std::vector<std::uint64_t> idx(at.begin(), at.end());
    if (skip && skip(idx)) continue;
    Shape cshape;
    for (std::size_t d = 0; d < shape.size(); ++d) cshape.push_back(decoded.empty() ? edges[d][idx[d]] : decoded[d][idx[d]]);
    std::vector<std::int32_t> chunk(shape_size(cshape), -1);
    for (std::uint64_t k = 0; k < chunk.size(); ++k) {
      const auto local = grid::unravel(k, cshape);
      std::uint64_t flat = 0;
      bool inside = true;
      for (std::size_t d = 0; d < shape.size(); ++d) {
        const std::uint64_t g = starts[d][idx[d]] + local[d];
        inside = inside && local[d] < edges[d][idx[d]] && g < shape[d];
        flat = flat * shape[d] + (inside ? g : 0);
      }
      if (inside) chunk[k] = values[flat];
    }
    codec::ChunkData data;
    data.bytes.resize(chunk.size() * 4);
    std::memcpy(data.bytes.data(), chunk.data(), data.bytes.size());
    const Buffer enc = meta.codecs.encode(data, {meta.dtype, cshape});
    write_file(dir / meta.key_encoding.key(idx), enc.data(), enc.size());
  }
}

json rectilinear(const json& chunk_shapes) {
  return {{"name", "rectilinear"}, {"configuration", {{"kind", "inline"}, {"chunk_shapes", chunk_shapes}}}};
}

std::vector<std::int32_t> iota_values(std::uint64_t n) {
  std::vector<std::int32_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

std::vector<std::int32_t> rect_ints(const NDArray& a) {
  const auto v = a.values<std::int32_t>();
  return {v.begin(), v.end()};
}

// The reference: `values` (C order over `shape`) at a selection.
std::vector<std::int32_t> expected_at(const std::vector<std::int32_t>& values, const Shape& shape, const ArraySelection& sel) {
  Shape counts;
  for (const auto& r : sel) counts.push_back(r.count);
  std::vector<std::int32_t> out;
  for (std::uint64_t k = 0; k < shape_size(counts); ++k) {
    const auto at = grid::unravel(k, counts);
    std::uint64_t flat = 0;
    for (std::size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + sel[d].at(at[d]);
    out.push_back(values[flat]);
  }
  return out;
}

// Every selection kind (whole, strided across chunk boundaries, reversed, a single element)
// read directly and through the cached planner equals the reference.
void expect_reads(const ArrayPtr& array, const std::vector<std::int32_t>& values) {
  const Shape& shape = array->shape();
  std::vector<ArraySelection> sels;
  ArraySelection all;
  for (auto n : shape) all.push_back(IndexRange::all(n));
  sels.push_back(all);
  ArraySelection strided;
  for (auto n : shape) strided.push_back({1, (n - 1 + 2) / 3, 3});
  sels.push_back(strided);
  ArraySelection reversed;
  for (auto n : shape) reversed.push_back({n - 1, n, -1});
  sels.push_back(reversed);
  ArraySelection one;
  for (auto n : shape) one.push_back({n - 1, 1, 1});
  sels.push_back(one);
  ChunkCache cache(std::uint64_t{64} << 20);
  for (const auto& sel : sels) {
    const auto want = expected_at(values, shape, sel);
    EXPECT_EQ(rect_ints(array->read(sel)), want);
    std::vector<std::int32_t> got(want.size());
    const MutableByteView dest(reinterpret_cast<std::byte*>(got.data()), got.size() * 4);
    array->read_cached({&sel, 1}, {&dest, 1}, cache);
    EXPECT_EQ(got, want);
  }
}

TEST(Rectilinear, EveryFormOfTheRegistryReads) {
  TempDir tmp;
  // dim 0: run-length and explicit mixed ([2,2,2,4]); dim 1: a bare integer (4, overflowing the
  // extent 6); dim 2: an explicit list overflowing by whole chunks ([2,3,4,4] over 5).
  const Shape shape{10, 6, 5};
  const json grid = rectilinear(json::array({json::array({json::array({2, 3}), 4}), 4, json::array({2, 3, 4, 4})}));
  const Edges edges{{2, 2, 2, 4}, {4, 4}, {2, 3, 4, 4}};
  const auto values = iota_values(shape_size(shape));
  for (const json& codecs : {json::array({bytes_codec()}), json::array({bytes_codec("big"), zstd_codec()})}) {
    const fs::path dir = tmp.path() / ("r" + std::to_string(codecs.size()));
    write_rectilinear(dir, shape, grid, edges, {}, codecs, values);
    const Dataset ds = open(dir.string());
    const ArrayPtr array = ds[ds.variable_names().front()].array();
    const ChunkGrid g = array->chunk_grid();
    EXPECT_FALSE(g.is_regular());
    EXPECT_EQ(g.starts(0), (std::vector<std::uint64_t>{0, 2, 4, 6}));
    EXPECT_EQ(g.count(1), 2u);
    EXPECT_EQ(g.count(2), 2u);  // [2,3] reach the extent; 4, 4 name no data
    EXPECT_EQ(array->chunk_starts(0), (std::vector<std::uint64_t>{0, 2, 4, 6}));
    EXPECT_EQ(array->chunk_shape(), (Shape{4, 4, 3}));  // the largest chunk per dim
    expect_reads(array, values);
    // Fetch-ahead's units: the real chunks a selection touches, each sized as it decodes.
    const ArraySelection rows{{3, 4, 1}, IndexRange::all(6), IndexRange::all(5)};
    const auto units = array->read_units({&rows, 1});
    ASSERT_EQ(units.size(), 3u * 2u * 2u);  // rows 3-6 lie in the chunks from 2, 4 and 6
    EXPECT_EQ(units.front(), (std::vector<std::uint64_t>{1, 0, 0}));
    EXPECT_EQ(array->read_unit_bytes({3, 0, 1}), 4u * 4u * 3u * 4u);
  }
}

TEST(Rectilinear, AbsentChunksReadAsFillAndTheGridJoinsTheDatasetModel) {
  TempDir tmp;
  const Shape shape{7, 3};
  const auto values = iota_values(21);
  write_rectilinear(tmp.path() / "a", shape, rectilinear(json::array({json::array({1, 4, 2}), 3})), {{1, 4, 2}, {3}}, {},
                    json::array({bytes_codec()}), values,
                    [](const std::vector<std::uint64_t>& c) { return c[0] == 1; });
  const Dataset ds = open((tmp.path() / "a").string());
  const Variable& v = ds[ds.variable_names().front()];
  const auto got = rect_ints(v.read_raw());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], i / 3 >= 1 && i / 3 < 5 ? -9 : values[i]) << i;
  // A selection's chunk starts (ChunkStarts of the chunk shuffle) follow the real boundaries.
  EXPECT_EQ(v.chunk_starts(0), (std::vector<std::uint64_t>{0, 1, 5}));
  const Variable tail = v.isel({{v.dims()[0], Indexer(Slice{2, 7, 1})}});
  EXPECT_EQ(tail.chunk_starts(0), (std::vector<std::uint64_t>{0, 3}));
  // missing_chunks="error" names the absent chunk.
  OpenOptions strict;
  strict.format_options = {{"missing_chunks", "error"}};
  const std::string msg = message_of<MissingDataError>([&] { open((tmp.path() / "a").string(), strict)[v.name()].read_raw(); });
  EXPECT_NE(msg.find("c/1/0"), std::string::npos) << msg;
}

TEST(Rectilinear, EncodedChunkShapesDecodeLargerThanTheyContribute) {
  // The registry's example: two arrays of 550 chunked at 200 presented as one of 1100.
  TempDir tmp;
  const Shape shape{1100};
  json grid = rectilinear(json::array({json::array({json::array({200, 2}), 150, json::array({200, 2}), 150})}));
  grid["configuration"]["encoded_chunk_shapes"] = json::array({200});
  const auto values = iota_values(1100);
  write_rectilinear(tmp.path() / "e", shape, grid, {{200, 200, 150, 200, 200, 150}}, {{200, 200, 200, 200, 200, 200}},
                    json::array({bytes_codec()}), values);
  const Dataset ds = open((tmp.path() / "e").string());
  const ArrayPtr array = ds[ds.variable_names().front()].array();
  EXPECT_EQ(array->chunk_starts(0), (std::vector<std::uint64_t>{0, 200, 400, 550, 750, 950}));
  expect_reads(array, values);
}

TEST(Rectilinear, OverHttpThroughTheBatchedFetch) {
  LAZYCUBE_REQUIRE_NGINX();
  TempDir www;
  const Shape shape{9, 4};
  const auto values = iota_values(36);
  write_rectilinear(www.path() / "h.zarr", shape, rectilinear(json::array({json::array({5, 1, 3}), json::array({3, 1})})),
                    {{5, 1, 3}, {3, 1}}, {}, json::array({bytes_codec(), zstd_codec()}), values);
  NginxServer server(www.path());
  const auto h = zarr::Hierarchy::open(open_location(server.url() + "/h.zarr"));
  expect_reads(h.array(""), values);
}

TEST(Rectilinear, ShardsOnARectilinearGridWriteAndReadBack) {
  TempDir tmp;
  zarr::ArraySpec spec;
  spec.dtype = DataType::int_(4);
  spec.shape = {20, 6};
  spec.chunk_shape = {2, 3};
  spec.shard_shape = {4, 6};
  spec.unit_edges = {{4, 8, 6, 2}, {}};  // shards of 4, 8, 6 and 2 rows (the last rounded to 2)
  spec.fill_value = -9;
  const auto values = iota_values(120);
  {
    auto w = zarr::Writer::open((tmp.path() / "s.zarr").string(), {}, {});
    auto a = w.create_array("", spec);
    EXPECT_EQ(a->grid_shape(), (Shape{4, 1}));
    EXPECT_EQ(a->unit_origin({2, 0}), (std::vector<std::uint64_t>{12, 0}));
    EXPECT_EQ(a->unit_extent({1, 0}), (Shape{8, 6}));
    NDArray all{DataType::int_(4), spec.shape, {}, {}};
    all.data.resize(values.size() * 4);
    std::memcpy(all.data.data(), values.data(), all.data.size());
    a->write_region({0, 0}, all);
    // A region must start and end on shard boundaries.
    NDArray rows{DataType::int_(4), {4, 6}, {}, {}};
    rows.data.resize(4 * 6 * 4);
    EXPECT_THROW(a->write_region({2, 0}, rows), UsageError);
    EXPECT_THROW(a->write_region({4, 0}, rows), UsageError);  // ends inside the shard [4, 12)
    w.commit();
  }
  const json doc = json::parse(read_file(tmp.path() / "s.zarr" / "zarr.json"));
  EXPECT_EQ(doc["chunk_grid"]["name"], "rectilinear");
  EXPECT_EQ(doc["chunk_grid"]["configuration"]["chunk_shapes"], json::parse("[[4, 8, 6, 2], 6]"));
  const Dataset ds = open((tmp.path() / "s.zarr").string());
  const ArrayPtr array = ds[ds.variable_names().front()].array();
  EXPECT_EQ(array->read_chunk_shape(), (Shape{2, 3}));
  EXPECT_TRUE(array->read_grid().is_regular());  // inner chunks stay regular
  EXPECT_EQ(array->chunk_starts(0), (std::vector<std::uint64_t>{0, 4, 12, 18}));
  expect_reads(array, values);
}

TEST(Rectilinear, UnshardedWriterRunLengthEncodesTheEdges) {
  TempDir tmp;
  zarr::ArraySpec spec;
  spec.dtype = DataType::int_(4);
  spec.shape = {10};
  spec.chunk_shape = {3};
  spec.unit_edges = {{3, 3, 3, 1}};
  spec.codecs = "none";
  const auto values = iota_values(10);
  {
    auto w = zarr::Writer::open((tmp.path() / "u.zarr").string(), {}, {});
    auto a = w.create_array("", spec);
    NDArray all{DataType::int_(4), spec.shape, {}, {}};
    all.data.resize(40);
    std::memcpy(all.data.data(), values.data(), 40);
    a->write_region({0}, all);
    w.commit();
  }
  const json doc = json::parse(read_file(tmp.path() / "u.zarr" / "zarr.json"));
  EXPECT_EQ(doc["chunk_grid"]["configuration"]["chunk_shapes"], json::parse("[[[3, 3], 1]]"));
  // The last chunk is stored at its edge length (one element), not padded to 3.
  EXPECT_EQ(fs::file_size(tmp.path() / "u.zarr" / "c" / "3"), 4u);
  const Dataset ds = open((tmp.path() / "u.zarr").string());
  expect_reads(ds[ds.variable_names().front()].array(), values);
  // Edge lists that do not reach the extent are refused before anything is written.
  spec.unit_edges = {{3, 3}};
  auto w = zarr::Writer::open((tmp.path() / "bad.zarr").string(), {}, {});
  const std::string msg = message_of<MetadataError>([&] { w.create_array("", spec); });
  EXPECT_NE(msg.find("sum to 6"), std::string::npos) << msg;
}

TEST(Rectilinear, BadGridsAreRefusedByName) {
  const Shape shape{6, 4};
  auto doc_with = [&](const json& grid) {
    json doc = v3_array_json(shape, {1, 1}, "int32", json::array({bytes_codec()}));
    doc["chunk_grid"] = grid;
    return doc;
  };
  json no_kind = rectilinear(json::array({6, 4}));
  no_kind["configuration"].erase("kind");
  json other_kind = rectilinear(json::array({6, 4}));
  other_kind["configuration"]["kind"] = "external";
  json short_encoded = rectilinear(json::array({json::array({3, 3}), 4}));
  short_encoded["configuration"]["encoded_chunk_shapes"] = json::array({json::array({2, 3}), 4});
  json fewer_encoded = rectilinear(json::array({json::array({3, 3}), 4}));
  fewer_encoded["configuration"]["encoded_chunk_shapes"] = json::array({json::array({3}), 4});
  const std::vector<std::pair<json, std::string>> bad = {
      {rectilinear(json::array({json::array({2, 2}), 4})), "sum to 4, less than the array's 6"},
      {rectilinear(json::array({json::array({2, 2, 2})})), "one entry per dim"},
      {rectilinear(json::array({json::array({json::array({0, 3})}), 4})), "positive integer"},
      {rectilinear(json::array({json::array({json::array({2, 0})}), 4})), "count"},
      {rectilinear(json::array({json::array({json::array({2, 3, 1})}), 4})), "[length, count]"},
      {rectilinear(json::array({json::array({2.5, 4}), 4})), "positive integer"},
      {rectilinear(json::array({json::array(), 4})), "non-empty list"},
      {rectilinear(json::array({json::array({json::array({1, 100000000})}), 4})), "more than"},
      {no_kind, "kind"},
      {other_kind, "\"external\""},
      {short_encoded, "fewer than its edge length"},
      {fewer_encoded, "expands to 1 lengths"},
      {{{"name", "hexagonal"}, {"configuration", json::object()}}, "'hexagonal'"},
  };
  for (const auto& item : bad) {  // (no structured binding: clang 14 cannot capture one)
    const json& grid = item.first;
    const std::string& needle = item.second;
    const std::string msg = message_of<MetadataError>([&] { zarr::parse_v3_array(doc_with(grid), "arr"); });
    EXPECT_NE(msg.find(needle), std::string::npos) << grid.dump() << ": " << msg;
    EXPECT_NE(msg.find("arr"), std::string::npos) << msg;
  }
  // Shards on a rectilinear grid must hold whole inner chunks (all but the last).
  TempDir tmp;
  json sharded = doc_with(rectilinear(json::array({json::array({3, 3}), 4})));
  sharded["codecs"] = json::array({sharding_codec({2, 4}, json::array({bytes_codec()}))});
  write_file(tmp.path() / "zarr.json", sharded.dump());
  const std::string msg = message_of<Error>([&] { open(tmp.path().string()); });
  EXPECT_NE(msg.find("inner"), std::string::npos) << msg;
}

TEST(Rectilinear, IcechunkRepositoriesReadChunksOfTheirOwnShapes) {
  // Chunk (0) holds 1 row, chunk (1) 3 rows, chunk (2) 2 rows of 2 columns: each reference is
  // exactly its chunk's bytes, inline and native.
  namespace w = test::icechunk_writer;
  TempDir tmp;
  json doc = v3_array_json({6, 2}, {1, 1}, "int32", json::array({bytes_codec()}), -1);
  doc["chunk_grid"] = rectilinear(json::array({json::array({1, 3, 2}), 2}));
  const auto chunk = [](std::int32_t first, int n) {
    std::string out(static_cast<std::size_t>(n) * 4, '\0');
    for (int i = 0; i < n; ++i) {
      const std::int32_t v = first + i;
      std::memcpy(out.data() + 4 * i, &v, 4);
    }
    return out;
  };
  w::ManifestSpec m{{{0, 3}, {0, 1}}, {}, ""};
  m.refs.push_back({w::Ref::Kind::Inline, {0, 0}, chunk(0, 2)});
  m.refs.push_back({w::Ref::Kind::Native, {1, 0}, chunk(2, 6)});
  m.refs.push_back({w::Ref::Kind::Native, {2, 0}, chunk(8, 4)});
  w::write_repository(tmp.path() / "repo", {{"/", R"({"zarr_format": 3, "node_type": "group"})"}, {"/r", doc.dump(), true, {m}}});
  const auto store =
      icechunk::make_icechunk_store(icechunk::Repository::open(open_location((tmp.path() / "repo").string())), {});
  const auto array = zarr::Hierarchy::open(Location{store, "r"}).array("");
  expect_reads(array, iota_values(12));
}

}  // namespace
}  // namespace lazycube
