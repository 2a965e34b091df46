// Virtual chunks inside a NetCDF-4/HDF5 file (kerchunk-style: each chunk a byte range of the
// file, shuffle + zlib as HDF5 wrote it) decode like any other: a generated Icechunk repository
// whose array `t` points into the NetCDF fixture reads the values the file holds, through the
// store and through lazycube::open with the container authorised; unauthorised, it is refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gdal_test_files.hpp"
#include "icechunk_test_writer.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/icechunk/repository.hpp"
#include "lazycube/refs/hdf5_refs.hpp"
#include "lazycube/zarr/hierarchy.hpp"

namespace lazycube {
namespace {

namespace w = test::icechunk_writer;
using nlohmann::json;

// Zarr v3 metadata for a kerchunk (Zarr v2) .zarray of little-endian int16 with numcodecs filters
// and compressor (HDF5's shuffle and deflate), dims named.
std::string v3_json_of_zarray(const json& zarray, const std::vector<std::string>& dims) {
  EXPECT_EQ(zarray.at("dtype"), "<i2");
  json codecs = json::array({{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}});
  auto add = [&](const json& c) {
    json config = c;
    config.erase("id");
    codecs.push_back({{"name", "numcodecs." + c.at("id").get<std::string>()}, {"configuration", config}});
  };
  if (zarray.contains("filters") && zarray["filters"].is_array())
    for (const auto& f : zarray["filters"]) add(f);
  if (zarray.contains("compressor") && zarray["compressor"].is_object()) add(zarray["compressor"]);
  return json{{"zarr_format", 3},
              {"node_type", "array"},
              {"shape", zarray.at("shape")},
              {"data_type", "int16"},
              {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", zarray.at("chunks")}}}}},
              {"chunk_key_encoding", {{"name", "default"}}},
              {"fill_value", zarray.value("fill_value", json(0)).is_null() ? json(0) : zarray.at("fill_value")},
              {"codecs", codecs},
              {"dimension_names", dims}}
      .dump();
}

TEST(IcechunkNetcdfVirtual, ChunksInsideANetcdfFileDecodeLikeAnyOther) {
  test::TempDir dir;
  std::string skip;
  const std::string nc = test::make_netcdf4_fixture(dir.path(), skip);
  if (nc.empty()) GTEST_SKIP() << skip;
  const std::string url = "file://" + nc;
  const json refs = json::parse(refs::make_hdf5_references(nc, url).json).at("refs");
  const json zarray = json::parse(refs.at("t/.zarray").get<std::string>());
  ASSERT_TRUE(zarray.contains("filters") && !zarray["filters"].is_null()) << zarray.dump();  // shuffle, as written

  const auto chunks = zarray.at("chunks").get<std::vector<std::uint32_t>>();
  const auto shape = zarray.at("shape").get<std::vector<std::uint32_t>>();
  w::ManifestSpec m;
  for (std::size_t d = 0; d < shape.size(); ++d) m.extents.push_back({0, (shape[d] + chunks[d] - 1) / chunks[d]});
  for (std::uint32_t a = 0; a < m.extents[0].second; ++a)
    for (std::uint32_t b = 0; b < m.extents[1].second; ++b)
      for (std::uint32_t c = 0; c < m.extents[2].second; ++c) {
        const std::string key = "t/" + std::to_string(a) + "." + std::to_string(b) + "." + std::to_string(c);
        const json& r = refs.at(key);  // [target, offset, length]
        ASSERT_EQ(r.at(0), url) << key;
        m.refs.push_back({w::Ref::Kind::Virtual, {a, b, c}, "", url, r.at(1).get<std::uint64_t>(), r.at(2).get<std::uint64_t>()});
      }
  const auto repo_dir = dir.path() / "repo";
  w::write_repository(repo_dir, {{"/", R"({"zarr_format": 3, "node_type": "group"})"},
                                 {"/t", v3_json_of_zarray(zarray, {"time", "y", "x"}), true, {m}}});

  // Through the store, the container authorised: the file's packed values, fill points included.
  auto repo = icechunk::Repository::open(open_location(repo_dir.string()));
  icechunk::IcechunkOptions options;
  options.virtual_chunk_containers["file://" + dir.str() + "/"] = {};
  const NDArray t = zarr::Hierarchy::open(Location{icechunk::make_icechunk_store(repo, options), "t"}).array("")->read_all();
  ASSERT_EQ(t.shape, (std::vector<std::size_t>{test::kFxT, test::kFxY, test::kFxX}));
  const auto values = t.values<std::int16_t>();
  std::size_t wrong = 0;
  for (int i = 0; i < test::kFxT; ++i)
    for (int y = 0; y < test::kFxY; ++y)
      for (int x = 0; x < test::kFxX; ++x)
        wrong += values[(static_cast<std::size_t>(i) * test::kFxY + y) * test::kFxX + x] != test::fixture_t_packed(i, y, x);
  EXPECT_EQ(wrong, 0u);

  // Through lazycube::open: the same values as the NetCDF file read by the gdal engine.
  OpenOptions o;
  o.decode_cf = false;
  for (const auto& [prefix, storage] : options.virtual_chunk_containers)
    o.format_options["virtual_chunk_containers"][prefix] = storage;
  const NDArray via_open = open(repo_dir.string(), o)["t"].read();
  OpenOptions raw;
  raw.decode_cf = false;
  const NDArray via_gdal = open(nc, raw)["t"].read();
  ASSERT_EQ(via_open.data.size(), via_gdal.data.size());
  EXPECT_EQ(std::memcmp(via_open.data.data(), via_gdal.data.data(), via_gdal.data.size()), 0);

  // Not authorised: refused, naming the chunk's URL.
  const std::string msg = test::message_of<StoreError>([&] { open(repo_dir.string())["t"].read(); });
  EXPECT_NE(msg.find(url), std::string::npos) << msg;
  EXPECT_NE(msg.find("not authorised"), std::string::npos) << msg;
}

}  // namespace
}  // namespace lazycube
