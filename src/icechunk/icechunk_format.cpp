// The Icechunk format in the format registry: a repository (spec 1 or 2) at a location is a
// layer over its store; the snapshot the options choose (branch main by default) is handed on
// as a Zarr v3 store, where the group applies.
#include <nlohmann/json.hpp>

#include "file_format.hpp"
#include "lazycube/error.hpp"
#include "lazycube/format/registry.hpp"
#include "lazycube/icechunk/repository.hpp"
#include "repository_state.hpp"

namespace lazycube::icechunk {

namespace {

using nlohmann::json;

std::string string_option(const json& document, const char* key) {
  auto it = document.find(key);
  if (it == document.end() || it->is_null()) return {};
  if (!it->is_string()) throw UsageError(std::string("format option '") + key + "' takes a string, not " + it->dump());
  return it->get<std::string>();
}

// The sniffing round's probes: the `repo` file's magic (spec 2) and the main branch's ref (spec 1).
std::vector<ByteRequest> probes(const format::Sniff& sniff, const format::Request&) {
  return {{key_in(sniff.root, "repo"), ByteRange::range(0, kMagicSize)},
          {key_in(sniff.root, "refs/branch.main/ref.json"), ByteRange::range(0, 1)}};
}

bool recognises(const format::Sniff& sniff) {
  const auto* repo = sniff.answer(key_in(sniff.root, "repo"));
  const auto* ref = sniff.answer(key_in(sniff.root, "refs/branch.main/ref.json"));
  if (!repo || !ref) return repository_layout(sniff.root) != 0;  // the round failed: ask ourselves
  // The `repo` file counts by its magic bytes: a Zarr store may hold an unrelated key "repo".
  return (*repo && starts_with_magic((*repo)->view())) || ref->has_value();
}

format::Opened open_snapshot(const format::Sniff& sniff, const format::Request& request) {
  const IcechunkOptions options = IcechunkOptions::from_document(request.format_options);
  return {std::nullopt, Location{make_icechunk_store(Repository::open(sniff.root), options), ""}};
}

}  // namespace

IcechunkOptions IcechunkOptions::from_document(const json& document) {
  IcechunkOptions out;
  if (!document.is_object()) return out;
  out.version.branch = string_option(document, "branch");
  out.version.tag = string_option(document, "tag");
  out.version.snapshot = string_option(document, "snapshot");
  if (auto it = document.find("virtual_chunk_containers"); it != document.end() && !it->is_null()) {
    if (!it->is_object())
      throw UsageError("format option 'virtual_chunk_containers' takes {URL prefix: {storage option: value}}, not " +
                       it->dump());
    for (const auto& [prefix, opts] : it->items()) {
      if (!opts.is_object() && !opts.is_null())
        throw UsageError("format option 'virtual_chunk_containers': the storage options of '" + prefix +
                         "' must be an object, not " + opts.dump());
      StoreOptions& o = out.virtual_chunk_containers[prefix];
      if (opts.is_null()) continue;
      for (const auto& [k, v] : opts.items()) {
        if (!v.is_string())
          throw UsageError("format option 'virtual_chunk_containers': option '" + k + "' of '" + prefix +
                           "' must be a string, not " + v.dump());
        o[k] = v.get<std::string>();
      }
    }
  }
  return out;
}

}  // namespace lazycube::icechunk

LAZYCUBE_REGISTER_FORMAT(icechunk) {
  using namespace lazycube;
  registry.add({.engine = "icechunk",
                .describe = "Icechunk repositories",
                .order = 100,
                .option_keys = {{"branch", "string"},
                                {"tag", "string"},
                                {"snapshot", "string"},
                                {"virtual_chunk_containers", "{prefix: {option: value}}"}},
                .check_options = [](const nlohmann::json& d) { (void)icechunk::IcechunkOptions::from_document(d); },
                .has_nodes = true,
                .probes = &icechunk::probes,
                .recognises = &icechunk::recognises,
                .open_location = &icechunk::open_snapshot});
}
