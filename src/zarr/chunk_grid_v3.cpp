// Zarr v3 `chunk_grid`: `regular`, and the zarr-extensions registry's `rectilinear` (explicit
// edge lengths, run-length `[length, count]` pairs, a bare integer meaning a regular axis, and the
// optional `encoded_chunk_shapes`), read into a ChunkGrid and written back.
#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "array_metadata.hpp"
#include "lazycube/error.hpp"

namespace lazycube::zarr {

using nlohmann::json;

namespace {

// More chunks than this along one dim is a metadata error, not an allocation: a run-length pair
// can name billions in a few bytes.
constexpr std::uint64_t kMaxChunksPerDim = std::uint64_t{1} << 24;

std::uint64_t positive(const json& v, const std::string& field) {
  // (A document built in C++ holds signed integers, one parsed from text unsigned ones.)
  if (!v.is_number_integer() || (v.is_number_unsigned() ? v.get<std::uint64_t>() == 0 : v.get<std::int64_t>() <= 0))
    throw MetadataError(field + ": an edge length must be a positive integer, got " + v.dump());
  return v.get<std::uint64_t>();
}

// One axis of chunk_shapes or encoded_chunk_shapes: a bare integer (returned in `regular`, with
// `edges` empty) or the expanded list. `field` names it in messages.
void parse_axis(const json& v, const std::string& field, std::uint64_t& regular, std::vector<std::uint64_t>& edges) {
  edges.clear();
  regular = 0;
  if (v.is_number()) {
    regular = positive(v, field);
    return;
  }
  if (!v.is_array() || v.empty())
    throw MetadataError(field + " must be a positive integer or a non-empty list of edge lengths and [length, count] "
                                "pairs, got " + v.dump());
  for (const auto& e : v) {
    std::uint64_t length = 0, count = 1;
    if (e.is_array()) {
      if (e.size() != 2)
        throw MetadataError(field + ": a run-length entry must be [length, count], got " + e.dump());
      length = positive(e[0], field);
      if (!e[1].is_number_integer() || (e[1].is_number_unsigned() ? e[1].get<std::uint64_t>() == 0 : e[1].get<std::int64_t>() <= 0))
        throw MetadataError(field + ": the count of run-length entry " + e.dump() + " must be a positive integer");
      count = e[1].get<std::uint64_t>();
    } else {
      length = positive(e, field);
    }
    if (count > kMaxChunksPerDim - edges.size())
      throw MetadataError(field + " expands to more than " + std::to_string(kMaxChunksPerDim) + " chunks");
    edges.insert(edges.end(), count, length);
  }
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0); }

// The [length, count] run-length form of a list, single lengths left bare.
json run_length(const std::vector<std::uint64_t>& v) {
  json out = json::array();
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j < v.size() && v[j] == v[i]) ++j;
    if (j - i == 1) out.push_back(v[i]);
    else out.push_back(json::array({v[i], j - i}));
    i = j;
  }
  return out;
}

}  // namespace

