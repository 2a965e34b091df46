// Repository: refs and history of spec 1 (refs/*/ref.json, parent links in snapshot files) and
// spec 2 (the `repo` file) repositories.
#include <nlohmann/json.hpp>

#include "lazycube/error.hpp"
#include "object_id.hpp"
#include "repo_generated.h"
#include "repository_state.hpp"
#include "snapshot.hpp"

namespace lazycube::icechunk {

namespace {

std::string repo_url(const Location& root) { return root.path.empty() ? root.store->url() : root.store->describe(root.path); }

std::unique_ptr<RepositoryState> read_v2_state(const MetadataFile& file) {
  const auto* r = fb::GetRepoFile(file.payload.data());
  auto state = std::make_unique<RepositoryState>();
  state->spec_version = file.spec_version;
  state->has_snapshot_list = true;
  const auto& snaps = *r->snapshots();
  std::vector<std::string> ids;
  ids.reserve(snaps.size());
  for (const auto* s : snaps) ids.push_back(encode_id(s->id()->bytes()->data(), 12));
  auto snapshot_at = [&](std::int64_t index, const std::string& what) -> const std::string& {
    if (index < 0 || index >= static_cast<std::int64_t>(ids.size()))
      throw MetadataError(file.name + ": " + what + " points to snapshot index " + std::to_string(index) + " of " +
                          std::to_string(ids.size()));
    return ids[static_cast<std::size_t>(index)];
  };
  for (flatbuffers::uoffset_t i = 0; i < snaps.size(); ++i) {
    const auto* s = snaps[i];
    RepositoryState::Entry e;
    if (s->parent() >= 0) e.parent = snapshot_at(s->parent(), "snapshot " + ids[i] + "'s parent");
    e.written_at_us = s->written_at_us();
    e.message = s->message()->str();
    state->snapshots.emplace(ids[i], std::move(e));
  }
  for (const auto* b : *r->branches()) state->branches[b->name()->str()] = snapshot_at(b->snapshot(), "branch '" + b->name()->str() + "'");
  for (const auto* t : *r->tags()) state->tags[t->name()->str()] = snapshot_at(t->snapshot(), "tag '" + t->name()->str() + "'");
  for (const auto* d : *r->deleted_tags()) state->deleted_tags.insert(d->str());
  if (const auto* config = r->config()) state->containers = containers_from_flexbuffers(config->data(), config->size(), file.name);
  if (const auto* status = r->status()) {
    switch (status->availability()) {
      case fb::Availability_Online: state->status.availability = "online"; break;
      case fb::Availability_ReadOnly: state->status.availability = "read_only"; break;
      case fb::Availability_Offline: state->status.availability = "offline"; break;
      default:  // a later spec's state: not known to be readable
        state->status.availability = "unknown (" + std::to_string(static_cast<int>(status->availability())) + ")";
    }
    state->status.since_us = status->since_us();
    if (status->reason()) state->status.reason = status->reason()->str();
  }
  if (const auto* on = r->flags_on()) state->flags_on.assign(on->begin(), on->end());
  if (const auto* off = r->flags_off()) state->flags_off.assign(off->begin(), off->end());
  const auto id_of = [](const fb::Id12* id) { return encode_id(id->bytes()->data(), 12); };
  for (const auto* entry : *r->ops()) {
    if (const auto* amend = entry->op_as_OpAmend()) state->amended[id_of(amend->snapshot())] = id_of(amend->was());
    if (const auto* detached = entry->op_as_OpDetached()) state->detached.insert(id_of(detached->snapshot()));
  }
  return state;
}

// Spec 1: the snapshot id in refs/<dir>/ref.json; nullopt when the file does not exist.
std::optional<std::string> read_v1_ref(const Location& root, const std::string& dir) {
  const std::string key = key_in(root, "refs/" + dir + "/ref.json");
  auto bytes = root.store->get(key);
  if (!bytes) return std::nullopt;
  const std::string_view text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  const auto doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object() || !doc.contains("snapshot") || !doc["snapshot"].is_string() ||
      !decode_id12(doc["snapshot"].get<std::string>()))
    throw MetadataError(root.store->describe(key) + ": not an Icechunk ref file ({\"snapshot\": \"<20-character id>\"})");
  return doc["snapshot"].get<std::string>();
}

std::unique_ptr<RepositoryState> read_v1_state(const Location& root) {
  auto state = std::make_unique<RepositoryState>();
  state->spec_version = 1;
  std::vector<std::string> dirs;
  try {
    dirs = root.store->list_dir(key_in(root, "refs"));
  } catch (const StoreError&) {  // stores that cannot list (HTTP): refs are read by name on demand
    state->refs_listed = false;
  }
  for (const auto& dir : dirs) {
    const bool branch = dir.starts_with("branch."), tag = dir.starts_with("tag.");
    if (!branch && !tag) continue;
    const std::string name = dir.substr(branch ? 7 : 4);
    if (tag && root.store->exists(key_in(root, "refs/" + dir + "/ref.json.deleted"))) {
      state->deleted_tags.insert(name);
      continue;
    }
    auto id = read_v1_ref(root, dir);
    if (!id) continue;
    (branch ? state->branches : state->tags)[name] = *id;
  }
  const std::string config_key = key_in(root, "config.yaml");  // optional
  if (auto config = root.store->get(config_key))
    state->containers = containers_from_yaml(std::string_view(reinterpret_cast<const char*>(config->data()), config->size()),
                                             root.store->describe(config_key));
  return state;
}

NotFound ref_not_found(const Location& root, const std::string& what, const std::string& why = "") {
  return NotFound("ref not found: " + what + (why.empty() ? "" : " (" + why + ")") + " in Icechunk repository " +
                  repo_url(root));
}

}  // namespace

