// The writer: nodes declared (groups, arrays), then commit() stores the metadata last — arrays,
// groups deepest first, the root group, consolidated metadata — so that a reader never finds
// an array before its data is in.
#include "lazycube/zarr/writer.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>

#include "lazycube/error.hpp"
#include "writer_array_impl.hpp"

namespace lazycube::zarr {

using nlohmann::json;

namespace {

std::size_t depth(const std::string& path) {
  return path.empty() ? 0 : 1 + static_cast<std::size_t>(std::count(path.begin(), path.end(), '/'));
}

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

json inline_block(json members) {
  return {{"kind", "inline"}, {"must_understand", false}, {"metadata", std::move(members)}};
}

void check_node_path(const std::string& path) {
  if (path.starts_with('/') || path.ends_with('/') || path.find("//") != std::string::npos)
    throw UsageError("zarr writer: node path '" + path + "' must be like \"a/b\" (no leading, trailing or double '/')");
  for (std::size_t start = 0; start <= path.size() && !path.empty();) {
    const auto end = std::min(path.find('/', start), path.size());
    const std::string part = path.substr(start, end - start);
    if (part == "." || part == ".." || part.starts_with(".z") || part == "zarr.json")
      throw UsageError("zarr writer: node path '" + path + "' has the reserved name '" + part + "'");
    start = end + 1;
  }
}

}  // namespace

struct Writer::Impl {
  std::shared_ptr<writer::Destination> dest;
  std::mutex mu;
  std::optional<int> zarr_format;
  std::map<std::string, json> groups;  // declared groups → attributes
  std::map<std::string, std::shared_ptr<ArrayWriter>> arrays;

