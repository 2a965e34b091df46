// Writes the binary seed corpora (fuzz/corpus/<target>/) with lazycube's own writers: Zarr
// arrays and groups from zarr::Writer, one encoded chunk per codec from the codec registry, a
// shard from the sharding codec, Icechunk repositories from the tests' writer. The text seeds
// (kerchunk, cloud answers, CF, CLI arguments) are plain files in the corpus.
//
//   make_seeds OUT_DIR      (scripts/fuzz.sh --seeds runs it into fuzz/corpus)
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include <flatbuffers/flexbuffers.h>

#include "../src/zarr/sharding_codec.hpp"
#include "../tests/cpp/support/icechunk_test_writer.hpp"
#include "codec_cases.hpp"
#include "lazycube/codec/codec.hpp"
#include "lazycube/zarr/writer.hpp"

using namespace lazycube;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

fs::path g_out;

std::string text_of(ByteView b) { return std::string(reinterpret_cast<const char*>(b.data()), b.size()); }

void seed(const std::string& target, const std::string& name, const std::string& bytes) {
  fs::create_directories(g_out / target);
  std::ofstream(g_out / target / name, std::ios::binary) << bytes;
}

// `count` elements of `dtype` with a little structure (a ramp), as bytes.
Buffer ramp(const DataType& dtype, std::uint64_t count) {
  Buffer b(count * dtype.itemsize);
  for (std::size_t i = 0; i < b.size(); ++i) b.data()[i] = static_cast<std::byte>((i / dtype.itemsize) * 7 + i % 3);
  if (dtype.kind == DTypeKind::Float && dtype.itemsize == 8)
    for (std::uint64_t i = 0; i < count; ++i) reinterpret_cast<double*>(b.data())[i] = 0.125 * static_cast<double>(i) - 3;
  if (dtype.kind == DTypeKind::Float && dtype.itemsize == 4)
    for (std::uint64_t i = 0; i < count; ++i) reinterpret_cast<float*>(b.data())[i] = 0.5f * static_cast<float>(i) + 270;
  if (dtype.kind == DTypeKind::Bool)
    for (std::uint64_t i = 0; i < count; ++i) b.data()[i] = static_cast<std::byte>(i % 3 == 0);
  return b;
}

std::string header(std::size_t which, int mode, std::uint64_t count) {
  return std::string{static_cast<char>(which), static_cast<char>(mode), static_cast<char>(count & 0xFF),
                     static_cast<char>(count >> 8)};
}

void codec_seeds() {
  using fuzz::kBytesCases;
  const std::uint64_t count = 24;
  for (std::size_t i = 0; i < fuzz::kBytesCount; ++i) {
    const DataType dtype = parse_numpy_dtype(kBytesCases[i].dtype).dtype;
    auto codec = codec::make_v2_bytes_codec(json::parse(kBytesCases[i].config), dtype);
    Buffer raw = ramp(dtype, count);
    if (dtype.kind == DTypeKind::Unicode)  // categorize: labels only
      for (std::uint64_t k = 0; k < count; ++k) {
        std::memset(raw.data() + k * 12, 0, 12);
        for (std::uint64_t c = 0; c <= k % 3; ++c) raw.data()[k * 12 + c * 4] = static_cast<std::byte>('a' + k % 3);
      }
    const Buffer encoded = codec->encode(raw.view());
    seed("codec", "bytes-" + std::to_string(i), header(i, static_cast<int>(i % 3), count) + text_of(encoded.view()));
  }
  for (const bool utf8 : {true, false}) {
    auto codec = codec::make_v2_object_codec(json{{"id", utf8 ? "vlen-utf8" : "vlen-bytes"}});
    codec::ChunkData data;
    data.strings = {"", "a", "zarr", "\xC3\xA9t\xC3\xA9", "longer text value"};
    const codec::ChunkSpec spec{utf8 ? DataType::string() : DataType::vlen_bytes(), {data.strings.size()}};
    seed("codec", utf8 ? "vlen-utf8" : "vlen-bytes",
         header(fuzz::kBytesCount + (utf8 ? 0 : 1), 0, data.strings.size()) + text_of(codec->encode(data, spec).view()));
  }
  for (std::size_t i = 0; i < std::size(fuzz::kShardCases); ++i) {
    const codec::ChunkSpec shard{DataType::int_(2), {4, 4}};
    zarr::ShardingCodec codec(json::parse(fuzz::kShardCases[i]), shard, "seed");
    codec::ChunkData data;
    data.bytes = ramp(shard.dtype, 16);
    const std::string encoded = text_of(codec.encode(data, shard).view());
    const std::size_t which = fuzz::kBytesCount + 2 + i;
    seed("codec", "shard-" + std::to_string(i), header(which, 1, 0) + encoded);
    const std::string index = codec.index_at_end() ? encoded.substr(encoded.size() - codec.index_size())
                                                   : encoded.substr(0, codec.index_size());
    seed("codec", "shard-index-" + std::to_string(i), header(which, 0, 0) + index);
  }
}

