#include "file_format.hpp"

#include <cstring>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lazycube/codec/codec.hpp"
#include "lazycube/error.hpp"
#include "manifest.hpp"
#include "manifest_generated.h"
#include "repo_generated.h"
#include "snapshot_generated.h"

namespace lazycube::icechunk {

namespace {

constexpr std::size_t kHeaderSize = 39;
constexpr std::string_view kMagic = "ICE\xF0\x9F\xA7\x8A" "CHUNK";  // "ICE🧊CHUNK"
static_assert(kMagic.size() == kMagicSize);
// Decompressed metadata files larger than this are refused (a manifest of 10 M refs is ~1 GB).
constexpr std::uint64_t kMaxPayload = std::uint64_t{4} << 30;

const char* type_name(FileType t) {
  switch (t) {
    case FileType::Snapshot: return "snapshot";
    case FileType::Manifest: return "manifest";
    case FileType::TransactionLog: return "transaction log";
    case FileType::RepoInfo: return "repo info";
  }
  return "unknown";
}

bool known_type(std::uint8_t t) { return t == 1 || t == 2 || t == 4 || t == 6; }

bool verify(const Buffer& payload, FileType type) {
  flatbuffers::Verifier::Options opts;
  opts.max_tables = 1u << 30;  // big manifests hold millions of chunk refs
  opts.max_depth = 64;
  flatbuffers::Verifier v(reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size(), opts);
  switch (type) {
    case FileType::Snapshot: return fb::VerifySnapshotFileBuffer(v);
    case FileType::Manifest: return verify_manifest_shallow(payload);  // references: on first read
    case FileType::RepoInfo: return fb::VerifyRepoFileBuffer(v);
    case FileType::TransactionLog: return false;  // not read by lazycube
  }
  return false;
}

Buffer decompress(ByteView in, const std::string& name) {
  static const auto zstd = codec::make_bytes_codec("zstd", nlohmann::json::object(), codec::ChunkSpec{});
  Buffer scratch;
  codec::DecodeLimits limits;
  limits.max_size = kMaxPayload;
  ByteView out;
  try {
    out = zstd->decode(in, scratch, limits);
  } catch (const CodecError& e) {
    throw CodecError(name + ": cannot decompress the Icechunk file (" + e.what() + ")");
  }
  if (out.data() == scratch.data() && out.size() == scratch.size()) return scratch;  // decoded in place: no copy
  return Buffer::copy_of(out);
}

}  // namespace

bool starts_with_magic(ByteView bytes) {
  return bytes.size() >= kMagic.size() && std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) == 0;
}

MetadataFile parse_file(ByteView file, FileType expected, const std::string& name) {
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(file.data());
  if (file.size() < kHeaderSize)
    throw MetadataError(name + ": not an Icechunk file (" + std::to_string(file.size()) +
                        " bytes, shorter than the 39-byte header)");
  if (!starts_with_magic(file))
    throw MetadataError(name + ": not an Icechunk file (wrong magic bytes)");
  MetadataFile f;
  f.name = name;
  f.implementation.assign(reinterpret_cast<const char*>(bytes) + 12, 24);
  while (!f.implementation.empty() && (f.implementation.back() == ' ' || f.implementation.back() == '\0'))
    f.implementation.pop_back();
  const std::uint8_t version = bytes[36], type = bytes[37], compression = bytes[38];
  if (version != 1 && version != 2)
    throw MetadataError(name + ": unsupported Icechunk spec version " + std::to_string(version) +
                        " (this build reads spec versions 1 and 2)");
  f.spec_version = version;
  if (!known_type(type)) throw MetadataError(name + ": unknown Icechunk file type " + std::to_string(type));
  if (type != static_cast<std::uint8_t>(expected))
    throw MetadataError(name + ": an Icechunk " + type_name(static_cast<FileType>(type)) + " file where a " +
                        type_name(expected) + " file was expected");
  if (compression == 0) f.payload = Buffer::copy_of(file.subspan(kHeaderSize));  // aligned for FlatBuffers
  else if (compression == 1) f.payload = decompress(file.subspan(kHeaderSize), name);
  else throw MetadataError(name + ": unknown Icechunk compression " + std::to_string(compression) + " (0: none, 1: zstd)");
  if (!verify(f.payload, expected))
    throw MetadataError(name + ": corrupt Icechunk " + type_name(expected) + " file (FlatBuffer verification failed)");
  return f;
}

MetadataFile read_file(Store& store, const std::string& key, FileType expected) {
  auto got = store.get(key);
  const std::string name = store.describe(key);
  if (!got) throw NotFound("Icechunk " + std::string(type_name(expected)) + " file not found: " + name);
  return parse_file(got->view(), expected, name);
}

}  // namespace lazycube::icechunk
