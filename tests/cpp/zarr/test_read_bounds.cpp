// Whole-object reads bounded by what the metadata says (issue 32): a Zarr chunk by its encoded-
// size bound (codec::CodecPipeline::max_encoded_size), an Icechunk manifest by the size its
// snapshot records. The bounds must never refuse valid data: each is checked against the real
// compressors' output for incompressible bytes.
#include <gtest/gtest.h>

#include <random>
#include <regex>

#include <nlohmann/json.hpp>

#include "zarr/array_metadata.hpp"
#include "icechunk_test_writer.hpp"
#include "lazycube/error.hpp"
#include "lazycube/refs/references.hpp"
#include "lazycube/icechunk/repository.hpp"
#include "lazycube/store/store.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "hostile_server.hpp"
#include "test_support.hpp"
#include "zarr_test_writer.hpp"

using namespace lazycube;
using namespace lazycube::test;
using nlohmann::json;

namespace {

struct Chain {
  const char* name;
  json codecs;
};

json blosc(const char* cname, const char* shuffle, int clevel = 5) {
  return {{"name", "blosc"},
          {"configuration", {{"cname", cname}, {"clevel", clevel}, {"shuffle", shuffle}, {"typesize", 4}, {"blocksize", 0}}}};
}
json numcodec(const char* name, json config = json::object()) { return {{"name", name}, {"configuration", config}}; }

// Every compressor and checksum with a declared bound, a dtype-changing filter, a filter without
// one, and sharding.
std::vector<Chain> chains(std::uint64_t inner = 2) {
  return {
      {"bytes", json::array({bytes_codec()})},
      {"blosc_lz4_shuffle", json::array({bytes_codec(), blosc("lz4", "shuffle")})},
      {"blosc_zstd_bitshuffle", json::array({bytes_codec(), blosc("zstd", "bitshuffle", 9)})},
      {"blosc_zlib_noshuffle", json::array({bytes_codec(), blosc("zlib", "noshuffle")})},
      {"blosc_blosclz", json::array({bytes_codec(), blosc("blosclz", "shuffle", 9)})},
      {"blosc_lz4hc", json::array({bytes_codec(), blosc("lz4hc", "noshuffle", 9)})},
      {"zstd", json::array({bytes_codec(), zstd_codec(3)})},
      {"zstd_checksum", json::array({bytes_codec(), numcodec("zstd", {{"level", 19}, {"checksum", true}})})},
      {"gzip1", json::array({bytes_codec(), numcodec("gzip", {{"level", 1}})})},
      {"gzip9", json::array({bytes_codec(), numcodec("gzip", {{"level", 9}})})},
      {"zlib", json::array({bytes_codec(), numcodec("numcodecs.zlib", {{"level", 9}})})},
      {"lz4", json::array({bytes_codec(), numcodec("numcodecs.lz4", {{"acceleration", 1}})})},
      {"bz2", json::array({bytes_codec(), numcodec("numcodecs.bz2", {{"level", 9}})})},
      {"lzma", json::array({bytes_codec(), numcodec("numcodecs.lzma")})},
      {"crc32c", json::array({bytes_codec(), crc32c_codec()})},
      {"adler32", json::array({bytes_codec(), numcodec("numcodecs.adler32")})},
      {"fletcher32", json::array({bytes_codec(), numcodec("numcodecs.fletcher32")})},
      {"shuffle_zstd", json::array({bytes_codec(), numcodec("numcodecs.shuffle", {{"elementsize", 4}}), zstd_codec()})},
      {"astype_f8_gzip", json::array({numcodec("numcodecs.astype", {{"encode_dtype", "<f8"}, {"decode_dtype", "<f4"}}),
                                      bytes_codec(), numcodec("gzip", {{"level", 1}})})},
      {"sharded_blosc", json::array({sharding_codec({inner}, json::array({bytes_codec(), blosc("lz4", "shuffle")}))})},
      {"sharded_zstd_crc32c", json::array({sharding_codec({inner}, json::array({bytes_codec(), zstd_codec(), crc32c_codec()}))})},
  };
}

// Finite float32 values with random mantissas: what no compressor can shrink much.
std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1e6f, 1e6f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

Buffer random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  Buffer b(n);
  for (std::size_t i = 0; i < n; ++i) b.data()[i] = static_cast<std::byte>(rng() & 0xff);
  return b;
}

