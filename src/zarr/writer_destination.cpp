// The writer's destination: what may be there before (Create / Overwrite / Resume), and every
// put with the key named in its error and the first failure recorded.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "lazycube/error.hpp"
#include "metadata_keys.hpp"
#include "util/thread_pool.hpp"
#include "writer_internal.hpp"

namespace lazycube::zarr::writer {

namespace {

bool is_metadata_key(const std::string& key) { return zarr::is_metadata_key(key); }

// Rethrows `e` as the same type with the key named, unless its message names it already.
template <class E>
[[noreturn]] void rethrow_naming(const E& e, const Store& store, const std::string& key, const char* doing) {
  const std::string msg = e.what();
  if (msg.find(key) != std::string::npos) throw E(msg);
  throw E(std::string(doing) + " " + store.describe(key) + ": " + msg);
}

}  // namespace

Destination::Destination(Location location, WriterOptions options)
    : location_(std::move(location)), options_(options) {
  if (!location_.store) throw UsageError("zarr writer: no store");
  if (!location_.store->writable())
    throw StoreError(location_.store->describe(location_.path) + " cannot be written: the store is read-only");
}

std::string Destination::key(const std::string& node_path, const std::string& name) const {
  return join_node_path(join_node_path(location_.path, node_path), name);
}

void Destination::check_empty() const {
  if (options_.mode != WriteMode::Create) return;
  const std::string prefix = location_.path.empty() ? "" : location_.path + "/";
  const auto keys = location_.store->list(prefix);
  if (!keys.empty())
    throw StoreError("destination " + location_.store->describe(location_.path) + " already exists (" +
                     std::to_string(keys.size()) + " object" + (keys.size() == 1 ? "" : "s") + ", e.g. '" +
                     keys.front() + "'): refusing to write there without overwrite");
}

void Destination::prepare() {
  std::call_once(prepared_, [this] {
    if (options_.mode != WriteMode::Overwrite) return;
    const std::string prefix = location_.path.empty() ? "" : location_.path + "/";
    std::vector<std::string> keys;
    try {
      keys = location_.store->list(prefix);
    } catch (const StoreError& e) {
      record_failure(e.what());
      throw;
    }
    // Metadata first: from the first removal on, no reader takes the old node for whole.
    std::stable_partition(keys.begin(), keys.end(), is_metadata_key);
    const auto data_begin = std::find_if_not(keys.begin(), keys.end(), is_metadata_key);
    for (auto it = keys.begin(); it != data_begin; ++it) remove(*it);
    const std::size_t first_data = static_cast<std::size_t>(data_begin - keys.begin());
    parallel_for(keys.size() - first_data, [&](std::size_t i) { remove(keys[first_data + i]); });
  });
}

template <class Op>
void Destination::guarded(const std::string& key, const char* doing, Op&& op) {
  try {
    op();
  } catch (const AuthError& e) {
    record_failure(e.what());
    rethrow_naming(e, *location_.store, key, doing);
  } catch (const StoreError& e) {
    record_failure(e.what());
    rethrow_naming(e, *location_.store, key, doing);
  }
}

void Destination::remove_partial_puts() {
  const std::string prefix = location_.path.empty() ? "" : location_.path + "/";
  guarded(location_.path, "cleaning up", [&] { location_.store->remove_partial_puts(prefix); });
}

void Destination::put(const std::string& key, ByteView bytes) {
  guarded(key, "writing", [&] { location_.store->put(key, bytes); });
}

void Destination::put_json(const std::string& key, const nlohmann::json& doc, int zarr_format) {
  const std::string text = json_text(doc, zarr_format);
  put(key, ByteView(reinterpret_cast<const std::byte*>(text.data()), text.size()));
}

void Destination::remove(const std::string& key) {
  guarded(key, "removing", [&] { location_.store->remove(key); });
}

void Destination::record_failure(const std::string& what) {
  std::lock_guard lock(mu_);
  if (first_failure_.empty()) first_failure_ = what;
  failed_.store(true);
}

std::string Destination::first_failure() const {
  std::lock_guard lock(mu_);
  return first_failure_;
}

}  // namespace lazycube::zarr::writer
