// Writes small spec 2 Icechunk repositories for tests (lazycube reads Icechunk; it does not
// write it yet): one snapshot on branch main, arrays with several manifests covering extents
// of their chunk grid, inline, native (at an offset inside a shared chunk file) and virtual
// references (plain or dictionary-compressed locations). Payloads are stored uncompressed
// (header compression byte 0), which the spec allows.
#pragma once

#include <zstd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "icechunk/object_id.hpp"
#include "manifest_generated.h"
#include "repo_generated.h"
#include "snapshot_generated.h"
#include "test_support.hpp"

namespace lazycube::test::icechunk_writer {

// The little-endian bytes of int32 values: an int32 array's chunk with the bytes codec.
inline std::string int32_bytes(std::initializer_list<std::int32_t> values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), std::data(values), out.size());
  return out;
}

namespace fb = lazycube::icechunk::fb;

struct Ref {
  enum class Kind { Inline, Native, Virtual } kind = Kind::Inline;
  std::vector<std::uint32_t> coords;
  std::string bytes;               // Inline and Native: the chunk's encoded bytes
  std::string url;                 // Virtual
  std::uint64_t offset = 0, length = 0;  // Virtual
  std::string etag{};                    // Virtual: the recorded ETag ("": none)
  std::uint32_t last_modified_s = 0;     // Virtual: the recorded last-modified time (0: none)
};

struct ManifestSpec {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> extents;  // [begin, end) per dimension
  std::vector<Ref> refs;           // sorted by coords
  std::string location_dictionary;  // non-empty: virtual locations are zstd-compressed with it
};

struct NodeSpec {
  std::string path;                // "/" or "/a/b"
  std::string zarr_json;
  bool is_array = false;
  std::vector<ManifestSpec> manifests;
};

inline fb::Id12 id12(std::uint8_t seed) {
  std::array<std::uint8_t, 12> b{};
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(seed * 17 + i);
  return fb::Id12(flatbuffers::span<const std::uint8_t, 12>(b.data(), 12));
}

inline std::string crockford(const fb::Id12& id) { return icechunk::encode_id(id.bytes()->data(), 12); }

struct WriteOptions {
  std::vector<std::uint8_t> config;  // the repo file's configuration (FlexBuffers bytes), none when empty
  bool compress = false;             // zstd-compress the metadata files (as Icechunk does)
  bool chunk_per_file = false;       // each native chunk in a file of its own (as Icechunk does)
  // Added to each manifest file's size as the snapshot records it (ManifestFileInfo size_bytes):
  // negative, the manifest is longer than recorded.
  std::int64_t manifest_size_delta = 0;
  // The repo file's history beyond the written snapshot (index 0, branch main): more snapshot
  // entries (ids id12(seed), parents as indexes into the list, -1 none; no snapshot files),
  // the written snapshot's parent, and ops log entries.
  struct History {
    std::uint8_t seed;
    std::int32_t parent;
    std::string message;
  };
  std::vector<History> history;
  std::int32_t parent = -1;
  std::vector<std::pair<std::uint8_t, std::uint8_t>> amended;  // (new snapshot seed, replaced seed); 100 = the written one
  std::vector<std::uint8_t> detached;                          // snapshot seeds
  fb::Availability availability = fb::Availability_Online;
  std::string status_reason;
  std::vector<std::uint16_t> flags_on, flags_off;
};

