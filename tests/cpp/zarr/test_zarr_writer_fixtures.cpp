// The writer against what zarr-python writes (the shared conformance fixtures): the metadata
// documents for the same spec equal zarr-python 3's zarr.json and zarr-python 2's .zarray, and
// the astronaut image written uncompressed and with zlib gives the same chunk files byte for byte.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "lazycube/zarr/writer.hpp"
#include "test_support.hpp"

using namespace lazycube;
using namespace lazycube::zarr;
using lazycube::test::TempDir;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json fixture_json(const fs::path& p) { return json::parse(lazycube::test::read_file(p)); }

// The documents the writer would store for `spec` (nothing is written before commit).
json documents_of(const ArraySpec& spec, const std::string& name) {
  TempDir dir;
  Writer w(open_location(dir.str()));
  for (const auto& [file, doc] : w.create_array("x", spec)->metadata_documents())
    if (file == name) return doc;
  return nullptr;
}

ArraySpec spec_of(int format, DataType dtype, Shape shape, Shape chunks, std::string codecs, json fill) {
  ArraySpec s;
  s.zarr_format = format;
  s.dtype = dtype;
  s.shape = std::move(shape);
  s.chunk_shape = std::move(chunks);
  s.codecs = std::move(codecs);
  s.fill_value = std::move(fill);
  return s;
}

}  // namespace

TEST(ZarrWriterFixtures, V3DocumentsEqualZarrPython3s) {
  LAZYCUBE_REQUIRE_SHARED_DATA(data);
  const fs::path z = data / "zarr-fixtures" / "zarrs";
  struct Case {
    const char* fixture;
    ArraySpec spec;
  };
  ArraySpec zstd = spec_of(3, DataType::float_(4), {10, 10}, {5, 5}, "zstd:5", 0.0);
  zstd.attributes = {{"key", "value"}};
  ArraySpec blosc = zstd, gzip = zstd, zlib = zstd;
  blosc.codecs = "blosc:zstd:1:bitshuffle";
  gzip.codecs = "gzip:9";
  zlib.codecs = "zlib:8";
  const std::vector<Case> cases = {
      {"v3_zarr_python/array_zstd.zarr", zstd},
      {"v3_zarr_python/array_blosc.zarr", blosc},
      {"v3_zarr_python/array_gzip.zarr", gzip},
      {"v3_zarr_python/array_zlib.zarr", zlib},
      {"zarr_python_compat/datetime64[10ms].zarr", spec_of(3, DataType::datetime("ms", 10), {6}, {5}, "zstd:0", "NaT")},
      {"zarr_python_compat/fixed_length_utf32_v3_le.zarr", spec_of(3, DataType::unicode(4), {5}, {5}, "none", nullptr)},
      {"zarr_python_compat/cities_v3.zarr", spec_of(3, DataType::string(), {47868}, {1000}, "none", nullptr)},
      {"zarr_python_compat/v3_bytes.zarr", spec_of(3, DataType::vlen_bytes(), {3}, {1000}, "none", nullptr)},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.fixture);
    const json want = fixture_json(z / c.fixture / "zarr.json");
    const json got = documents_of(c.spec, "zarr.json");
    EXPECT_EQ(got, want) << "ours:   " << got.dump() << "\nzarr-python: " << want.dump();
  }
}

// zarr-python 2 (zarr_implementations' astronaut, uint8 512x512x3 in 100x100x1 chunks): the same
// .zarray (ours adds dimension_separator, as zarr-python 2.13 writes it), and for the raw and
// zlib arrays the very same chunk files, edge chunks padded with the fill value included.
TEST(ZarrWriterFixtures, V2AstronautEqualsZarrPython2s) {
  LAZYCUBE_REQUIRE_SHARED_DATA(data);
  const fs::path zr = data / "zarr-fixtures" / "zarr_implementations" / "zarr.zr";
  const auto npy = lazycube::test::load_npy(data / "zarr-fixtures" / "expected" / "astronaut.npy");
  ASSERT_EQ(npy.shape, (Shape{512, 512, 3}));
  NDArray image;
  image.dtype = DataType::uint(1);
  image.shape = npy.shape;
  image.data = Buffer::copy_of(ByteView(reinterpret_cast<const std::byte*>(npy.data.data()), npy.data.size()));
  for (const auto& [name, codecs] : std::vector<std::pair<std::string, std::string>>{
           {"raw", "none"}, {"zlib", "zlib:1"}, {"gzip", "gzip:1"}, {"blosc", "blosc:lz4:5:shuffle"}}) {
    SCOPED_TRACE(name);
    TempDir dir;
    {
      Writer w(open_location(dir.str()), {.write_empty_chunks = true});
      auto a = w.create_array(name, spec_of(2, DataType::uint(1), {512, 512, 3}, {100, 100, 1}, codecs, 0));
      a->write_region({0, 0, 0}, image);
      w.commit();
    }
    json ours = fixture_json(dir.path() / name / ".zarray");
    EXPECT_EQ(ours["dimension_separator"], ".");
    ours.erase("dimension_separator");
    EXPECT_EQ(ours, fixture_json(zr / name / ".zarray"));
    if (name != "raw" && name != "zlib") continue;  // gzip headers and blosc builds differ
    std::size_t compared = 0;
    for (const auto& entry : fs::directory_iterator(zr / name)) {
      const std::string key = entry.path().filename().string();
      if (key.starts_with(".")) continue;
      EXPECT_EQ(lazycube::test::read_file(dir.path() / name / key), lazycube::test::read_file(entry.path())) << key;
      ++compared;
    }
    EXPECT_EQ(compared, 6u * 6u * 3u);
  }
}
