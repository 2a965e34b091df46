// How a chunk's grid index becomes a store key and back: Zarr's `chunk_key_encoding` (and v2's
// `dimension_separator`). The one parser of that metadata, shared by the Zarr reader and writer
// and by Icechunk's store (which maps keys back to manifest coordinates).
//
//   default   "c/1/2" (separator "/" or ".")          core spec
//   v2        "1.2", "0" for 0-d (separator "." or "/") core spec
//   fanout    "d0/1/23/d1/5/c" (max_children)          zarr-extensions
//   suffix    base key + ".tiff" (suffix, base_encoding) zarr-extensions (draft)
//   prefix    "x/" + base key (prefix, base_encoding)    zarr-extensions
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace lazycube::zarr {

class ChunkKeyEncoding {
 public:
  enum class Kind { Default, V2, Fanout, Suffix, Prefix };

  // Zarr v3's default (`c/1/2`); v2's (`1.2`), as `.zarray`'s dimension_separator says.
  static ChunkKeyEncoding v3_default(char separator = '/');
  static ChunkKeyEncoding v2(char separator = '.');
  // A v3 `chunk_key_encoding` object. MetadataError naming `where`, the encoding and the field
  // for an unknown name or a bad configuration.
  static ChunkKeyEncoding parse(const nlohmann::json& encoding, const std::string& where);

  ChunkKeyEncoding() : ChunkKeyEncoding(v3_default()) {}

  std::string key(std::span<const std::uint64_t> index) const;
  // The grid index whose key is `key` in an array of `ndim` dimensions; nullopt when `key` is
  // not a key this encoding writes (another node's key, a non-canonical number, ...).
  std::optional<std::vector<std::uint64_t>> index_of(std::string_view key, std::size_t ndim) const;

  // The metadata object (the inverse of parse).
  nlohmann::json to_json() const;
  Kind kind() const { return kind_; }

 private:
  ChunkKeyEncoding(Kind kind) : kind_(kind) {}
  std::optional<std::vector<std::uint64_t>> parse_key(std::string_view key, std::size_t ndim) const;

  Kind kind_;
  char separator_ = '/';            // default, v2
  std::uint64_t max_children_ = 0;  // fanout
  std::string affix_;               // suffix, prefix
  std::shared_ptr<const ChunkKeyEncoding> base_;  // suffix, prefix
};

}  // namespace lazycube::zarr