std::string get_text(Store& store, const std::string& key) {
  auto b = store.get(key);
  return b ? text_of(b->view()) : std::string();
}

struct ZarrCase {
  const char* name;
  zarr::ArraySpec spec;
};

// The zarr-extensions registry's data types that lazycube's writer does not write (bfloat16 and
// float8 are written as float32, struct not at all), by hand: shape [4], one chunk (issue 34).
void v3_registry_type_seeds() {
  struct Seed {
    const char *name, *data_type, *fill, *codecs;
    std::string chunk;
  };
  const Seed seeds[] = {
      {"bf16-big-endian", R"("bfloat16")", R"("0x7fc0")", R"([{"name":"bytes","configuration":{"endian":"big"}}])", std::string("\x3f\x80\xc0\x00\x7f\x80\x00\x01", 8)},
      {"f8-e4m3fnuz-sharded", R"("float8_e4m3fnuz")", R"("NaN")", R"([{"name":"sharding_indexed","configuration":{"chunk_shape":[2],"codecs":[{"name":"bytes"}],"index_codecs":[{"name":"bytes","configuration":{"endian":"little"}}],"index_location":"start"}}])", std::string("\x20\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x22\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x38\x80\x7f\x01", 36)},
      {"f8-e8m0fnu", R"("float8_e8m0fnu")", R"("0x7f")", R"([{"name":"bytes"}])", std::string("\x00\x7f\xfe\xff", 4)},
      {"dt-10ms", R"({"name":"numpy.datetime64","configuration":{"unit":"ms","scale_factor":10}})", R"("NaT")", R"([{"name":"bytes","configuration":{"endian":"little"}}])", std::string("\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\x68\x42\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80", 32)},
      {"ascii", R"({"name":"fixed-length-ascii","configuration":{"length_bits":16}})", R"("ab")", R"([{"name":"bytes"}])", std::string("\x68\x69\x79\x6f\x75\x70\x71\x72", 8)},
      {"struct", R"({"name":"struct","configuration":{"fields":[{"name":"x","data_type":"float32"},{"name":"n","data_type":"uint8"}]}})", R"({"x":"NaN","n":1})", R"([{"name":"bytes","configuration":{"endian":"little"}}])", std::string("\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 20)},
  };
  for (const auto& s : seeds)
    seed("zarr_v3", s.name,
         std::string(1, '\0') + R"({"zarr_format":3,"node_type":"array","shape":[4],"data_type":)" + s.data_type +
             R"(,"chunk_grid":{"name":"regular","configuration":{"chunk_shape":[4]}},"chunk_key_encoding":{"name":"default"},"fill_value":)" +
             s.fill + R"(,"codecs":)" + s.codecs + "}" + '\0' + s.chunk);
}

void zarr_seeds() {
  std::vector<ZarrCase> cases = {
      {"f4-zstd", {.dtype = DataType::float_(4), .shape = {6, 4}, .chunk_shape = {3, 2}, .codecs = "zstd:1",
                   .fill_value = "NaN", .dimension_names = {"y", "x"},
                   .attributes = {{"units", "K"}, {"scale_factor", 0.5}}}},
      {"i2-blosc", {.dtype = DataType::int_(2), .shape = {10}, .chunk_shape = {5}, .codecs = "blosc:lz4:5:shuffle",
                    .fill_value = -1}},
      {"u1-gzip", {.dtype = DataType::uint(1), .shape = {4, 4}, .chunk_shape = {4, 4}, .codecs = "gzip:1", .fill_value = 0}},
      {"f8-none", {.dtype = DataType::float_(8), .shape = {3}, .chunk_shape = {3}, .codecs = "none", .fill_value = "Infinity"}},
      {"time-lz4", {.dtype = DataType::int_(8), .shape = {4}, .chunk_shape = {2}, .codecs = "lz4",
                    .attributes = {{"units", "hours since 1900-01-01"}, {"calendar", "gregorian"}}}},
  };
  for (const int format : {2, 3}) {
    for (auto c : cases) {
      c.spec.zarr_format = format;
      auto store = make_memory_store();
      zarr::Writer w(Location{store, ""}, {.consolidated = false});
      auto a = w.create_array("", c.spec);
      const std::vector<std::uint64_t> first(c.spec.shape.size(), 0);
      Buffer unit = ramp(c.spec.dtype, shape_size(a->unit_shape()));
      a->write_unit(first, unit.view());
      w.commit();
      const std::string chunk = get_text(*store, a->unit_key(first));
      const std::string meta = get_text(*store, format == 2 ? ".zarray" : "zarr.json");
      seed(format == 2 ? "zarr_v2" : "zarr_v3", c.name, std::string(1, '\0') + meta + '\0' + chunk);
      if (format == 3 && std::string(c.name) == "i2-blosc") {
        // The registry's chunk key encodings (put_first_chunk stores the chunk at their keys too).
        for (const auto& [tag, encoding] : std::vector<std::pair<std::string, nlohmann::json>>{
                 {"fanout", {{"name", "fanout"}, {"configuration", {{"max_children", 4}}}}},
                 {"suffix", {{"name", "suffix"}, {"configuration", {{"suffix", ".bin"}, {"base_encoding", {{"name", "default"}}}}}}}}) {
          auto doc = nlohmann::json::parse(meta);
          doc["chunk_key_encoding"] = encoding;
          seed("zarr_v3", "i2-" + tag, std::string(1, '\0') + doc.dump() + '\0' + chunk);
        }
      }
      if (format == 2 && !c.spec.attributes.empty())
        seed("zarr_v2", std::string(c.name) + "-zattrs", std::string(1, '\1') + get_text(*store, ".zattrs"));
    }
    // A sharded v3 array, and a group with consolidated metadata.
    if (format == 3) {
      auto store = make_memory_store();
      zarr::Writer w(Location{store, ""}, {.consolidated = false});
      auto a = w.create_array("", {.zarr_format = 3, .dtype = DataType::int_(2), .shape = {4, 4}, .chunk_shape = {2, 2},
                                   .shard_shape = {4, 4}, .codecs = "zstd:1+crc32c", .fill_value = 0});
      a->write_unit({0, 0}, ramp(DataType::int_(2), 16).view());
      w.commit();
      seed("zarr_v3", "i2-sharded", std::string(1, '\0') + get_text(*store, "zarr.json") + '\0' +
                                        get_text(*store, a->unit_key({0, 0})));
    }
    if (format == 3) {
      // Rectilinear chunk grids (run-length encoded edges): plain, and shards on the grid.
      for (const bool sharded : {false, true}) {
        auto store = make_memory_store();
        zarr::Writer w(Location{store, ""}, {.consolidated = false});
        zarr::ArraySpec spec{.zarr_format = 3, .dtype = DataType::int_(2), .shape = {10, 4}, .chunk_shape = {2, 2},
                             .codecs = "zstd:1", .fill_value = 0};
        if (sharded) spec.shard_shape = {2, 4};
        spec.unit_edges = {{2, 2, 4, 2}, {}};
        auto a = w.create_array("", spec);
        const std::vector<std::uint64_t> first{0, 0};
        a->write_unit(first, ramp(DataType::int_(2), shape_size(a->unit_extent(first))).view());
        w.commit();
        seed("zarr_v3", sharded ? "i2-rectilinear-sharded" : "i2-rectilinear",
             std::string(1, '\0') + get_text(*store, "zarr.json") + '\0' + get_text(*store, a->unit_key(first)));
      }
    }
    if (format == 3) v3_registry_type_seeds();
    auto store = make_memory_store();
    zarr::Writer w(Location{store, ""}, {.consolidated = true});
    w.create_group("", {{"title", "seed"}}, format);
    auto t = w.create_array("t2m", {.zarr_format = format, .dtype = DataType::float_(4), .shape = {2, 3}, .chunk_shape = {1, 3},
                                    .codecs = "zstd:1", .fill_value = "NaN", .dimension_names = {"time", "x"}});
    w.create_array("x", {.zarr_format = format, .dtype = DataType::int_(4), .shape = {3}, .chunk_shape = {3}, .codecs = "none",
                         .fill_value = 0, .dimension_names = {"x"}});
    t->write_unit({0, 0}, ramp(DataType::float_(4), 3).view());
    w.commit();
    if (format == 2)
      seed("zarr_v2", "group-zmetadata", std::string(1, '\2') + get_text(*store, ".zmetadata") + '\0' +
                                             get_text(*store, t->unit_key({0, 0})));
    else
      seed("zarr_v3", "group-consolidated", std::string(1, '\1') + get_text(*store, "zarr.json") + '\0' +
                                                get_text(*store, t->unit_key({0, 0})));
  }
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::vector<std::uint8_t> flex_config() {
  flexbuffers::Builder b;
  b.Map([&] {
    b.Map("virtual_chunk_containers", [&] {
      b.Map("s3://bucket/data/", [&] {
        b.String("url_prefix", "s3://bucket/data/");
        b.Map("store", [&] {
          b.Map("s3_compatible", [&] {
            b.String("region", "eu-west-1");
            b.String("endpoint_url", "http://localhost:9000");
            b.Bool("anonymous", true);
          });
        });
      });
      b.Map("https://example.org/", [&] { b.String("store", "http"); });
    });
  });
  b.Finish();
  return b.GetBuffer();
}

void icechunk_seeds() {
  namespace iw = test::icechunk_writer;
  const fs::path tmp = fs::temp_directory_path() / "lazycube-fuzz-seeds-icechunk";
  const std::string array_json =
      R"({"zarr_format":3,"node_type":"array","shape":[4],"data_type":"int16","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[2]}},"chunk_key_encoding":{"name":"default"},"fill_value":0,"codecs":[{"name":"bytes","configuration":{"endian":"little"}}]})";
  const std::vector<iw::NodeSpec> nodes = {
      {"/", R"({"zarr_format":3,"node_type":"group","attributes":{}})", false, {}},
      {"/a", array_json, true,
       {{{{0, 2}},
         {{iw::Ref::Kind::Inline, {0}, std::string("\1\0\2\0", 4)},
          {iw::Ref::Kind::Native, {1}, std::string("\3\0\4\0", 4)}}},
        {{{0, 2}},
         {{iw::Ref::Kind::Virtual, {0}, "", "s3://bucket/data/file.nc", 16, 4, "\"etag\"", 1700000000}},
         "s3://bucket/data/"}}},
  };
  for (const bool compress : {false, true}) {
    fs::remove_all(tmp);
    iw::write_repository(tmp, nodes, {.config = flex_config(), .compress = compress});
    const std::string tag = compress ? "-zstd" : "";
    seed("icechunk", "repo" + tag, std::string(1, '\2') + read_file(tmp / "repo"));
    int n = 0;
    for (const auto& e : fs::directory_iterator(tmp / "snapshots"))
      seed("icechunk", "snapshot" + tag + std::to_string(n++), std::string(1, '\0') + read_file(e.path()));
    n = 0;
    for (const auto& e : fs::directory_iterator(tmp / "manifests"))
      seed("icechunk", "manifest" + tag + std::to_string(n++), std::string(1, '\1') + read_file(e.path()));
  }
  fs::remove_all(tmp);
  const auto config = flex_config();
  seed("icechunk", "flexbuffers-config", std::string(1, '\5') + std::string(config.begin(), config.end()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_seeds OUT_DIR\n";
    return 2;
  }
  g_out = argv[1];
  codec_seeds();
  zarr_seeds();
  icechunk_seeds();
  return 0;
}
