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

flatbuffers::Verifier verifier_over(const Buffer& payload) {
  flatbuffers::Verifier::Options opts;
  opts.max_tables = 1u << 30;
  return flatbuffers::Verifier(reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size(), opts);
}

// The generated tables derive privately from flatbuffers::Table (same layout, no members).
const flatbuffers::Table& table(const void* t) { return *reinterpret_cast<const flatbuffers::Table*>(t); }

// ArrayRefs::Verify without descending into the reference tables (their offsets are checked).
bool verify_array_shallow(flatbuffers::Verifier& v, const fb::ArrayRefs* a) {
  const auto& t = table(a);
  return t.VerifyTableStart(v) && t.VerifyFieldRequired<fb::Id8>(v, fb::ArrayRefs::VT_NODE, 1) &&
         t.VerifyOffsetRequired(v, fb::ArrayRefs::VT_REFS) && v.VerifyVector(a->refs()) &&
         t.VerifyOffset(v, fb::ArrayRefs::VT_EXTRA) && v.VerifyVector(a->extra()) && v.EndTable();
}

[[noreturn]] void corrupt_ref(const std::string& name) {
  throw MetadataError(name + ": corrupt Icechunk manifest file (a chunk reference fails FlatBuffer verification)");
}

}  // namespace

// One reference, verified (once: a bit per 4-byte position of the payload remembers it) before
// any of its fields is read.
const fb::ChunkRef* Manifest::checked(const fb::ChunkRef* r) const {
  // The reference's offset was not checked with its vector: it may point anywhere.
  const auto base = reinterpret_cast<std::uintptr_t>(file_.payload.data()), p = reinterpret_cast<std::uintptr_t>(r);
  auto v = verifier_over(file_.payload);
  if (p < base || p >= base + file_.payload.size()) corrupt_ref(file_.name);
  const std::size_t at = (p - base) / 4;
  auto& word = verified_[at / 64];
  const std::uint64_t bit = std::uint64_t{1} << (at % 64);
  if (word.load(std::memory_order_acquire) & bit) return r;
  if (!r->Verify(v)) corrupt_ref(file_.name);
  word.fetch_or(bit, std::memory_order_release);
  return r;
}

namespace {

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

bool verify_manifest_shallow(const Buffer& payload) {
  auto v = verifier_over(payload);
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(payload.data());
  const flatbuffers::uoffset_t root = v.VerifyOffset(0);
  if (!root) return false;
  const auto* m = reinterpret_cast<const fb::ManifestFile*>(bytes + root);
  const auto& t = table(m);
  if (!(t.VerifyTableStart(v) && t.VerifyFieldRequired<fb::Id12>(v, fb::ManifestFile::VT_ID, 1) &&
        t.VerifyOffsetRequired(v, fb::ManifestFile::VT_ARRAYS) && v.VerifyVector(m->arrays())))
    return false;
  for (const auto* a : *m->arrays())
    if (!verify_array_shallow(v, a)) return false;
  return t.VerifyOffset(v, fb::ManifestFile::VT_LOCATION_DICTIONARY) && v.VerifyVector(m->location_dictionary()) &&
         t.VerifyField<std::uint8_t>(v, fb::ManifestFile::VT_LOCATION_COMPRESSION, 1) &&
         t.VerifyOffset(v, fb::ManifestFile::VT_EXTRA) && v.VerifyVector(m->extra()) && v.EndTable();
}

Manifest::Manifest(MetadataFile file) : file_(std::move(file)), verified_(file_.payload.size() / 4 / 64 + 1) {}

std::optional<ChunkLocation> Manifest::find(const Id8& node, const std::vector<std::uint32_t>& coords) const {
  const auto* m = fb::GetManifestFile(file_.payload.data());
  const auto* array = array_of(*m, node);
  if (!array) return std::nullopt;
  const auto& refs = *array->refs();
  // Binary search in place; each reference it reads is verified first (the file's verification
  // stopped at the reference offsets: a million references open without a pass over them all).
  auto it = std::lower_bound(refs.begin(), refs.end(), coords, [&](const fb::ChunkRef* r, const std::vector<std::uint32_t>& c) {
    return compare(*checked(r)->coords(), c) < 0;
  });
  if (it == refs.end() || compare(*checked(*it)->coords(), coords) != 0) return std::nullopt;
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
    checked(r);
    coords.assign(r->coords()->begin(), r->coords()->end());
    f(coords);
  }
}

}  // namespace lazycube::icechunk