// The 39-byte header and the payload (zstd-compressed when `compress`).
inline void write_metadata(const std::filesystem::path& p, std::uint8_t file_type, const flatbuffers::FlatBufferBuilder& b,
                           bool compress = false) {
  std::string bytes = "ICE\xF0\x9F\xA7\x8A" "CHUNK";
  std::string impl = "lazycube-tests";
  impl.resize(24, ' ');
  bytes += impl;
  bytes += static_cast<char>(2);
  bytes += static_cast<char>(file_type);
  bytes += static_cast<char>(compress ? 1 : 0);
  if (compress) {
    std::string packed(ZSTD_compressBound(b.GetSize()), '\0');
    const std::size_t n = ZSTD_compress(packed.data(), packed.size(), b.GetBufferPointer(), b.GetSize(), 3);
    if (ZSTD_isError(n)) throw std::runtime_error("zstd compression failed");
    bytes.append(packed.data(), n);
  } else {
    bytes.append(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
  }
  write_file(p, bytes);
}

inline std::vector<std::uint8_t> compress_with(const std::string& text, const std::string& dict) {
  std::vector<std::uint8_t> out(ZSTD_compressBound(text.size()));
  ZSTD_CCtx* c = ZSTD_createCCtx();
  const std::size_t n = ZSTD_compress_usingDict(c, out.data(), out.size(), text.data(), text.size(), dict.data(),
                                                dict.size(), 3);
  ZSTD_freeCCtx(c);
  if (ZSTD_isError(n)) throw std::runtime_error("zstd compression failed");
  out.resize(n);
  return out;
}

// Writes the repository under `dir`: repo, snapshots/, manifests/, chunks/.
inline void write_repository(const std::filesystem::path& dir, const std::vector<NodeSpec>& nodes,
                             const WriteOptions& options = {}) {
  std::uint32_t next_chunk = 0;  // chunk_per_file: chunk ids
  std::uint8_t next_id = 1;
  std::string chunk_file = "padding";  // native chunks share one file, at offsets
  const fb::Id12 chunk_id = id12(200);
  std::vector<flatbuffers::Offset<fb::Node>> node_offsets;
  std::vector<fb::ManifestInfoV1> manifest_infos;  // the snapshot's manifest list, sizes recorded
  flatbuffers::FlatBufferBuilder sb;
  std::uint8_t node_seed = 1;
  for (const auto& node : nodes) {
    std::array<std::uint8_t, 8> nid{};
    nid.fill(node_seed++);
    const fb::Id8 node_id(flatbuffers::span<const std::uint8_t, 8>(nid.data(), 8));
    std::vector<flatbuffers::Offset<fb::ManifestPointer>> pointers;
    for (const auto& m : node.manifests) {
      const fb::Id12 mid = id12(next_id++);
      flatbuffers::FlatBufferBuilder mb;
      std::vector<flatbuffers::Offset<fb::ChunkRef>> refs;
      for (const auto& r : m.refs) {
        std::vector<std::uint8_t> bytes(r.bytes.begin(), r.bytes.end());
        switch (r.kind) {
          case Ref::Kind::Inline:
            refs.push_back(fb::CreateChunkRefDirect(mb, &r.coords, &bytes));
            break;
          case Ref::Kind::Native: {
            if (options.chunk_per_file) {
              std::array<std::uint8_t, 12> b{0xC4};
              std::memcpy(b.data() + 8, &next_chunk, 4);
              ++next_chunk;
              const fb::Id12 id(flatbuffers::span<const std::uint8_t, 12>(b.data(), 12));
              write_file(dir / "chunks" / crockford(id), r.bytes);
              refs.push_back(fb::CreateChunkRefDirect(mb, &r.coords, nullptr, 0, r.bytes.size(), &id));
              break;
            }
            const std::uint64_t offset = chunk_file.size();
            chunk_file += r.bytes;
            refs.push_back(fb::CreateChunkRefDirect(mb, &r.coords, nullptr, offset, r.bytes.size(), &chunk_id));
            break;
          }
          case Ref::Kind::Virtual:
            if (m.location_dictionary.empty()) {
              refs.push_back(fb::CreateChunkRefDirect(mb, &r.coords, nullptr, r.offset, r.length, nullptr, r.url.c_str(),
                                                      r.etag.empty() ? nullptr : r.etag.c_str(), r.last_modified_s));
            } else {
              const auto packed = compress_with(r.url, m.location_dictionary);
              refs.push_back(fb::CreateChunkRefDirect(mb, &r.coords, nullptr, r.offset, r.length, nullptr, nullptr,
                                                      r.etag.empty() ? nullptr : r.etag.c_str(), r.last_modified_s, &packed));
            }
            break;
        }
      }
      std::vector<flatbuffers::Offset<fb::ArrayRefs>> arrays = {fb::CreateArrayRefsDirect(mb, &node_id, &refs)};
      std::vector<std::uint8_t> dict(m.location_dictionary.begin(), m.location_dictionary.end());
      mb.Finish(fb::CreateManifestFileDirect(mb, &mid, &arrays, dict.empty() ? nullptr : &dict, dict.empty() ? 0 : 1));
      write_metadata(dir / "manifests" / crockford(mid), 2, mb, options.compress);
      const auto size = static_cast<std::int64_t>(std::filesystem::file_size(dir / "manifests" / crockford(mid)));
      manifest_infos.emplace_back(mid, static_cast<std::uint64_t>(size + options.manifest_size_delta),
                                  static_cast<std::uint32_t>(m.refs.size()));
      std::vector<fb::Extent> extents;
      for (const auto& [b, e] : m.extents) extents.emplace_back(b, e);
      pointers.push_back(fb::CreateManifestPointerDirect(sb, &mid, &extents));
    }
    std::vector<std::uint8_t> json(node.zarr_json.begin(), node.zarr_json.end());
    flatbuffers::Offset<void> kind;
    if (node.is_array) {
      std::vector<fb::DimV1> no_shape;
      kind = fb::CreateArrayDataDirect(sb, &no_shape, nullptr, &pointers).Union();
    } else {
      kind = fb::CreateGroupData(sb).Union();
    }
    node_offsets.push_back(fb::CreateNodeDirect(sb, &node_id, node.path.c_str(), &json,
                                                node.is_array ? fb::NodeKind_Array : fb::NodeKind_Group, kind));
  }
  const fb::Id12 sid = id12(100);
  std::vector<flatbuffers::Offset<fb::MetaEntry>> no_meta;
  sb.Finish(fb::CreateSnapshotFileDirect(sb, &sid, nullptr, &node_offsets, 1'700'000'000'000'000, "generated", &no_meta,
                                         &manifest_infos));
  write_metadata(dir / "snapshots" / crockford(sid), 1, sb, options.compress);
  write_file(dir / "chunks" / crockford(chunk_id), chunk_file);

  flatbuffers::FlatBufferBuilder rb;
  std::vector<flatbuffers::Offset<fb::NamedRef>> tags;
  std::vector<flatbuffers::Offset<fb::NamedRef>> branches = {fb::CreateNamedRefDirect(rb, "main", 0)};
  std::vector<flatbuffers::Offset<flatbuffers::String>> deleted;
  std::vector<flatbuffers::Offset<fb::SnapshotEntry>> snaps = {
      fb::CreateSnapshotEntryDirect(rb, &sid, options.parent, 1'700'000'000'000'000, "generated")};
  for (const auto& h : options.history) {
    const fb::Id12 id = id12(h.seed);
    snaps.push_back(fb::CreateSnapshotEntryDirect(rb, &id, h.parent, 1'600'000'000'000'000 + h.seed, h.message.c_str()));
  }
  std::vector<flatbuffers::Offset<fb::OpEntry>> ops;
  for (const auto& [now, was] : options.amended) {
    const fb::Id12 a = id12(now), b = id12(was);
    ops.push_back(fb::CreateOpEntry(rb, fb::Op_OpAmend, fb::CreateOpAmendDirect(rb, "main", &b, &a).Union()));
  }
  for (const auto seed : options.detached) {
    const fb::Id12 d = id12(seed);
    ops.push_back(fb::CreateOpEntry(rb, fb::Op_OpDetached, fb::CreateOpDetached(rb, &d).Union()));
  }
  const auto status = fb::CreateStatusDirect(rb, options.availability, 1'700'000'000'000'000,
                                             options.status_reason.empty() ? nullptr : options.status_reason.c_str());
  rb.Finish(fb::CreateRepoFileDirect(rb, 2, &tags, &branches, &deleted, &snaps, status, nullptr, &ops, nullptr,
                                     options.config.empty() ? nullptr : &options.config,
                                     options.flags_on.empty() ? nullptr : &options.flags_on,
                                     options.flags_off.empty() ? nullptr : &options.flags_off));
  write_metadata(dir / "repo", 6, rb, options.compress);
}

}  // namespace lazycube::test::icechunk_writer
