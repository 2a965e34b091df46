// The binary envelope of every Icechunk metadata file: a 39-byte header (magic "ICE🧊CHUNK",
// 24-byte implementation name, spec version, file type, compression) and a FlatBuffer, zstd-
// compressed. read_file checks the header, decompresses, and verifies the FlatBuffer before any
// field is read: bad bytes are a MetadataError or CodecError naming the file, never a crash.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lazycube/store/store.hpp"

namespace lazycube::icechunk {

enum class FileType : std::uint8_t { Snapshot = 1, Manifest = 2, TransactionLog = 4, RepoInfo = 6 };

// A decompressed FlatBuffer, verified as the root table of its file type.
struct MetadataFile {
  std::string name;          // store->describe(key), for messages
  int spec_version = 0;      // 1 or 2, from the header
  std::string implementation;  // the writer, from the header (trailing spaces trimmed)
  Buffer payload;            // the FlatBuffer (64-byte aligned storage)
};

// Length of the magic bytes every Icechunk metadata file starts with.
inline constexpr std::size_t kMagicSize = 12;
// True when `bytes` begins with the Icechunk magic bytes.
bool starts_with_magic(ByteView bytes);

// Parses and verifies `bytes` (the whole file) read from `name`.
MetadataFile parse_file(ByteView bytes, FileType expected, const std::string& name);

// Reads `key` from `store` and parses it; NotFound naming the file when it does not exist.
MetadataFile read_file(Store& store, const std::string& key, FileType expected);

}  // namespace lazycube::icechunk