  std::string where(const std::string& path) const {
    return dest->store().describe(dest->key(path, ""));
  }
  void use_format(int format, const std::string& path) {
    if (zarr_format && *zarr_format != format)
      throw UsageError("zarr writer: " + where(path) + " is Zarr v" + std::to_string(format) +
                       " but the other nodes are v" + std::to_string(*zarr_format));
    zarr_format = format;
  }
  // A new node at `path`: not declared yet, not inside an array; an array holds no nodes.
  void check_new_node(const std::string& path, bool is_array) const {
    check_node_path(path);
    if (groups.count(path) || arrays.count(path))
      throw UsageError("zarr writer: node " + where(path) + " is already declared");
    for (std::string p = path; !p.empty();) {
      p = parent_of(p);
      if (arrays.count(p)) throw UsageError("zarr writer: " + where(path) + " would lie inside the array " + where(p));
    }
    if (!is_array) return;
    auto below = [&](const std::string& other) { return path.empty() || other.starts_with(path + "/"); };
    for (const auto& [other, a] : arrays)
      if (below(other)) throw UsageError("zarr writer: the array " + where(path) + " would hold the array " + where(other));
    for (const auto& [other, attrs] : groups)
      if (below(other)) throw UsageError("zarr writer: the array " + where(path) + " would hold the group " + where(other));
  }
};

Writer::Writer(Location location, WriterOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->dest = std::make_shared<writer::Destination>(std::move(location), options);
  impl_->dest->check_empty();
}

Writer Writer::open(std::string_view url, const StoreOptions& storage_options, WriterOptions options) {
  return Writer(open_writable_location(url, storage_options), options);
}

Writer::~Writer() = default;
Writer::Writer(Writer&&) noexcept = default;
Writer& Writer::operator=(Writer&&) noexcept = default;

const Location& Writer::location() const { return impl_->dest->location(); }
const WriterOptions& Writer::options() const { return impl_->dest->options(); }

void Writer::create_group(const std::string& path, const json& attributes, std::optional<int> zarr_format) {
  std::lock_guard lock(impl_->mu);
  impl_->check_new_node(path, false);
  if (!attributes.is_object())
    throw MetadataError(impl_->where(path) + ": group attributes must be a JSON object, got " + attributes.dump());
  if (zarr_format) {
    if (*zarr_format != 2 && *zarr_format != 3)
      throw MetadataError(impl_->where(path) + ": zarr_format must be 2 or 3, got " + std::to_string(*zarr_format));
    impl_->use_format(*zarr_format, path);
  }
  impl_->groups[path] = attributes;
}

std::shared_ptr<ArrayWriter> Writer::create_array(const std::string& path, const ArraySpec& spec) {
  std::lock_guard lock(impl_->mu);
  impl_->check_new_node(path, true);
  auto a = std::make_unique<ArrayWriter::Impl>();
  a->dest = impl_->dest;
  a->path = path;
  a->where = impl_->where(path);
  a->spec = spec;
  a->built = writer::build_array(spec, a->where);
  impl_->use_format(spec.zarr_format, path);
  const ArrayMetadata& m = a->built.meta;
  a->units = m.chunk_grid();
  for (std::size_t d = 0; d < m.shape.size(); ++d) a->grid.push_back(a->units.count(d));
  a->sharding = dynamic_cast<const ShardingCodec*>(m.codecs.array_to_bytes.get());
  auto writer = std::shared_ptr<ArrayWriter>(new ArrayWriter(std::move(a)));
  impl_->arrays[path] = writer;
  return writer;
}

void Writer::prepare() { impl_->dest->prepare(); }

void Writer::commit() {
  std::lock_guard lock(impl_->mu);
  writer::Destination& dest = *impl_->dest;
  if (dest.failed())
    throw StoreError("not writing the metadata of " + impl_->where("") + ": an earlier write failed (" +
                     dest.first_failure() + ")");
  dest.prepare();
  dest.remove_partial_puts();
  const int format = impl_->zarr_format.value_or(3);

  // Every node's documents, keyed by node path; groups implied by the nodes below them.
  std::map<std::string, json> groups = impl_->groups;
  const bool root_is_array = impl_->arrays.count("") != 0;
  if (!root_is_array) {
    auto imply = [&](std::string p) {
      while (!p.empty()) {
        p = parent_of(p);
        groups.emplace(p, json::object());
      }
    };
    for (const auto& [p, a] : impl_->arrays) imply(p);
    for (const auto& [p, attrs] : impl_->groups) imply(p);
    groups.emplace("", json::object());
  }

  std::map<std::string, writer::Documents> docs;  // node path → documents, for consolidation
  for (const auto& [path, a] : impl_->arrays) {
    docs[path] = a->metadata_documents();
    for (const auto& [name, doc] : docs[path]) dest.put_json(dest.key(path, name), doc, format);
  }
  std::vector<std::string> order;
  for (const auto& [p, attrs] : groups) order.push_back(p);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return depth(a) > depth(b); });
  for (const auto& path : order) {
    writer::Documents gd = writer::group_documents(format, groups[path]);
    const bool consolidate_here = path.empty() && dest.options().consolidated;
    if (consolidate_here && format == 3) {
      // v3: one zarr.json per node; sub-groups listed with an empty consolidated block, as
      // zarr-python 3 writes them.
      json members = json::object();
      for (const auto& [p, d] : docs) {
        members[p] = d.front().second;
        if (members[p]["node_type"] == "group") members[p]["consolidated_metadata"] = inline_block(json::object());
      }
      gd.front().second["consolidated_metadata"] = inline_block(members);
    }
    for (const auto& [name, doc] : gd) dest.put_json(dest.key(path, name), doc, format);
    docs[path] = std::move(gd);
    if (consolidate_here && format == 2) {
      json md = json::object();
      for (const auto& [p, d] : docs)
        for (const auto& [name, doc] : d) md[join_node_path(p, name)] = doc;
      dest.put_json(dest.key("", ".zmetadata"), {{"metadata", md}, {"zarr_consolidated_format", 1}}, format);
    }
  }
}

}  // namespace lazycube::zarr
