// lazycube info URL [--json]: a summary like xarray's Dataset repr, or JSON.
#include <algorithm>
#include <iostream>
#include <optional>
#include <sstream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "lazycube/format/registry.hpp"
#include "lazycube/refs/references.hpp"
#include "lazycube/dataset/dataset.hpp"

namespace lazycube::cli {

// "[2, 3]": the shape as `lazycube info` and `lazycube bench` print it.
std::string shape_text(const Shape& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

namespace {

using ordered_json = nlohmann::ordered_json;

// A variable's codecs as one list: the v3 chain, or a Zarr v2 array's filters then compressor
// (numcodecs configurations, as `.zarray` spells them).
ordered_json codec_list(const nlohmann::json& codecs) {
  if (!codecs.is_object()) return ordered_json::parse(codecs.dump());
  ordered_json out = ordered_json::array();
  if (auto f = codecs.find("filters"); f != codecs.end() && f->is_array())
    for (const auto& c : *f) out.push_back(ordered_json::parse(c.dump()));
  if (auto c = codecs.find("compressor"); c != codecs.end() && !c->is_null()) out.push_back(ordered_json::parse(c->dump()));
  return out;
}

std::string join_dims(const std::vector<std::string>& dims) {
  std::string out = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + dims[i];
  return out + ")";
}

std::string attr_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// A record's fields: name, byte offset, numpy dtype string (nested records: their own fields).
ordered_json fields_json(const DataType& t) {
  ordered_json out = ordered_json::array();
  for (const RecordField& f : *t.fields) {
    ordered_json j{{"name", f.name}, {"offset", f.offset}, {"dtype", f.dtype.numpy_str()}};
    if (f.dtype.kind == DTypeKind::Record) j["fields"] = fields_json(f.dtype);
    out.push_back(std::move(j));
  }
  return out;
}

ordered_json to_json(const Dataset& ds) {
  ordered_json out;
  out["dims"] = ordered_json::object();
  for (const auto& [dim, size] : ds.dims()) out["dims"][dim] = size;
  out["variables"] = ordered_json::object();
  for (const auto& name : ds.variable_names()) {
    const Variable& v = ds.variable(name);
    ordered_json j;
    j["dims"] = v.dims();
    j["shape"] = v.shape();
    j["dtype"] = v.dtype().numpy_str();
    if (const std::string stored = v.array()->stored_dtype(); !stored.empty()) j["stored_dtype"] = stored;
    if (v.dtype().kind == DTypeKind::Record) j["fields"] = fields_json(v.dtype());
    // A rectilinear grid: per rectilinear dim its chunk lengths (as the encoding gives them).
    if (v.array()->chunk_grid().is_regular()) j["chunks"] = v.chunks();
    else j["chunks"] = ordered_json::parse(v.encoding()["chunks"].dump());
    j["codecs"] = codec_list(v.array()->codecs_json());
    j["attrs"] = ordered_json::parse(v.attrs().dump());
    out["variables"][name] = std::move(j);
  }
  // Arrays lazycube cannot read: name -> the reason (the other variables read as usual).
  if (!ds.unreadable().empty()) {
    out["unreadable"] = ordered_json::object();
    for (const auto& u : ds.unreadable()) out["unreadable"][u.name] = u.reason;
  }
  out["attrs"] = ordered_json::parse(ds.attrs().dump());
  return out;
}

void print_text(const Dataset& ds, std::ostream& out) {
  std::size_t width = 8;
  for (const auto& n : ds.variable_names()) width = std::max(width, n.size() + 2);
  auto pad = [&](const std::string& s) { return s + std::string(width - std::min(width, s.size()), ' '); };
  out << "<lazycube.Dataset>\nDimensions:  (";
  for (std::size_t i = 0; i < ds.dims().size(); ++i)
    out << (i ? ", " : "") << ds.dims()[i].first << ": " << ds.dims()[i].second;
  out << ")\n";
  auto line = [&](const std::string& name, bool index) {
    const Variable& v = ds.variable(name);
    const std::string stored = v.array()->stored_dtype();  // what a widened dtype reads from
    out << (index ? "  * " : "    ") << pad(name) << join_dims(v.dims()) << " " << v.dtype().name()
        << (stored.empty() ? "" : " (stored " + stored + ")") << " " << shape_text(v.shape()) << "\n";
  };
  out << "Coordinates:\n";
  for (const auto& name : ds.coord_names()) {
    const Variable& v = ds.variable(name);
    line(name, v.ndim() == 1 && v.dims()[0] == name);
  }
  out << "Data variables:\n";
  for (const auto& name : ds.data_var_names()) line(name, false);
  if (!ds.unreadable().empty()) {
    out << "Unreadable arrays:\n";
    for (const auto& u : ds.unreadable()) out << "    " << pad(u.name) << u.reason << "\n";
  }
  if (!ds.attrs().empty()) {
    out << "Attributes:\n";
    for (const auto& [key, value] : ds.attrs().items())
      out << "    " << pad(key + ":") << attr_text(value) << "\n";
  }
}

ordered_json stats_json(const StoreStats& s) {
  ordered_json j;
  j["requests"] = s.requests;
  j["bytes"] = s.bytes;
  j["retries"] = s.retries;
  j["retries_by_cause"] = ordered_json::object();
  for (const auto& [cause, n] : s.retries_by_cause) j["retries_by_cause"][cause] = n;
  j["errors"] = s.errors;
  j["latency_ms"] = {{"p50", s.latency_ms_p50}, {"p90", s.latency_ms_p90}, {"p99", s.latency_ms_p99},
                     {"max", s.latency_ms_max}};
  j["cache"] = {{"hits", s.cache_hits}, {"misses", s.cache_misses}, {"bytes_saved", s.cache_bytes_saved}};
  return j;
}

void print_stats(const StoreStats& s, std::ostream& out) {
  out << "Store stats:\n    requests: " << s.requests << "\n    bytes: " << s.bytes
      << "\n    retries: " << s.retries;
  if (!s.retries_by_cause.empty()) {
    out << " (";
    bool first = true;
    for (const auto& [cause, n] : s.retries_by_cause) {
      out << (first ? "" : ", ") << cause << ": " << n;
      first = false;
    }
    out << ")";
  }
  out << "\n    errors: " << s.errors << "\n    latency ms: p50 " << s.latency_ms_p50 << ", p90 "
      << s.latency_ms_p90 << ", p99 " << s.latency_ms_p99 << ", max " << s.latency_ms_max << "\n";
  if (s.cache_hits || s.cache_misses)
    out << "    cache: " << s.cache_hits << " hits, " << s.cache_misses << " misses, " << s.cache_bytes_saved
        << " bytes saved\n";
}

// The Icechunk repository at `location`, if it is one: {"spec_version", "branches", "tags",
// "snapshot": {"id", "written_at", "message", "amends", "detached"}} of the version `options`
// choose, "status": {"availability", "since", "reason"}, "feature_flags": {"enabled", "disabled"}.
std::optional<ordered_json> repository_json(const Location& location, const OpenOptions& options) {
  if (!icechunk::is_repository(location)) return std::nullopt;
  const auto repository = icechunk::Repository::open(location);
  ordered_json j;
  j["spec_version"] = repository->spec_version();
  // null: not listable here (spec 1 over HTTP); refs are still found by name
  j["branches"] = repository->refs_listed() ? ordered_json(repository->branches()) : ordered_json();
  j["tags"] = repository->refs_listed() ? ordered_json(repository->tags()) : ordered_json();
  j["snapshot"] = snapshot_json(repository->history(repository->resolve(icechunk::IcechunkOptions::from_document(options.format_options).version)).front());
  const icechunk::RepositoryStatus status = repository->status();
  j["status"] = {{"availability", status.availability},
                 {"since", status.since_us ? ordered_json(iso_utc(status.since_us)) : ordered_json()},
                 {"reason", status.reason.empty() ? ordered_json() : ordered_json(status.reason)}};
  j["feature_flags"] = {{"enabled", repository->enabled_feature_flags()}, {"disabled", repository->disabled_feature_flags()}};
  return j;
}

void print_repository(const ordered_json& j, std::ostream& out) {
  auto names = [](const ordered_json& list) {
    if (list.is_null()) return std::string("(this store cannot list them)");
    std::string text;
    for (const auto& n : list) text += (text.empty() ? "" : ", ") + n.get<std::string>();
    return text;
  };
  const auto& s = j["snapshot"];
  out << "Icechunk repository (spec version " << j["spec_version"].get<int>() << "):\n"
      << "    snapshot: " << s["id"].get<std::string>() << "  " << s["written_at"].get<std::string>() << "  "
      << s["message"].get<std::string>() << "\n"
      << "    branches: " << names(j["branches"]) << "\n"
      << "    tags:     " << names(j["tags"]) << "\n"
      << "    status:   " << j["status"]["availability"].get<std::string>()
      << (j["status"]["reason"].is_string() ? " (" + j["status"]["reason"].get<std::string>() + ")" : std::string()) << "\n";
}

}  // namespace

int run_info(const InfoArgs& args) {
  const OpenOptions options = open_options_of(args.open);
  // A format recognised from the URL: GDAL's files (its own I/O: no store to report on) or
  // kerchunk reference sets (their store reads the targets).
  const format::Format* by_url = format::url_format(args.url, options.engine);
  if (args.stats && by_url && !by_url->has_nodes)
    throw UsageProblem("--stats is available for formats read through lazycube's stores, not with the " +
                       by_url->engine + " engine");
  std::optional<Location> location;
  if (args.stats)
    location = by_url ? refs::open_references(args.url, options.storage_options)
                      : open_location(args.url, options.storage_options);
  const Dataset ds = location ? open(*location, options) : open(args.url, options);
  // The dataset opened: a repository's facts are read from its root (again: info only).
  std::optional<ordered_json> repository;
  if (!by_url) {
    if (!location) location = open_location(args.url, options.storage_options);
    repository = repository_json(*location, options);
  }
  if (args.json) {
    ordered_json j = to_json(ds);
    if (repository) j["icechunk"] = *repository;
    if (args.stats) j["stats"] = stats_json(location->store->stats());
    add_warnings(j);
    std::cout << j.dump(2) << "\n";
  } else {
    print_text(ds, std::cout);
    if (repository) print_repository(*repository, std::cout);
    if (args.stats) print_stats(location->store->stats(), std::cout);
  }
  return 0;
}

}  // namespace lazycube::cli