// The bytes-received count of an engine bound error ("... (N bytes received so far)").
std::uint64_t bytes_received(const std::string& message) {
  std::smatch m;
  if (!std::regex_search(message, m, std::regex(R"((\d+) bytes received)"))) return ~std::uint64_t{0};
  return std::stoull(m[1]);
}

}  // namespace

// Per chain and chunk size (4 B to 1 MiB decoded): the chain's bound is at least what it
// encodes incompressible data to, and each bytes codec's own bound at least what it makes of
// random bytes.
TEST(CodecEncodedBound, HoldsForIncompressibleDataInEveryChain) {
  for (const std::uint64_t n : {std::uint64_t{2}, std::uint64_t{1000}, std::uint64_t{262144}}) {
    for (const auto& chain : chains(n / 2)) {
      SCOPED_TRACE(std::string(chain.name) + " with " + std::to_string(n) + " float32 values");
      const auto meta = zarr::parse_v3_array(v3_array_json({n}, {n}, "float32", chain.codecs), "bound");
      const codec::ChunkSpec spec{meta.dtype, meta.chunk_shape};
      const auto bound = meta.codecs.max_encoded_size(spec);
      ASSERT_TRUE(bound.has_value());
      EXPECT_LT(*bound, spec.nbytes() * 4 + (std::uint64_t{4} << 20));  // generous, not unbounded
      const auto values = random_floats(n, static_cast<unsigned>(n));
      codec::ChunkData chunk;
      chunk.bytes = Buffer::copy_of(ByteView(reinterpret_cast<const std::byte*>(values.data()), n * 4));
      EXPECT_LE(meta.codecs.encode(chunk, spec).size(), *bound);
      for (const auto& c : meta.codecs.bytes_codecs) {
        const Buffer raw = random_bytes(n * 4, 7);
        if (auto own = c->max_encoded_size(raw.size())) {
          EXPECT_LE(c->encode(raw.view()).size(), *own) << c->name();
        }
      }
    }
  }
}

TEST(CodecEncodedBound, DeclaredPerCompressor) {
  // Each compressor and checksum declares one (no fallback), matching its documented worst case.
  for (const char* name : {"blosc_lz4_shuffle", "zstd", "gzip1", "zlib", "lz4", "bz2", "lzma", "crc32c", "adler32"}) {
    for (const auto& chain : chains()) {
      if (std::string(chain.name) != name) continue;
      const auto meta = zarr::parse_v3_array(v3_array_json({256}, {256}, "float32", chain.codecs), "bound");
      const auto& c = meta.codecs.bytes_codecs.back();
      ASSERT_TRUE(c->max_encoded_size(1024).has_value()) << name;
      EXPECT_GE(*c->max_encoded_size(1024), 1024u) << name;
    }
  }
  const auto meta = zarr::parse_v3_array(v3_array_json({256}, {256}, "float32", json::array({bytes_codec(), blosc("lz4", "shuffle")})), "b");
  EXPECT_EQ(*meta.codecs.bytes_codecs[0]->max_encoded_size(1024), 1024u + 32u);  // n + BLOSC_MAX_OVERHEAD, blosc 2's too
  // bytes alone: exactly the decoded size; sharding: its inner chunks' bounds and the index.
  const auto plain = zarr::parse_v3_array(v3_array_json({256}, {256}, "float32", json::array({bytes_codec()})), "b");
  EXPECT_EQ(plain.codecs.max_encoded_size({plain.dtype, {256}}).value_or(0), 1024u);
  const auto sharded = zarr::parse_v3_array(
      v3_array_json({256}, {256}, "float32", json::array({sharding_codec({64}, json::array({bytes_codec()}))})), "b");
  EXPECT_EQ(sharded.codecs.max_encoded_size({sharded.dtype, {256}}).value_or(0), 4u * 256u + (16u * 4u + 4u));
}

// Valid arrays of incompressible data read in full through the bound, from files and over HTTP.
TEST(ZarrReadBound, IncompressibleCompressedArraysStillRead) {
  TempDir root;
  const std::uint64_t n = 20000;  // chunks of 8,000 values (the last one partial)
  const auto values = random_floats(n, 11);
  for (const auto& chain : chains(4000))
    write_v3_array(root.path() / chain.name, v3_array_json({n}, {8000}, "float32", chain.codecs), values.data(), 4);
  HostileServer server(root.path());
  for (const auto& chain : chains(4000)) {
    SCOPED_TRACE(chain.name);
    for (const auto& store : {make_file_store((root.path() / chain.name).string()),
                              open_location(server.url() + "/files/" + chain.name, {{"retries", "0"}}).store}) {
      const NDArray a = zarr::open_array(store, "")->read_all();
      const auto got = a.values<float>();
      ASSERT_EQ(got.size(), n);
      EXPECT_EQ(std::memcmp(got.data(), values.data(), n * 4), 0);
    }
  }
}

