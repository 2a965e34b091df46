#include "manifest.hpp"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "lazycube/error.hpp"
#include "manifest_generated.h"

namespace lazycube::icechunk {

namespace {

// -1, 0, 1: lexicographic order of a reference's coordinates against `coords`.
int compare(const flatbuffers::Vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {
  const std::size_t n = std::min<std::size_t>(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i)
    if (a[static_cast<flatbuffers::uoffset_t>(i)] != b[i]) return a[static_cast<flatbuffers::uoffset_t>(i)] < b[i] ? -1 : 1;
  if (a.size() == b.size()) return 0;
  return a.size() < b.size() ? -1 : 1;
}

const fb::ArrayRefs* array_of(const fb::ManifestFile& m, const Id8& node) {
  const auto& arrays = *m.arrays();
  auto it = std::lower_bound(arrays.begin(), arrays.end(), node, [](const fb::ArrayRefs* a, const Id8& n) {
    return std::memcmp(a->node()->bytes()->data(), n.data(), n.size()) < 0;
  });
  if (it == arrays.end() || std::memcmp(it->node()->bytes()->data(), node.data(), node.size()) != 0) return nullptr;
  return *it;
}

struct DCtxFree {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};

// A location compressed with the manifest's zstd dictionary.
std::string unpack_location(const flatbuffers::Vector<std::uint8_t>& packed, const fb::ManifestFile& m,
                            const std::string& name) {
  if (m.location_compression() != 1 || !m.location_dictionary())
    throw MetadataError(name + ": a compressed virtual chunk location without a zstd location dictionary");
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxFree> ctx(ZSTD_createDCtx());
  if (!ctx) throw CodecError("zstd: cannot allocate a decompression context");
  unsigned long long size = ZSTD_getFrameContentSize(packed.data(), packed.size());
  if (size == ZSTD_CONTENTSIZE_ERROR) throw CodecError(name + ": corrupt compressed virtual chunk location");
  if (size == ZSTD_CONTENTSIZE_UNKNOWN || size > 65536) size = 65536;  // URLs are short
  std::string out(static_cast<std::size_t>(size), '\0');
  const std::size_t n = ZSTD_decompress_usingDict(ctx.get(), out.data(), out.size(), packed.data(), packed.size(),
                                                  m.location_dictionary()->data(), m.location_dictionary()->size());
  if (ZSTD_isError(n))
    throw CodecError(name + ": cannot decompress a virtual chunk location (" + ZSTD_getErrorName(n) + ")");
  out.resize(n);
  return out;
}

}  // namespace

Manifest::Manifest(MetadataFile file) : file_(std::move(file)) {}

std::optional<ChunkLocation> Manifest::find(const Id8& node, const std::vector<std::uint32_t>& coords) const {
  const auto* m = fb::GetManifestFile(file_.payload.data());
  const auto* array = array_of(*m, node);
  if (!array) return std::nullopt;
  const auto& refs = *array->refs();
  auto it = std::lower_bound(refs.begin(), refs.end(), coords, [](const fb::ChunkRef* r, const std::vector<std::uint32_t>& c) {
    return compare(*r->coords(), c) < 0;
  });
  if (it == refs.end() || compare(*it->coords(), coords) != 0) return std::nullopt;
  const fb::ChunkRef& r = **it;
  ChunkLocation loc;
  if (r.inline_bytes()) {
    loc.kind = ChunkLocation::Kind::Inline;
    loc.inline_bytes = ByteView(reinterpret_cast<const std::byte*>(r.inline_bytes()->data()), r.inline_bytes()->size());
    return loc;
  }
  loc.offset = r.offset();
  loc.length = r.length();
  if (r.chunk()) {
    loc.kind = ChunkLocation::Kind::Native;
    loc.chunk_id = encode_id(r.chunk()->bytes()->data(), 12);
    return loc;
  }
  loc.kind = ChunkLocation::Kind::Virtual;
  if (r.location()) loc.url = r.location()->str();
  else if (r.packed_location()) loc.url = unpack_location(*r.packed_location(), *m, file_.name);
  else throw MetadataError(file_.name + ": a chunk reference with neither inline bytes, a chunk id nor a location");
  if (r.etag()) loc.etag = r.etag()->str();
  loc.last_modified_s = r.last_modified_s();
  return loc;
}

void Manifest::for_each_coords(const Id8& node, const std::function<void(const std::vector<std::uint32_t>&)>& f) const {
  const auto* m = fb::GetManifestFile(file_.payload.data());
  const auto* array = array_of(*m, node);
  if (!array) return;
  std::vector<std::uint32_t> coords;
  for (const auto* r : *array->refs()) {
    coords.assign(r->coords()->begin(), r->coords()->end());
    f(coords);
  }
}

}  // namespace lazycube::icechunk
