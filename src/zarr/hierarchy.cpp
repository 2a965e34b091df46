// Opening Zarr nodes: v3 zarr.json first, then v2 .zarray/.zgroup; consolidated metadata
// (.zmetadata or an inline consolidated_metadata block) saves a read per array.
#include "lazycube/zarr/hierarchy.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "array_metadata.hpp"
#include "lazycube/error.hpp"
#include "lazycube/zarr/consolidated.hpp"
#include "util/text.hpp"
#include "zarr_array.hpp"

namespace lazycube::zarr {

using nlohmann::json;

namespace {

// Zarr v2 groups opened on this thread without the consolidated metadata they might have had.
thread_local std::uint64_t unconsolidated_fallbacks = 0;

// Metadata documents fetched ahead of the probes that read them (see prefetch_probes).
using ProbeCache = std::map<std::string, std::optional<Buffer>>;

// The JSON document at `key`, or nullopt when absent. Malformed JSON is a MetadataError.
std::optional<json> read_json(Store& store, const std::string& key, const ProbeCache* probes = nullptr) {
  std::optional<Buffer> bytes;
  if (auto it = probes ? probes->find(key) : ProbeCache::const_iterator{}; probes && it != probes->end())
    bytes = it->second;
  else
    bytes = store.get(key);
  if (!bytes) return std::nullopt;
  try {
    return json::parse(reinterpret_cast<const char*>(bytes->data()),
                       reinterpret_cast<const char*>(bytes->data()) + bytes->size());
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number past double's range
    throw MetadataError("malformed JSON in " + store.describe(key) + ": " + e.what());
  }
}

// Over a network store the probes of a node (v3 zarr.json; v2 .zarray, .zattrs, .zgroup,
// .zmetadata) go out at once, one round trip instead of up to five in a row. A failure of the
// batch is left to the probe that meets it, one at a time as before.
ProbeCache prefetch_probes(Store& store, const std::string& path, std::optional<bool> consolidated) {
  ProbeCache out;
  if (!store.prefers_batches()) return out;
  const std::vector<ByteRequest> reqs = metadata_probes(path, consolidated);
  try {
    auto got = store.get_many(reqs);
    for (std::size_t i = 0; i < reqs.size(); ++i) out.emplace(reqs[i].key, std::move(got[i]));
  } catch (const Error&) {
    out.clear();
  }
  return out;
}

ArrayPtr make_array(const std::shared_ptr<Store>& store, const std::string& path, ArrayMetadata m,
                    const ZarrOptions& options = {}) {
  return std::make_shared<ZarrArray>(store, path, std::move(m), options.missing_chunks_error);
}

ArrayPtr v2_array_from(const std::shared_ptr<Store>& store, const std::string& path,
                       const json& zarray, const json& zattrs, const ZarrOptions& options = {}) {
  return make_array(store, path, parse_v2_array(zarray, zattrs, store->describe(path)), options);
}

}  // namespace

ArrayPtr open_array(const std::shared_ptr<Store>& store, const std::string& path) {
  if (auto doc = read_json(*store, join_node_path(path, "zarr.json"))) {
    if (string_member(*doc, "node_type", store->describe(join_node_path(path, "zarr.json"))) != "array")
      throw NotFound(store->describe(path) + " is a Zarr group, not an array");
    return make_array(store, path, parse_v3_array(*doc, store->describe(path)));
  }
  if (auto zarray = read_json(*store, join_node_path(path, ".zarray"))) {
    auto zattrs = read_json(*store, join_node_path(path, ".zattrs"));
    return v2_array_from(store, path, *zarray, zattrs ? *zattrs : json());
  }
  throw NotFound("no Zarr array at " + store->describe(path));
}

std::vector<ByteRequest> metadata_probes(const std::string& node, std::optional<bool> consolidated) {
  std::vector<ByteRequest> reqs;
  for (const char* name : {"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"})
    if (consolidated != false || std::string_view(name) != ".zmetadata") reqs.push_back({join_node_path(node, name), {}});
  return reqs;
}

ZarrOptions ZarrOptions::from_document(const json& document) {
  ZarrOptions out;
  if (!document.is_object()) return out;
  if (auto it = document.find("consolidated"); it != document.end() && !it->is_null()) {
    if (!it->is_boolean())
      throw UsageError("format option 'consolidated' takes true, false or null, not " + it->dump());
    out.consolidated = it->get<bool>();
  }
  if (auto it = document.find("missing_chunks"); it != document.end() && !it->is_null()) {
    if (*it != "fill" && *it != "error")
      throw UsageError("format option 'missing_chunks' takes \"fill\" or \"error\", not " + it->dump());
    out.missing_chunks_error = *it == "error";
  }
  if (auto it = document.find("chunk_store"); it != document.end() && !it->is_null()) {
    if (!it->is_string() || it->get<std::string>().empty())
      throw UsageError("format option 'chunk_store' takes the URL or path of a store, not " + it->dump());
    out.chunk_store = it->get<std::string>();
  }
  return out;
}

std::uint64_t unconsolidated_fallbacks_on_this_thread() { return unconsolidated_fallbacks; }

Hierarchy Hierarchy::open(const Location& location, std::optional<bool> consolidated, const ProbeCache* prefetched) {
  ZarrOptions options;
  options.consolidated = consolidated;
  return open(location, options, prefetched);
}

Hierarchy Hierarchy::open(const Location& location, const ZarrOptions& options, const ProbeCache* prefetched) {
  const std::optional<bool> consolidated = options.consolidated;
  Hierarchy h;
  h.location_ = location;
  auto& store = location.store;
  const std::string& path = location.path;
  const std::string where = store->describe(path);
  std::map<std::string, ArrayPtr> arrays;
  std::vector<std::string> groups;
  ProbeCache fetched;
  if (!prefetched) fetched = prefetch_probes(*store, path, consolidated);
  const ProbeCache& probes = prefetched ? *prefetched : fetched;

  if (auto doc = read_json(*store, join_node_path(path, "zarr.json"), &probes)) {
    h.zarr_format_ = 3;
    if (!doc->is_object()) throw MetadataError("malformed " + store->describe(join_node_path(path, "zarr.json")) + ": not an object");
    const std::string node_type = string_member(*doc, "node_type", store->describe(join_node_path(path, "zarr.json")));
    if (node_type == "array") {
      h.root_is_array_ = true;
      auto a = make_array(store, path, parse_v3_array(*doc, where), options);
      h.attrs_ = a->attrs();
      h.array_names_ = {""};
      h.arrays_ = {a};
      return h;
    }
    if (node_type != "group")
      throw MetadataError(where + ": zarr.json has node_type " + (*doc)["node_type"].dump() +
                          ", expected \"array\" or \"group\"");
    check_v3_must_understand(*doc, "group", store->describe(join_node_path(path, "zarr.json")));
    if (auto it = doc->find("attributes"); it != doc->end() && it->is_object()) h.attrs_ = *it;
    auto cm = doc->find("consolidated_metadata");
    const bool has_cm = cm != doc->end() && cm->is_object() && cm->contains("metadata");
    if (consolidated == true && !has_cm)
      throw NotFound(where + ": no consolidated metadata in zarr.json (consolidated=true)");
    if (has_cm && consolidated != false) {
      h.used_consolidated_ = true;
      const json& entries = (*cm)["metadata"];
      if (!entries.is_object()) throw MetadataError(where + ": consolidated_metadata.metadata is not an object");
      for (const auto& entry : entries.items()) {
        // named, not a structured binding: the lambda below captures them (clang 14 refuses that)
        const std::string& name = entry.key();
        const json& meta = entry.value();
        if (name.find('/') != std::string::npos) continue;  // deeper nodes belong to sub-groups
        if (!meta.is_object()) throw MetadataError(where + ": consolidated entry '" + name + "' is not an object");
        const std::string child_type = string_member(meta, "node_type", where + ": consolidated entry '" + name + "'");
        if (child_type == "array")
          open_or_record(h.unreadable_, name, [&] {
            arrays[name] = make_array(store, join_node_path(path, name), parse_v3_array(meta, store->describe(join_node_path(path, name))), options);
          });
        else if (child_type == "group")
          groups.push_back(name);
      }
    } else {
      for (const auto& name : store->list_dir(path)) {
        auto child = read_json(*store, join_node_path(join_node_path(path, name), "zarr.json"));
        if (!child) continue;
        const std::string child_type =
            string_member(*child, "node_type", store->describe(join_node_path(join_node_path(path, name), "zarr.json")));
        if (child_type == "array")
          open_or_record(h.unreadable_, name, [&] {
            arrays[name] = make_array(store, join_node_path(path, name), parse_v3_array(*child, store->describe(join_node_path(path, name))), options);
          });
        else if (child_type == "group")
          groups.push_back(name);
      }
    }
  } else if (auto zarray = read_json(*store, join_node_path(path, ".zarray"), &probes)) {
    h.zarr_format_ = 2;
    h.root_is_array_ = true;
    auto zattrs = read_json(*store, join_node_path(path, ".zattrs"), &probes);
    auto a = v2_array_from(store, path, *zarray, zattrs ? *zattrs : json(), options);
    h.attrs_ = a->attrs();
    h.array_names_ = {""};
    h.arrays_ = {a};
    return h;
  } else {
    auto zgroup = read_json(*store, join_node_path(path, ".zgroup"), &probes);
    std::optional<json> zmeta;
    if (consolidated != false) zmeta = read_json(*store, join_node_path(path, ".zmetadata"), &probes);
    if (!zgroup && !zmeta) throw NotFound("no Zarr group or array at " + where);
    if (consolidated == true && !zmeta)
      throw NotFound(where + ": no consolidated metadata (.zmetadata) (consolidated=true)");
    h.zarr_format_ = 2;
    if (zmeta) {
      h.used_consolidated_ = true;
      if (!zmeta->is_object() || !zmeta->contains("metadata") || !(*zmeta)["metadata"].is_object())
        throw MetadataError("malformed " + store->describe(join_node_path(path, ".zmetadata")) + ": no 'metadata' object");
      const json& md = (*zmeta)["metadata"];
      if (auto it = md.find(".zattrs"); it != md.end() && it->is_object()) h.attrs_ = *it;
      for (const auto& entry : md.items()) {
        // named, not a structured binding: the lambda below captures `value` (clang 14 refuses that)
        const std::string& key = entry.key();
        const json& value = entry.value();
        const auto slash = key.find('/');
        if (slash == std::string::npos || key.find('/', slash + 1) != std::string::npos) continue;
        const std::string name = key.substr(0, slash);
        const std::string leaf = key.substr(slash + 1);
        if (leaf == ".zarray") {
          auto attrs_it = md.find(name + "/.zattrs");
          open_or_record(h.unreadable_, name, [&] {
            arrays[name] = v2_array_from(store, join_node_path(path, name), value, attrs_it != md.end() ? *attrs_it : json(), options);
          });
        } else if (leaf == ".zgroup") {
          groups.push_back(name);
        }
      }
    } else {
      // consolidated=nullopt and no .zmetadata at the group, nor at the store's root (xarray
      // opens a group of a store consolidated at its root from the root's .zmetadata).
      if (!consolidated.has_value() && (path.empty() || !store->exists(".zmetadata"))) ++unconsolidated_fallbacks;
      if (auto zattrs = read_json(*store, join_node_path(path, ".zattrs"), &probes); zattrs && zattrs->is_object()) h.attrs_ = *zattrs;
      for (const auto& name : store->list_dir(path)) {
        if (!name.empty() && name[0] == '.') continue;
        const std::string child = join_node_path(path, name);
        bool array = false;  // a .zarray there (read, or recorded as unreadable)
        const std::size_t recorded = h.unreadable_.size();
        open_or_record(h.unreadable_, name, [&] {
          auto za = read_json(*store, join_node_path(child, ".zarray"));
          if (!za) return;
          array = true;
          auto zattrs = read_json(*store, join_node_path(child, ".zattrs"));
          arrays[name] = v2_array_from(store, child, *za, zattrs ? *zattrs : json(), options);
        });
        if (!array && h.unreadable_.size() == recorded && store->exists(join_node_path(child, ".zgroup")))
          groups.push_back(name);
      }
    }
  }
  for (auto& [name, a] : arrays) {
    h.array_names_.push_back(name);
    h.arrays_.push_back(a);
  }
  std::sort(groups.begin(), groups.end());
  h.group_names_ = groups;
  std::sort(h.unreadable_.begin(), h.unreadable_.end(),
            [](const UnreadableArray& a, const UnreadableArray& b) { return a.name < b.name; });
  return h;
}

ArrayPtr Hierarchy::array(const std::string& name) const {
  for (std::size_t i = 0; i < array_names_.size(); ++i)
    if (array_names_[i] == name) return arrays_[i];
  for (const auto& u : unreadable_)
    if (u.name == name) rethrow_unreadable(u);
  const std::string known = join_names(array_names_);
  throw NotFound("no array '" + name + "' in " + location_.store->describe(location_.path) +
                 " (arrays: " + (known.empty() ? "none" : known) + ")");
}

}  // namespace lazycube::zarr