// A chunk URL answering an endless body: the read stops at the chunk's bound from the array
// metadata (about 64 KiB here: above one 16 KiB delivery of libcurl's), not at the 1 GiB
// default, and says so.
TEST(ZarrReadBound, EndlessChunkBodyStopsAtTheMetadataBound) {
  TempDir root;
  const json meta_json = v3_array_json({32768}, {16384}, "float32", json::array({bytes_codec(), zstd_codec()}));
  const auto values = random_floats(32768, 3);
  write_v3_array(root.path() / "arr", meta_json, values.data(), 4);
  fs::remove(root.path() / "arr" / "c" / "0");  // served as an endless body by /mixed/
  const auto meta = zarr::parse_v3_array(meta_json, "arr");
  const std::uint64_t bound = *meta.codecs.max_encoded_size({meta.dtype, meta.chunk_shape});
  ASSERT_LT(bound, 70000u);
  HostileServer server(root.path());
  const Location loc = open_location(server.url() + "/mixed/arr", {{"retries", "0"}});
  const auto array = zarr::open_array(loc.store, "");
  const std::string m = message_of<StoreError>([&] { array->read_all(); });
  EXPECT_NE(m.find("/mixed/arr/c/0"), std::string::npos) << m;
  EXPECT_NE(m.find(std::to_string(bound) + " bytes"), std::string::npos) << m;
  EXPECT_LT(bytes_received(m), 2 * bound) << m;
}

