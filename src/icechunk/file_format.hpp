// The binary envelope of every Icechunk metadata file: a 39-byte header (magic "ICE🧊CHUNK",
// 24-byte implementation name, spec version, file type, compression) and a FlatBuffer, zstd-
// compressed. read_file checks the header, decompresses, and verifies the FlatBuffer before any
// field is read: bad bytes are a MetadataError or CodecError naming the file, never a crash.
// Integrity: snapshots, manifests and transaction logs are named by the 12-byte id their root
// table carries (its first field); a file read as `snapshots/ID` must be a snapshot (header file
// type) carrying ID, or it is a MetadataError naming the file and both ids: another file of the
// repository renamed over it (or a proxy answering with the wrong object) is never read as data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lazycube/store/store.hpp"
#include "object_id.hpp"

namespace lazycube::icechunk {

enum class FileType : std::uint8_t { Snapshot = 1, Manifest = 2, TransactionLog = 4, RepoInfo = 6 };

// A decompressed FlatBuffer, verified as the root table of its file type.
struct MetadataFile {
  std::string name;          // store->describe(key), for messages
  int spec_version = 0;      // 1 or 2, from the header
  std::string implementation;  // the writer, from the header (trailing spaces trimmed)
  Buffer payload;            // the FlatBuffer (64-byte aligned storage)
  std::optional<Id12> id;    // the id the file carries (snapshots, manifests, transaction logs)
};

// "snapshot", "manifest", "transaction log", "repo info".
const char* type_name(FileType type);

// Length of the magic bytes every Icechunk metadata file starts with.
inline constexpr std::size_t kMagicSize = 12;
// True when `bytes` begins with the Icechunk magic bytes.
bool starts_with_magic(ByteView bytes);

// Parses and verifies `bytes` (the whole file) read from `name`: the header's file type must be
// `expected`, and, when `fetched_as` is given, the id the file carries must equal it (otherwise a
// MetadataError naming the file and both ids). `fetched_as` is nullopt for the `repo` file (it
// has no id) and for bytes that were not fetched by an id (the fuzz target).
MetadataFile parse_file(ByteView bytes, FileType expected, const std::string& name,
                        const std::optional<Id12>& fetched_as);

// The integrity check of parse_file on its own: `file` (of type `type`) carries `fetched_as`.
void check_id(const MetadataFile& file, FileType type, const Id12& fetched_as);

// Reads `key` (snapshots/ID, manifests/ID, transactions/ID) from `store` and parses it, checking
// the header's file type and that the file carries `id`; NotFound naming the file when it does
// not exist. Every snapshot and manifest lazycube reads comes through here (FileCache).
// `max_bytes`: the file's size as recorded by whoever points to it (a snapshot's manifest
// list); a larger file is a StoreError naming it, raised as its bytes arrive (0: no bound).
MetadataFile read_file(Store& store, const std::string& key, FileType expected, const Id12& id,
                       std::uint64_t max_bytes = 0);

}  // namespace lazycube::icechunk
