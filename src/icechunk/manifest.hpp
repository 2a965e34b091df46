// A parsed manifest file: chunk references looked up by (node id, chunk coordinates) straight in
// the FlatBuffer (binary search; nothing is materialised, nor verified, per reference up front).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "file_format.hpp"
#include "lazycube/util/buffer.hpp"
#include "object_id.hpp"

namespace lazycube::icechunk {

namespace fb {
struct ChunkRef;
}

struct ChunkLocation {
  enum class Kind { Inline, Native, Virtual };
  Kind kind = Kind::Inline;
  ByteView inline_bytes;       // Inline: into the manifest's payload
  std::string chunk_id;        // Native: chunks/<chunk_id>
  std::string url;             // Virtual
  std::uint64_t offset = 0, length = 0;  // Native, Virtual
  std::string etag;            // Virtual: expected ETag, "" when none
  std::uint32_t last_modified_s = 0;  // Virtual: expected last-modified, 0 when none
};

// Verifies a manifest's FlatBuffer down to each array's vector of reference offsets; the
// reference tables themselves are verified when a lookup reads them (Manifest::find).
bool verify_manifest_shallow(const Buffer& payload);

class Manifest {
 public:
  explicit Manifest(MetadataFile file);
  const std::string& name() const { return file_.name; }
  std::uint64_t payload_bytes() const { return file_.payload.size(); }
  // The reference of chunk `coords` of node `node`; nullopt when the manifest has none.
  std::optional<ChunkLocation> find(const Id8& node, const std::vector<std::uint32_t>& coords) const;
  // Every chunk coordinate of `node` in this manifest, in order.
  void for_each_coords(const Id8& node, const std::function<void(const std::vector<std::uint32_t>&)>& f) const;

 private:
  const fb::ChunkRef* checked(const fb::ChunkRef* r) const;

  MetadataFile file_;
  mutable std::vector<std::atomic<std::uint64_t>> verified_;  // references verified so far
};

}  // namespace lazycube::icechunk
