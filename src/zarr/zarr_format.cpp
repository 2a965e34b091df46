// The Zarr format (v2 and v3) in the format registry: a group's arrays, or one array named
// after its node. It is the fallback: a location no other format recognises is read as Zarr,
// whose NotFound then says what is missing.
#include <nlohmann/json.hpp>

#include "lazycube/format/registry.hpp"
#include "chunk_store.hpp"
#include "lazycube/error.hpp"
#include "lazycube/zarr/hierarchy.hpp"

namespace lazycube::zarr {

namespace {

// Last non-empty '/'-separated component of `path`.
std::string last_component(std::string_view path) {
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  const auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

format::Opened open_node(const format::Sniff& sniff, const format::Request& request) {
  Location node{sniff.root.store, sniff.node};
  const ZarrOptions options = ZarrOptions::from_document(request.format_options);
  if (options.chunk_store) {
    Location chunks = open_location(*options.chunk_store, request.storage_options);
    if (!chunks.path.empty())
      throw UsageError("format option 'chunk_store': " + *options.chunk_store + " names a path inside a store, not a store");
    node.store = split_chunk_store(node.store, std::move(chunks.store));
  }
  // The round's answers when it fetched this node's documents (a failed round fetched none).
  const bool prefetched = sniff.answer(metadata_probes(sniff.node, options.consolidated).front().key) != nullptr;
  const auto hierarchy = Hierarchy::open(node, options, prefetched ? &sniff.answers : nullptr);
  format::Contents out;
  if (hierarchy.is_array()) {
    std::string name = last_component(node.path);
    if (name.empty()) name = last_component(node.store->url());
    if (name.empty()) name = "data";
    out.arrays.emplace_back(name, hierarchy.array(hierarchy.array_names().front()));
  } else {
    for (const auto& name : hierarchy.array_names()) out.arrays.emplace_back(name, hierarchy.array(name));
  }
  out.unreadable = hierarchy.unreadable();
  out.attrs = hierarchy.attrs();
  out.zarr_format = hierarchy.zarr_format();
  return {std::move(out), std::nullopt};
}

}  // namespace

}  // namespace lazycube::zarr

LAZYCUBE_REGISTER_FORMAT(zarr) {
  using namespace lazycube;
  registry.add({.engine = "zarr",
                .describe = "Zarr stores",
                .order = 1000,
                .option_keys = {{"consolidated", "true, false or null"},
                                {"missing_chunks", "\"fill\" or \"error\""},
                                {"chunk_store", "a URL or path"}},
                // Absent chunks read as the fill value: what every format does.
                .neutral_values = {{"missing_chunks", "\"fill\""}},
                .check_options = [](const nlohmann::json& d) { (void)zarr::ZarrOptions::from_document(d); },
                .has_nodes = true,
                .probes = [](const format::Sniff& s, const format::Request& r) {
                  return zarr::metadata_probes(s.node, zarr::ZarrOptions::from_document(r.format_options).consolidated);
                },
                .recognises = nullptr,  // the fallback
                .open_location = &zarr::open_node});
}
