// Writes small Zarr v2/v3 arrays for tests, encoding chunks with the project's own codecs.
#pragma once

#include <cstring>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "zarr/array_metadata.hpp"
#include "util/chunk_copy.hpp"
#include "lazycube/codec/codec.hpp"
#include "test_support.hpp"

namespace lazycube::test {

using nlohmann::json;

// Row-major reference values for an array of float32: value(i) = i * 0.5 + 1.
inline std::vector<float> ramp(std::uint64_t n) {
  std::vector<float> v(n);
  for (std::uint64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * 0.5f + 1.0f;
  return v;
}

// Encodes `values` (C order over `shape`, element size `item`) into v3 chunks under `dir`
// using the array's own parsed codec chain; `skip(chunk_index)` leaves a chunk absent.
inline void write_v3_array(const fs::path& dir, const json& zarr_json, const void* values, std::size_t item,
                           const std::function<bool(const std::vector<std::uint64_t>&)>& skip = {}) {
  write_file(dir / "zarr.json", zarr_json.dump(2));
  auto meta = zarr::parse_v3_array(zarr_json, dir.string());
  Shape grid;
  for (std::size_t d = 0; d < meta.shape.size(); ++d)
    grid.push_back((meta.shape[d] + meta.chunk_shape[d] - 1) / meta.chunk_shape[d]);
  const codec::ChunkSpec spec{meta.dtype, meta.chunk_shape};
  const std::uint64_t nchunks = shape_size(grid);
  for (std::uint64_t c = 0; c < nchunks; ++c) {
    const auto at = grid::unravel(c, grid);
    const std::vector<std::uint64_t> idx(at.begin(), at.end());
    if (skip && skip(idx)) continue;
    grid::DimIndex origin(idx.size());
    for (std::size_t d = 0; d < idx.size(); ++d) origin[d] = idx[d] * meta.chunk_shape[d];
    codec::ChunkData chunk;
    chunk.bytes.resize(spec.nbytes());
    std::memset(chunk.bytes.data(), 0, chunk.bytes.size());
    grid::copy_block(ByteView(static_cast<const std::byte*>(values), shape_size(meta.shape) * item), meta.shape,
                     chunk.bytes.span(), meta.chunk_shape, origin, item, true);
    Buffer enc = meta.codecs.encode(chunk, spec);
    write_file(dir / meta.key_encoding.key(idx), enc.data(), enc.size());
  }
}

inline json v3_array_json(const Shape& shape, const Shape& chunks, const json& data_type, const json& codecs,
                          const json& fill = 0) {
  return {{"zarr_format", 3},
          {"node_type", "array"},
          {"shape", shape},
          {"data_type", data_type},
          {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", chunks}}}}},
          {"chunk_key_encoding", {{"name", "default"}, {"configuration", {{"separator", "/"}}}}},
          {"fill_value", fill},
          {"codecs", codecs},
          {"attributes", json::object()}};
}

inline json bytes_codec(const char* endian = "little") {
  return {{"name", "bytes"}, {"configuration", {{"endian", endian}}}};
}
inline json zstd_codec(int level = 1) {
  return {{"name", "zstd"}, {"configuration", {{"level", level}, {"checksum", false}}}};
}
inline json crc32c_codec() { return {{"name", "crc32c"}}; }
inline json sharding_codec(const Shape& inner, const json& codecs, const char* location = "end") {
  return {{"name", "sharding_indexed"},
          {"configuration",
           {{"chunk_shape", inner},
            {"codecs", codecs},
            {"index_codecs", json::array({bytes_codec(), crc32c_codec()})},
            {"index_location", location}}}};
}

}  // namespace lazycube::test
