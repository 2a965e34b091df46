// Opening Zarr v2/v3 nodes: a group (with its child arrays) or a single array. Consolidated
// metadata (.zmetadata, or consolidated_metadata in a v3 root zarr.json) is used when present.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lazycube/array.hpp"
#include "lazycube/store/store.hpp"
#include "lazycube/unreadable_array.hpp"

namespace lazycube::zarr {

// The metadata documents that tell what the node at `node` is (v3 zarr.json; v2 .zarray,
// .zattrs, .zgroup and, unless `consolidated` is false, .zmetadata): fetched together.
std::vector<ByteRequest> metadata_probes(const std::string& node, std::optional<bool> consolidated);

// The Zarr format's options (keys of the format options document, docs/formats.md).
struct ZarrOptions {
  // "consolidated": nullopt (absent or null) = use consolidated metadata when present; true =
  // require it; false = ignore it.
  std::optional<bool> consolidated;
  // "missing_chunks": what a chunk (a shard, an inner chunk of a shard) absent from the store
  // reads as: "fill" (the default, as the Zarr spec says: the fill value) or "error" (a
  // MissingDataError naming the chunk and the array, as zarr-python's read_missing_chunks=False):
  // a training job can refuse fill values standing in for lost data.
  bool missing_chunks_error = false;
  // "chunk_store": the URL or path of a separate store holding the chunks (zarr-python's and
  // xarray's chunk_store), under the same keys; the metadata documents come from the store
  // opened. Opened with the same storage options.
  std::optional<std::string> chunk_store;
  // UsageError naming a key of the wrong type or value.
  static ZarrOptions from_document(const nlohmann::json& document);
};

class Hierarchy {
 public:
  // Opens the node at `location`. `consolidated`: nullopt = use consolidated metadata when it
  // exists, true = require it (MetadataError/NotFound if absent), false = ignore it.
  // Throws NotFound when there is no Zarr node at that path.
  // `prefetched`: the answers to metadata_probes() fetched already (the format registry's
  // sniffing round); without them a network store fetches them in one batch here.
  static Hierarchy open(const Location& location, std::optional<bool> consolidated = std::nullopt,
                        const std::map<std::string, std::optional<Buffer>>* prefetched = nullptr);
  // The same with every Zarr option (ZarrOptions): the arrays read absent chunks as it says.
  static Hierarchy open(const Location& location, const ZarrOptions& options,
                        const std::map<std::string, std::optional<Buffer>>* prefetched = nullptr);

  int zarr_format() const { return zarr_format_; }
  // True when the opened node itself is an array (then arrays() holds just it, named "").
  bool is_array() const { return root_is_array_; }
  // Attributes of the opened node.
  const nlohmann::json& attrs() const { return attrs_; }
  // Names of the arrays directly under the opened group, sorted (or {""} for an array node).
  const std::vector<std::string>& array_names() const { return array_names_; }
  // Names of the sub-groups directly under the opened group, sorted.
  const std::vector<std::string>& group_names() const { return group_names_; }
  // The array with that name (as listed in array_names()); an unreadable one's own error
  // (unreadable()), naming it; NotFound otherwise.
  ArrayPtr array(const std::string& name) const;
  // The arrays of the group whose metadata lazycube cannot read (an unknown codec or data type,
  // a malformed document), sorted by name: left out of array_names(), listed with the reason.
  const std::vector<UnreadableArray>& unreadable() const { return unreadable_; }
  const Location& location() const { return location_; }
  bool used_consolidated() const { return used_consolidated_; }

 private:
  Location location_;
  int zarr_format_ = 2;
  bool root_is_array_ = false;
  bool used_consolidated_ = false;
  nlohmann::json attrs_ = nlohmann::json::object();
  std::vector<std::string> array_names_;
  std::vector<std::string> group_names_;
  std::vector<ArrayPtr> arrays_;  // parallel to array_names_
  std::vector<UnreadableArray> unreadable_;
};

// Opens one array given its metadata location (no consolidated metadata involved).
ArrayPtr open_array(const std::shared_ptr<Store>& store, const std::string& path);

}  // namespace lazycube::zarr
