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

bool known_type(std::uint8_t t) { return t == 1 || t == 2 || t == 4 || t == 6; }

// Snapshots, manifests and transaction logs are named by the id they carry.
bool has_id(FileType t) { return t != FileType::RepoInfo; }

// The id a snapshot, manifest or transaction log carries: the first field (vtable slot 4) of each
// root table, a required 12-byte struct. Verified here on its own (a few bounds checks), so it
// also reads the id of a file of an unexpected type, for the message; nullopt when it cannot.
std::optional<Id12> stored_id(const Buffer& payload) {
  flatbuffers::Verifier v(reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size());
  const flatbuffers::uoffset_t root = v.VerifyOffset(0);
  if (!root) return std::nullopt;
  const auto* table = reinterpret_cast<const flatbuffers::Table*>(reinterpret_cast<const std::uint8_t*>(payload.data()) + root);
  constexpr flatbuffers::voffset_t kIdField = 4;
  if (!table->VerifyTableStart(v) || !table->VerifyFieldRequired<fb::Id12>(v, kIdField, 1)) return std::nullopt;
  const auto* id = table->GetStruct<const fb::Id12*>(kIdField);
  Id12 out{};
  std::memcpy(out.data(), id->bytes()->data(), out.size());
  return out;
}

bool verify(const Buffer& payload, FileType type) {
  flatbuffers::Verifier::Options opts;
  opts.max_tables = 1u << 30;  // big manifests hold millions of chunk refs
  opts.max_depth = 64;
  flatbuffers::Verifier v(reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size(), opts);
  switch (type) {
    case FileType::Snapshot: return fb::VerifySnapshotFileBuffer(v);
    case FileType::Manifest: return verify_manifest_shallow(payload);  // references: on first read
    case FileType::RepoInfo: return fb::VerifyRepoFileBuffer(v);
    case FileType::TransactionLog: return stored_id(payload).has_value();  // lazycube reads its id only
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

Buffer payload_of(ByteView file, std::uint8_t compression, const std::string& name) {
  if (compression == 0) return Buffer::copy_of(file.subspan(kHeaderSize));  // aligned for FlatBuffers
  if (compression == 1) return decompress(file.subspan(kHeaderSize), name);
  throw MetadataError(name + ": unknown Icechunk compression " + std::to_string(compression) + " (0: none, 1: zstd)");
}

// " (id X)" of a file of another type, for the message; "" when it has none or cannot be read.
std::string id_of_other(ByteView file, FileType type, std::uint8_t compression, const std::string& name) {
  if (!has_id(type)) return "";
  try {
    if (auto id = stored_id(payload_of(file, compression, name))) return " (id " + encode_id(*id) + ")";
  } catch (const Error&) {
  }
  return "";
}

}  // namespace

const char* type_name(FileType t) {
  switch (t) {
    case FileType::Snapshot: return "snapshot";
    case FileType::Manifest: return "manifest";
    case FileType::TransactionLog: return "transaction log";
    case FileType::RepoInfo: return "repo info";
  }
  return "unknown";
}

void check_id(const MetadataFile& file, FileType type, const Id12& fetched_as) {
  if (!file.id) throw MetadataError(file.name + ": the Icechunk " + type_name(type) + " file carries no id");
  if (*file.id != fetched_as)
    throw MetadataError(file.name + ": the Icechunk " + type_name(type) + " file carries id " + encode_id(*file.id) +
                        ", not the id " + encode_id(fetched_as) +
                        " it was read as (another file under its name: refusing to read it)");
}

bool starts_with_magic(ByteView bytes) {
  return bytes.size() >= kMagic.size() && std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) == 0;
}

MetadataFile parse_file(ByteView file, FileType expected, const std::string& name,
                        const std::optional<Id12>& fetched_as) {
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
  if (type != static_cast<std::uint8_t>(expected)) {
    const auto actual = static_cast<FileType>(type);
    if (!fetched_as)
      throw MetadataError(name + ": an Icechunk " + type_name(actual) + " file where a " + type_name(expected) +
                          " file was expected");
    throw MetadataError(name + ": an Icechunk " + type_name(actual) + " file" + id_of_other(file, actual, compression, name) +
                        " where the " + type_name(expected) + " file " + encode_id(*fetched_as) + " was expected");
  }
  f.payload = payload_of(file, compression, name);
  if (!verify(f.payload, expected))
    throw MetadataError(name + ": corrupt Icechunk " + type_name(expected) + " file (FlatBuffer verification failed)");
  if (has_id(expected)) {
    f.id = stored_id(f.payload);
    if (fetched_as) check_id(f, expected, *fetched_as);
  }
  return f;
}

MetadataFile read_file(Store& store, const std::string& key, FileType expected, const Id12& id,
                       std::uint64_t max_bytes) {
  ByteRequest request{key, ByteRange::full()};
  request.max_bytes = max_bytes;
  auto got = std::move(store.get_many({request})[0]);
  const std::string name = store.describe(key);
  if (!got) throw NotFound("Icechunk " + std::string(type_name(expected)) + " file not found: " + name);
  return parse_file(got->view(), expected, name, id);
}

}  // namespace lazycube::icechunk