// A local chunk file larger than its bound is refused before it is read, naming the file.
TEST(ZarrReadBound, FileChunkLargerThanTheBoundNamesThePath) {
  TempDir root;
  const auto values = random_floats(8, 5);
  write_v3_array(root.path(), v3_array_json({8}, {4}, "float32", json::array({bytes_codec(), crc32c_codec()})),
                 values.data(), 4);
  write_file(root.path() / "c" / "1", std::string(100000, 'x'));
  const auto array = zarr::open_array(make_file_store(root.str()), "");
  const std::string m = message_of<StoreError>([&] { array->read_all(); });
  EXPECT_NE(m.find((root.path() / "c" / "1").string()), std::string::npos) << m;
  EXPECT_NE(m.find("100000 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("the 20 bytes"), std::string::npos) << m;  // 16 bytes of values + crc32c
}

// A sharded array's index may not give an inner chunk more bytes than the chunk can hold.
TEST(ZarrReadBound, ShardIndexEntryOverTheBoundIsRefused) {
  TempDir root;
  const auto values = random_floats(8, 9);
  write_v3_array(root.path(), v3_array_json({8}, {8}, "float32", json::array({sharding_codec({4}, json::array({bytes_codec()}))})),
                 values.data(), 4);
  // Inner chunk 0 grows to 4,000 bytes: its index entry (offset 0, nbytes 16) is rewritten.
  std::string shard = read_file(root.path() / "c" / "0");
  const std::string index = shard.substr(shard.size() - 36);
  std::string body = std::string(4000, 'y') + shard.substr(16, shard.size() - 36 - 16);
  std::string new_index = index.substr(0, 32);
  auto put64 = [&](std::size_t at, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) new_index[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  put64(0, 0);
  put64(8, 4000);
  put64(16, 4000);
  put64(24, 16);
  // The index's crc32c: recomputed with the project's own codec.
  const auto meta = zarr::parse_v3_array(v3_array_json({1}, {1}, "float32", json::array({bytes_codec(), crc32c_codec()})), "i");
  const Buffer with_crc = meta.codecs.bytes_codecs[0]->encode(ByteView(reinterpret_cast<const std::byte*>(new_index.data()), 32));
  write_file(root.path() / "c" / "0", body + std::string(reinterpret_cast<const char*>(with_crc.data()), with_crc.size()));
  const auto array = zarr::open_array(make_file_store(root.str()), "");
  const std::string m = message_of<CodecError>([&] { array->read_all(); });
  EXPECT_NE(m.find("4000 bytes, more than the 16 bytes"), std::string::npos) << m;
}

// An Icechunk manifest longer than the size its snapshot records is refused, naming the file:
// read from disk and over HTTP. With the size recorded exactly, the repository reads.
TEST(IcechunkReadBound, ManifestLongerThanRecordedIsRefused) {
  namespace w = lazycube::test::icechunk_writer;
  const std::string array = v3_array_json({4}, {4}, "int32", json::array({bytes_codec()})).dump();
  const std::string chunk = "0123456789abcdef";
  auto write = [&](const fs::path& dir, std::int64_t delta) {
    w::ManifestSpec m{{{0, 1}}, {}, ""};
    m.refs.push_back({w::Ref::Kind::Native, {0}, chunk});
    w::WriteOptions o;
    o.chunk_per_file = true;
    o.manifest_size_delta = delta;
    w::write_repository(dir, {{"/", R"({"zarr_format": 3, "node_type": "group"})"}, {"/v", array, true, {m}}}, o);
  };
  TempDir good, bad;
  write(good.path(), 0);
  write(bad.path(), -10);
  auto store_of = [](const std::string& url) {
    return icechunk::make_icechunk_store(icechunk::Repository::open(open_location(url, {{"retries", "0"}})), {});
  };
  const auto got = store_of(good.str())->get("v/c/0");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(got->data()), got->size()), chunk);

  const std::string local = message_of<StoreError>([&] { store_of(bad.str())->get("v/c/0"); });
  EXPECT_NE(local.find(bad.str() + "/manifests/"), std::string::npos) << local;
  EXPECT_NE(local.find("the object may hold"), std::string::npos) << local;

  HostileServer server(bad.path());
  const std::string remote = message_of<StoreError>([&] { store_of(server.url() + "/files")->get("v/c/0"); });
  EXPECT_NE(remote.find("/files/manifests/"), std::string::npos) << remote;
  EXPECT_NE(remote.find("bytes received"), std::string::npos) << remote;
}

// A native chunk asked for as its whole object may hold only its recorded length.
TEST(IcechunkReadBound, NativeChunkObjectLongerThanRecordedIsRefused) {
  namespace w = lazycube::test::icechunk_writer;
  const std::string array = v3_array_json({4}, {4}, "int32", json::array({bytes_codec()})).dump();
  TempDir dir;
  w::ManifestSpec m{{{0, 1}}, {}, ""};
  m.refs.push_back({w::Ref::Kind::Native, {0}, "0123456789abcdef"});
  w::WriteOptions o;
  o.chunk_per_file = true;
  w::write_repository(dir.path(), {{"/", R"({"zarr_format": 3, "node_type": "group"})"}, {"/v", array, true, {m}}}, o);
  for (const auto& e : fs::directory_iterator(dir.path() / "chunks")) write_file(e.path(), std::string(5000, 'z'));
  auto store = icechunk::make_icechunk_store(icechunk::Repository::open(open_location(dir.str())), {});
  const std::string m1 = message_of<StoreError>([&] { store->get("v/c/0"); });
  EXPECT_NE(m1.find("/chunks/"), std::string::npos) << m1;
  EXPECT_NE(m1.find("more than the 16 bytes"), std::string::npos) << m1;
}

// A kerchunk reference naming a whole object ([url], no range): the chunk's bound from the array
// metadata travels through the reference store to the target's store.
TEST(ZarrReadBound, KerchunkWholeObjectTargetStopsAtTheChunkBound) {
  TempDir root;
  HostileServer server(root.path());
  const json zarray = {{"chunks", {16}}, {"compressor", nullptr}, {"dtype", "<f4"}, {"fill_value", 0.0},
                       {"filters", nullptr}, {"order", "C"}, {"shape", {16}}, {"zarr_format", 2}};
  const json refs = {{".zgroup", R"({"zarr_format": 2})"},
                     {"x/.zarray", zarray.dump()},
                     {"x/0", json::array({server.url() + "/endless/x0"})}};
  write_file(root.path() / "refs.json", json({{"version", 1}, {"refs", refs}}).dump());
  const Location loc = refs::open_references("reference://" + (root.path() / "refs.json").string(),
                                     {{"allowed_prefixes", server.url() + "/endless/"}, {"retries", "0"}});
  const auto array = zarr::open_array(loc.store, "x");
  const std::string m = message_of<StoreError>([&] { array->read_all(); });
  EXPECT_NE(m.find("/endless/x0"), std::string::npos) << m;
  EXPECT_NE(m.find("the 64 bytes"), std::string::npos) << m;  // 16 float32 values, no compressor
}
