// lazycube info URL [--json]: a summary like xarray's Dataset repr, or JSON.
#include <algorithm>
#include <iostream>
#include <sstream>

#include "commands.hpp"
#include "lazycube/dataset/dataset.hpp"

namespace lazycube::cli {

namespace {

using ordered_json = nlohmann::ordered_json;

std::string join_dims(const std::vector<std::string>& dims) {
  std::string out = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + dims[i];
  return out + ")";
}

std::string shape_text(const Shape& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::string attr_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
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
    j["chunks"] = v.chunks();
    j["codecs"] = ordered_json::parse(v.array()->codecs_json().dump());
    j["attrs"] = ordered_json::parse(v.attrs().dump());
    out["variables"][name] = std::move(j);
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
    out << (index ? "  * " : "    ") << pad(name) << join_dims(v.dims()) << " " << v.dtype().name()
        << " " << shape_text(v.shape()) << "\n";
  };
  out << "Coordinates:\n";
  for (const auto& name : ds.coord_names()) {
    const Variable& v = ds.variable(name);
    line(name, v.ndim() == 1 && v.dims()[0] == name);
  }
  out << "Data variables:\n";
  for (const auto& name : ds.data_var_names()) line(name, false);
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
}

}  // namespace

int run_info(const InfoArgs& args) {
  const OpenOptions options = open_options_of(args.open);
  if (!args.stats) {
    const Dataset ds = open(args.url, options);
    if (args.json) {
      ordered_json j = to_json(ds);
      add_warnings(j);
      std::cout << j.dump(2) << "\n";
    } else
      print_text(ds, std::cout);
    return 0;
  }
  // --stats needs our own store (Zarr): GDAL does its own I/O.
  if (options.engine == "gdal") throw UsageProblem("--stats is available for Zarr stores only, not with --engine gdal");
  const Location location = open_location(args.url, options.storage_options);
  const Dataset ds = open(location, options);
  if (args.json) {
    ordered_json j = to_json(ds);
    if (args.stats) j["stats"] = stats_json(location.store->stats());
    add_warnings(j);
    std::cout << j.dump(2) << "\n";
  } else {
    print_text(ds, std::cout);
    if (args.stats) print_stats(location.store->stats(), std::cout);
  }
  return 0;
}

}  // namespace lazycube::cli