std::string key_in(const Location& root, std::string_view key) {
  if (root.path.empty()) return std::string(key);
  return root.path + "/" + std::string(key);
}

int repository_layout(const Location& root) {
  // Both probes in one batch (one round trip on network stores). The `repo` file counts by its
  // magic bytes: a Zarr store may hold an unrelated key named "repo".
  const auto got = root.store->get_many({{key_in(root, "repo"), ByteRange::range(0, kMagicSize)},
                                         {key_in(root, "refs/branch.main/ref.json"), ByteRange::range(0, 1)}});
  if (got[0] && starts_with_magic(got[0]->view())) return 2;
  if (got[1]) return 1;
  return 0;
}

std::unique_ptr<RepositoryState> read_repository_state(const Location& root) {
  const std::string repo_key = key_in(root, "repo");
  std::unique_ptr<RepositoryState> state;
  if (auto bytes = root.store->get(repo_key)) {  // a `repo` file: spec 2, whatever its bytes
    state = read_v2_state(parse_file(bytes->view(), FileType::RepoInfo, root.store->describe(repo_key), std::nullopt));
  } else if (repository_layout(root) == 1) {
    state = read_v1_state(root);
  }
  if (state) {
    state->files = std::make_unique<FileCache>(root);
    return state;
  }
  throw NotFound("no Icechunk repository at " + repo_url(root) + " (no 'repo' file, nor 'refs/branch.main/ref.json')");
}

std::string VersionRef::describe() const {
  if (!tag.empty()) return "tag '" + tag + "'";
  if (!snapshot.empty()) return "snapshot '" + snapshot + "'";
  return "branch '" + (branch.empty() ? std::string("main") : branch) + "'";
}

Repository::Repository(Location root, std::unique_ptr<RepositoryState> state)
    : root_(std::move(root)), state_(std::move(state)) {}

Repository::~Repository() = default;

RepositoryState& state_of(const Repository& repository) { return *repository.state_; }

std::shared_ptr<Repository> Repository::open(const Location& root) {
  return std::make_shared<Repository>(root, read_repository_state(root));
}

int Repository::spec_version() const { return state_->spec_version; }

RepositoryStatus Repository::status() const { return state_->status; }
std::vector<std::uint16_t> Repository::enabled_feature_flags() const { return state_->flags_on; }
std::vector<std::uint16_t> Repository::disabled_feature_flags() const { return state_->flags_off; }

bool Repository::refs_listed() const { return state_->refs_listed; }

std::vector<std::string> Repository::branches() const {
  std::vector<std::string> out;
  for (const auto& [name, id] : state_->branches) out.push_back(name);
  return out;
}

std::vector<std::string> Repository::tags() const {
  std::vector<std::string> out;
  for (const auto& [name, id] : state_->tags)
    if (!state_->deleted_tags.count(name)) out.push_back(name);
  return out;
}

std::string Repository::resolve(const VersionRef& version) const {
  const int given = !version.branch.empty() + !version.tag.empty() + !version.snapshot.empty();
  if (given > 1) throw UsageError("give at most one of branch, tag and snapshot (got " + std::to_string(given) + ")");
  const std::string what = version.describe();
  if (!version.snapshot.empty()) {
    if (!decode_id12(version.snapshot))
      throw ref_not_found(root_, what, "not a snapshot id: 20 characters of Crockford base32");
    const bool known = state_->has_snapshot_list ? state_->snapshots.count(version.snapshot) > 0
                                                  : root_.store->exists(key_in(root_, "snapshots/" + version.snapshot));
    if (!known) throw ref_not_found(root_, what, "no such snapshot");
    return version.snapshot;
  }
  const bool is_tag = !version.tag.empty();
  const std::string name = is_tag ? version.tag : (version.branch.empty() ? "main" : version.branch);
  if (is_tag && state_->deleted_tags.count(name)) throw ref_not_found(root_, what, "the tag was deleted");
  const auto& refs = is_tag ? state_->tags : state_->branches;
  if (auto it = refs.find(name); it != refs.end()) return it->second;
  if (state_->spec_version == 1 && name.find('/') == std::string::npos) {  // not listed (store cannot list)
    const std::string dir = (is_tag ? "tag." : "branch.") + name;
    if (is_tag && root_.store->exists(key_in(root_, "refs/" + dir + "/ref.json.deleted")))
      throw ref_not_found(root_, what, "the tag was deleted");
    if (auto id = read_v1_ref(root_, dir)) return *id;
  }
  throw ref_not_found(root_, what);
}

std::vector<SnapshotInfo> Repository::history(const std::string& snapshot_id) const {
  std::vector<SnapshotInfo> out;
  std::string id = snapshot_id;
  std::set<std::string> seen;
  while (!id.empty()) {
    if (!seen.insert(id).second) throw MetadataError("Icechunk repository " + repo_url(root_) + ": the history of snapshot " + snapshot_id + " has a cycle at " + id);
    if (state_->has_snapshot_list) {
      auto it = state_->snapshots.find(id);
      if (it == state_->snapshots.end())
        throw MetadataError("Icechunk repository " + repo_url(root_) + ": snapshot " + id + " is not in the repo file");
      SnapshotInfo info{id, it->second.written_at_us, it->second.message};
      if (auto a = state_->amended.find(id); a != state_->amended.end()) info.amends = a->second;
      info.detached = state_->detached.count(id) > 0;
      out.push_back(std::move(info));
      id = it->second.parent;
    } else {
      const auto snap = state_->files->snapshot(id);
      out.push_back({id, snap->written_at_us(), snap->message()});
      id = snap->parent_id();
    }
  }
  return out;
}

}  // namespace lazycube::icechunk
