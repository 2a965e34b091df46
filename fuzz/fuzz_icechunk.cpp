// Icechunk files: the metadata envelope (header, zstd, FlatBuffer verification) of snapshot,
// manifest and repo files, each parsed by its reader; a spec 2 `repo` file and a spec 1
// refs/*/ref.json + config.yaml read as a repository's state from a memory store; the
// configuration's FlexBuffers and YAML on their own. Each snapshot and manifest file that parses
// also goes through the integrity check: read as the id it carries it parses again, read as any
// other id (or as the other file type) it is a MetadataError.
//
// Input: one selector byte, then the file's bytes.
//   0 snapshot file   1 manifest file (then every array's chunks looked up)   2 `repo` file
//   3 ref.json, optionally NUL and config.yaml   4 config.yaml   5 FlexBuffers configuration
#include "../src/icechunk/file_format.hpp"
#include "../src/icechunk/manifest.hpp"
#include "../src/icechunk/repo_config.hpp"
#include "../src/icechunk/repository_state.hpp"
#include "../src/icechunk/snapshot.hpp"
#include "fuzz_common.hpp"
#include "manifest_generated.h"

using namespace lazycube;
using namespace lazycube::icechunk;

namespace {

ByteView bytes_of(std::string_view s) { return {reinterpret_cast<const std::byte*>(s.data()), s.size()}; }

// `file` (parsed from `bytes` with no id to check) is accepted under the id it carries and
// refused under another; as the other file type it is refused whatever the id.
void check_integrity(std::string_view bytes, FileType type, const MetadataFile& file) {
  fuzz::check(file.id.has_value(), "a verified snapshot or manifest carries no id");
  fuzz::check(fuzz::typed_or_valid([&] { (void)parse_file(bytes_of(bytes), type, file.name, file.id); }),
              "a file is refused under the id it carries");
  Id12 other = *file.id;
  other[11] ^= 1;
  fuzz::check(!fuzz::typed_or_valid([&] { (void)parse_file(bytes_of(bytes), type, file.name, other); }),
              "a file is accepted under an id it does not carry");
  const FileType wrong = type == FileType::Snapshot ? FileType::Manifest : FileType::Snapshot;
  fuzz::check(!fuzz::typed_or_valid([&] { (void)parse_file(bytes_of(bytes), wrong, file.name, file.id); }),
              "a file is accepted as the other file type");
}

void fuzz_snapshot(std::string_view bytes) {
  fuzz::typed_or_valid([&] {
    MetadataFile file = parse_file(bytes_of(bytes), FileType::Snapshot, "snapshots/fuzz", std::nullopt);
    check_integrity(bytes, FileType::Snapshot, file);
    const Snapshot snap(std::move(file));
    for (const auto& [path, node] : snap.nodes()) (void)node.zarr_json.size();
  });
}

void fuzz_manifest(std::string_view bytes) {
  fuzz::typed_or_valid([&] {
    MetadataFile parsed = parse_file(bytes_of(bytes), FileType::Manifest, "manifests/fuzz", std::nullopt);
    check_integrity(bytes, FileType::Manifest, parsed);
    const Manifest manifest(std::move(parsed));
    MetadataFile again = parse_file(bytes_of(bytes), FileType::Manifest, "manifests/fuzz", std::nullopt);
    const auto* file = fb::GetManifestFile(again.payload.data());
    for (const auto* array : *file->arrays()) {
      Id8 node{};
      std::copy_n(array->node()->bytes()->data(), node.size(), node.begin());
      std::vector<std::vector<std::uint32_t>> all;
      fuzz::typed_or_valid([&] { manifest.for_each_coords(node, [&](const auto& c) { all.push_back(c); }); });
      all.push_back({0, 0});
      for (const auto& coords : all) fuzz::typed_or_valid([&] { (void)manifest.find(node, coords); });
    }
  });
}

void fuzz_repository(const std::map<std::string, std::string_view>& files) {
  auto store = make_memory_store();
  for (const auto& [key, bytes] : files) store->set(key, bytes);
  fuzz::typed_or_valid([&] {
    const auto state = read_repository_state({store, ""});
    fuzz::check(state != nullptr, "read_repository_state returned no state");
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Input in(data, size);
  const int mode = in.byte() % 6;
  const std::string_view rest = in.rest();
  switch (mode) {
    case 0: fuzz_snapshot(rest); break;
    case 1: fuzz_manifest(rest); break;
    case 2: fuzz_repository({{"repo", rest}}); break;
    case 3: {
      const auto [ref, config] = in.split_at_nul();
      std::map<std::string, std::string_view> files{{"refs/branch.main/ref.json", ref}};
      if (!config.empty()) files.emplace("config.yaml", config);
      fuzz_repository(files);
      break;
    }
    case 4: fuzz::typed_or_valid([&] { (void)containers_from_yaml(rest, "config.yaml"); }); break;
    default:
      fuzz::typed_or_valid([&] {
        (void)containers_from_flexbuffers(reinterpret_cast<const std::uint8_t*>(rest.data()), rest.size(), "repo");
      });
  }
  return 0;
}