void parse_v3_chunk_grid(const json& grid, ArrayMetadata& m, const std::string& where) {
  if (!grid.is_object()) throw MetadataError(where + ": chunk_grid must be an object, got " + grid.dump());
  const std::string name = string_member(grid, "name", where + ": chunk_grid");
  const json& conf = require(grid, "configuration", where + ": chunk_grid");
  const std::size_t rank = m.shape.size();
  if (name == "regular") {
    m.chunk_shape = parse_shape(require(conf, "chunk_shape", where), "chunk_shape", where, false);
    if (m.chunk_shape.size() != rank)
      throw MetadataError(where + ": chunk_shape has " + std::to_string(m.chunk_shape.size()) +
                          " dims but shape has " + std::to_string(rank));
    return;
  }
  if (name != "rectilinear")
    throw MetadataError(where + ": unsupported chunk_grid '" + name + "' (lazycube reads 'regular' and 'rectilinear')");
  const std::string ctx = where + ": chunk_grid 'rectilinear'";
  const std::string kind = string_member(conf, "kind", ctx);
  if (kind != "inline")
    throw MetadataError(ctx + ": kind must be \"inline\", got " + (conf.contains("kind") ? conf["kind"].dump() : "none"));
  const json& shapes = require(conf, "chunk_shapes", ctx);
  if (!shapes.is_array() || shapes.size() != rank)
    throw MetadataError(ctx + ": chunk_shapes must list one entry per dim (" + std::to_string(rank) + "), got " +
                        shapes.dump());
  const json* encoded = nullptr;
  if (auto it = conf.find("encoded_chunk_shapes"); it != conf.end() && !it->is_null()) {
    if (!it->is_array() || it->size() != rank)
      throw MetadataError(ctx + ": encoded_chunk_shapes must list one entry per dim (" + std::to_string(rank) +
                          "), got " + it->dump());
    encoded = &*it;
  }
  std::vector<ChunkGrid::Axis> axes(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    const std::string field = ctx + ": chunk_shapes[" + std::to_string(d) + "]";
    const std::uint64_t extent = m.shape[d];
    ChunkGrid::Axis& axis = axes[d];
    std::uint64_t regular = 0;
    parse_axis(shapes[d], field, regular, axis.edges);
    if (axis.edges.empty()) {
      axis.regular_length = regular;
    } else {
      std::uint64_t sum = 0;
      for (const auto e : axis.edges) sum += e;
      if (sum < extent)
        throw MetadataError(field + ": the edge lengths sum to " + std::to_string(sum) + ", less than the array's " +
                            std::to_string(extent) + " along dim " + std::to_string(d));
    }
    if (encoded) {
      const std::string efield = ctx + ": encoded_chunk_shapes[" + std::to_string(d) + "]";
      std::uint64_t eregular = 0;
      parse_axis((*encoded)[d], efield, eregular, axis.decoded);
      if (axis.edges.empty() && (!axis.decoded.empty() || eregular != regular)) {
        // A regular axis whose chunks decode to other lengths: listed out.
        if (ceil_div(extent, regular) > kMaxChunksPerDim)
          throw MetadataError(field + " expands to more than " + std::to_string(kMaxChunksPerDim) + " chunks");
        axis.edges.assign(ceil_div(extent, regular), regular);
      }
      if (!axis.edges.empty() && axis.decoded.empty()) axis.decoded.assign(axis.edges.size(), eregular);
      if (axis.decoded.size() != axis.edges.size())
        throw MetadataError(efield + " expands to " + std::to_string(axis.decoded.size()) + " lengths, chunk_shapes[" +
                            std::to_string(d) + "] to " + std::to_string(axis.edges.size()));
      for (std::size_t c = 0; c < axis.edges.size(); ++c)
        if (axis.decoded[c] < axis.edges[c])
          throw MetadataError(efield + ": chunk " + std::to_string(c) + " decodes to " + std::to_string(axis.decoded[c]) +
                              " elements, fewer than its edge length " + std::to_string(axis.edges[c]));
    }
    // A list of one repeated length (and decoding to it) is a regular axis: the fast path.
    if (!axis.edges.empty() && std::all_of(axis.edges.begin(), axis.edges.end(), [&](auto e) { return e == axis.edges[0]; }) &&
        (axis.decoded.empty() || axis.decoded == axis.edges)) {
      axis.regular_length = axis.edges[0];
      axis.edges.clear();
      axis.decoded.clear();
    }
  }
  try {
    const ChunkGrid parsed = ChunkGrid::from_axes(m.shape, std::move(axes));
    m.chunk_shape = parsed.regular_shape();
    if (!parsed.is_regular()) m.grid = parsed;
  } catch (const UsageError& e) {
    throw MetadataError(ctx + ": " + e.what());
  }
}

json v3_chunk_grid_json(const ChunkGrid& grid) {
  if (grid.is_regular())
    return {{"name", "regular"}, {"configuration", {{"chunk_shape", grid.regular_shape()}}}};
  json shapes = json::array(), encoded = json::array();
  bool any_encoded = false;
  for (std::size_t d = 0; d < grid.rank(); ++d) {
    if (grid.is_regular(d) || grid.count(d) == 0) {
      shapes.push_back(grid.regular_shape()[d]);
      encoded.push_back(grid.regular_shape()[d]);
      continue;
    }
    std::vector<std::uint64_t> edges, decoded;
    for (std::uint64_t c = 0; c < grid.count(d); ++c) {
      edges.push_back(grid.length(d, c));
      decoded.push_back(grid.decoded_length(d, c));
    }
    any_encoded = any_encoded || decoded != edges;
    shapes.push_back(run_length(edges));
    encoded.push_back(run_length(decoded));
  }
  json conf = {{"kind", "inline"}, {"chunk_shapes", shapes}};
  if (any_encoded) conf["encoded_chunk_shapes"] = encoded;
  return {{"name", "rectilinear"}, {"configuration", conf}};
}

}  // namespace lazycube::zarr
