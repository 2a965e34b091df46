// What the writer's files share: the destination with its failure record, and the metadata
// documents built from an ArraySpec (checked by parsing them back with the readers' parsers).
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "array_metadata.hpp"
#include "lazycube/zarr/writer.hpp"
#include "sharding_codec.hpp"

namespace lazycube::zarr::writer {

using Documents = std::vector<std::pair<std::string, nlohmann::json>>;  // file name → JSON

// The destination: every key the writer stores goes through put(), which names the key in a
// StoreError and records the first failure, after which commit() refuses.
class Destination {
 public:
  Destination(Location location, WriterOptions options);

  const Location& location() const { return location_; }
  const WriterOptions& options() const { return options_; }
  Store& store() const { return *location_.store; }
  // The store key of `name` in the node at `node_path`.
  std::string key(const std::string& node_path, const std::string& name) const;

  // Create: refuses a destination holding anything (check_empty, at construction). Once,
  // before the first key is stored (prepare): Overwrite removes what is there.
  void check_empty() const;
  void prepare();
  // At commit (when no unit write runs, in this process or another): removes what killed
  // puts left half-done (Store::remove_partial_puts) — a killed run before a resume, or a lost
  // Dask worker whose regions ran again elsewhere.
  void remove_partial_puts();
  void put(const std::string& key, ByteView bytes);
  void put_json(const std::string& key, const nlohmann::json& doc, int zarr_format);
  void remove(const std::string& key);

  void record_failure(const std::string& what);
  bool failed() const { return failed_.load(); }
  std::string first_failure() const;

 private:
  // Runs a store operation on `key`: a StoreError gets the key named and is recorded.
  template <class Op>
  void guarded(const std::string& key, const char* doing, Op&& op);

  Location location_;
  WriterOptions options_;
  std::once_flag prepared_;
  std::atomic<bool> failed_{false};
  mutable std::mutex mu_;
  std::string first_failure_;
};

// The metadata of an array spec: the documents to store (v2 .zarray [+ .zattrs]; v3 zarr.json)
// and the same documents parsed back as the read path parses them. `where` names the array in
// messages. MetadataError / CodecError naming what is wrong.
struct BuiltArray {
  Documents documents;
  ArrayMetadata meta;
};
BuiltArray build_array(const ArraySpec& spec, const std::string& where);

// A group's documents: v2 [.zattrs +] .zgroup; v3 zarr.json (without consolidated_metadata).
Documents group_documents(int zarr_format, const nlohmann::json& attributes);

// JSON text as the zarr-pythons write it (v2: indent 4, ASCII only; v3: indent 2).
std::string json_text(const nlohmann::json& doc, int zarr_format);

}  // namespace lazycube::zarr::writer
