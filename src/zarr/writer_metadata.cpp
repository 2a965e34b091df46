// ArraySpec → the metadata documents zarr-python writes (.zarray/.zattrs, zarr.json), parsed
// back with parse_v2_array / parse_v3_array so that the writer encodes with exactly the chain
// a reader will decode with.
#include <nlohmann/json.hpp>

#include "lazycube/codec/codec.hpp"
#include "lazycube/error.hpp"
#include "writer_internal.hpp"

namespace lazycube::zarr::writer {

using nlohmann::json;

namespace {

std::string dim_label(const ArraySpec& spec, std::size_t d) {
  std::string s = "dim " + std::to_string(d);
  if (d < spec.dimension_names.size()) s += " ('" + spec.dimension_names[d] + "')";
  return s;
}

void check_shapes(const ArraySpec& spec, const std::string& where) {
  if (spec.zarr_format != 2 && spec.zarr_format != 3)
    throw MetadataError(where + ": zarr_format must be 2 or 3, got " + std::to_string(spec.zarr_format));
  const std::size_t nd = spec.shape.size();
  if (spec.chunk_shape.size() != nd)
    throw MetadataError(where + ": chunk shape " + json(spec.chunk_shape).dump() + " has " +
                        std::to_string(spec.chunk_shape.size()) + " dims, the shape " + json(spec.shape).dump() +
                        " has " + std::to_string(nd));
  for (std::size_t d = 0; d < nd; ++d)
    if (spec.chunk_shape[d] == 0) throw MetadataError(where + ": chunk shape is 0 along " + dim_label(spec, d));
  if (!spec.dimension_names.empty() && spec.dimension_names.size() != nd)
    throw MetadataError(where + ": " + std::to_string(spec.dimension_names.size()) + " dimension names for " +
                        std::to_string(nd) + " dims");
  if (!spec.shard_shape.empty()) {
    if (spec.zarr_format != 3) throw MetadataError(where + ": sharding needs Zarr v3 (zarr_format 3)");
    if (spec.shard_shape.size() != nd)
      throw MetadataError(where + ": shard shape " + json(spec.shard_shape).dump() + " has " +
                          std::to_string(spec.shard_shape.size()) + " dims, the shape has " + std::to_string(nd));
    for (std::size_t d = 0; d < nd; ++d)
      if (spec.shard_shape[d] == 0 || spec.shard_shape[d] % spec.chunk_shape[d] != 0)
        throw MetadataError(where + ": shard shape " + std::to_string(spec.shard_shape[d]) + " along " +
                            dim_label(spec, d) + " is not a whole multiple of the chunk shape " +
                            std::to_string(spec.chunk_shape[d]));
  }
  if (!spec.unit_edges.empty()) {
    if (spec.zarr_format != 3) throw MetadataError(where + ": a rectilinear chunk grid needs Zarr v3 (zarr_format 3)");
    if (spec.unit_edges.size() != nd)
      throw MetadataError(where + ": rectilinear edge lengths for " + std::to_string(spec.unit_edges.size()) +
                          " dims, the shape has " + std::to_string(nd));
    for (std::size_t d = 0; d < nd; ++d) {
      const auto& edges = spec.unit_edges[d];
      std::uint64_t sum = 0;
      for (std::size_t c = 0; c < edges.size(); ++c) {
        if (edges[c] == 0) throw MetadataError(where + ": rectilinear edge length 0 along " + dim_label(spec, d));
        if (!spec.shard_shape.empty() && edges[c] % spec.chunk_shape[d] != 0 && c + 1 < edges.size())
          throw MetadataError(where + ": shard edge length " + std::to_string(edges[c]) + " along " + dim_label(spec, d) +
                              " is not a whole multiple of the chunk shape " + std::to_string(spec.chunk_shape[d]));
        sum += edges[c];
      }
      if (!edges.empty() && sum < spec.shape[d])
        throw MetadataError(where + ": rectilinear edge lengths along " + dim_label(spec, d) + " sum to " +
                            std::to_string(sum) + ", less than the extent " + std::to_string(spec.shape[d]));
    }
  }
  if (!spec.attributes.is_object())
    throw MetadataError(where + ": attributes must be a JSON object, got " + spec.attributes.dump());
}

json bytes_codec_json() { return {{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}; }

// The array's `bytes` codec: little-endian; records (struct) as zarr-python 3 writes them, with
// no endian (their fields little-endian), as it does not count them as endian-aware types.
json array_bytes_codec_json(const DataType& t) {
  return t.kind == DTypeKind::Record ? json{{"name", "bytes"}} : bytes_codec_json();
}

// Variable-length types: the object codec (v3 array->bytes, v2 filter) that holds them.
const char* vlen_codec(const DataType& t) { return t.kind == DTypeKind::String ? "vlen-utf8" : "vlen-bytes"; }

// The v3 codec list: the spec text's array->array codecs (bitround), bytes (vlen-* for
// variable-length types), the compressors; inside sharding_indexed when sharded.
json v3_codecs(const ArraySpec& spec, const json& compressors) {
  json chain = json::array();
  for (const auto& c : compressors)
    if (codec::v3_codec_kind(c["name"].get<std::string>()) == codec::CodecKind::ArrayToArray) chain.push_back(c);
  chain.push_back(spec.dtype.is_variable_length()
                      ? json{{"name", vlen_codec(spec.dtype)}, {"configuration", json::object()}}
                      : array_bytes_codec_json(spec.dtype));
  for (const auto& c : compressors)
    if (codec::v3_codec_kind(c["name"].get<std::string>()) != codec::CodecKind::ArrayToArray) chain.push_back(c);
  if (spec.shard_shape.empty()) return chain;
  return json::array({{{"name", "sharding_indexed"},
                       {"configuration",
                        {{"chunk_shape", spec.chunk_shape},
                         {"codecs", chain},
                         {"index_codecs", json::array({bytes_codec_json(), {{"name", "crc32c"}}})},
                         {"index_location", "end"}}}}});
}

}  // namespace

}  // namespace lazycube::zarr::writer

namespace lazycube::zarr {

ChunkGrid unit_grid_of(const ArraySpec& spec) {
  const Shape& unit = spec.shard_shape.empty() ? spec.chunk_shape : spec.shard_shape;
  if (spec.unit_edges.empty()) return ChunkGrid::regular(spec.shape, unit);
  std::vector<ChunkGrid::Axis> axes(spec.shape.size());
  for (std::size_t d = 0; d < axes.size(); ++d) {
    axes[d].regular_length = unit[d];
    axes[d].edges = spec.unit_edges[d];
    // The last shard holds whole inner chunks: it reaches past the array's end, as a regular
    // grid's last chunk does (and as the rectilinear grid allows).
    if (!spec.shard_shape.empty() && !axes[d].edges.empty()) {
      auto& last = axes[d].edges.back();
      last = (last + spec.chunk_shape[d] - 1) / spec.chunk_shape[d] * spec.chunk_shape[d];
    }
  }
  return ChunkGrid::from_axes(spec.shape, std::move(axes));
}

}  // namespace lazycube::zarr

namespace lazycube::zarr::writer {

namespace {

// The regular grid of the spec's units, or the rectilinear one its unit_edges give.
json v3_grid(const ArraySpec& spec) {
  if (spec.unit_edges.empty()) {
    const Shape& unit = spec.shard_shape.empty() ? spec.chunk_shape : spec.shard_shape;
    return {{"name", "regular"}, {"configuration", {{"chunk_shape", unit}}}};
  }
  return v3_chunk_grid_json(unit_grid_of(spec));
}

Documents v3_documents(const ArraySpec& spec, const json& codecs, const json& fill) {
  json doc{{"zarr_format", 3},
           {"node_type", "array"},
           {"shape", spec.shape},
           {"data_type", v3_data_type_json(spec.dtype, "")},
           {"chunk_grid", v3_grid(spec)},
           {"chunk_key_encoding", {{"name", "default"}, {"configuration", {{"separator", "/"}}}}},
           {"fill_value", fill},
           {"codecs", codecs},
           {"attributes", spec.attributes},
           {"storage_transformers", json::array()}};
  if (!spec.dimension_names.empty()) doc["dimension_names"] = spec.dimension_names;
  return {{"zarr.json", doc}};
}

Documents v2_documents(const ArraySpec& spec, const json& compressor, const json& fill, const std::string& where) {
  json zarray{{"zarr_format", 2},
              {"shape", spec.shape},
              {"chunks", spec.chunk_shape},
              {"dtype", spec.dtype.numpy_str()},
              {"compressor", compressor},
              {"fill_value", fill},
              {"filters", spec.dtype.is_variable_length() ? json::array({{{"id", vlen_codec(spec.dtype)}}}) : json()},
              {"order", "C"},
              {"dimension_separator", "."}};
  json attrs = spec.attributes;
  if (!spec.dimension_names.empty()) {
    if (attrs.contains("_ARRAY_DIMENSIONS") && attrs["_ARRAY_DIMENSIONS"] != json(spec.dimension_names))
      throw MetadataError(where + ": attribute _ARRAY_DIMENSIONS " + attrs["_ARRAY_DIMENSIONS"].dump() +
                          " contradicts the dimension names " + json(spec.dimension_names).dump());
    attrs["_ARRAY_DIMENSIONS"] = spec.dimension_names;
  }
  // .zattrs before .zarray: the .zarray makes the array visible, with its attributes in place.
  Documents docs;
  if (!attrs.empty()) docs.emplace_back(".zattrs", attrs);
  docs.emplace_back(".zarray", zarray);
  return docs;
}

}  // namespace

std::string json_text(const json& doc, int zarr_format) {
  return zarr_format == 2 ? doc.dump(4, ' ', /*ensure_ascii=*/true) : doc.dump(2);
}

BuiltArray build_array(const ArraySpec& spec, const std::string& where) {
  check_shapes(spec, where);
  if (spec.dtype.kind == DTypeKind::Record && spec.zarr_format != 3)
    throw MetadataError(where + ": the writer writes records (" + spec.dtype.name() + ") in Zarr v3 only, as `struct`");
  json compressors;
  try {
    compressors = codec::parse_codec_spec(spec.codecs, spec.zarr_format, spec.dtype);
  } catch (const CodecError& e) {
    throw CodecError(where + ": " + e.what());
  }
  // The fill value through the reader's parser (all the v3 spellings), then written back in
  // the format's own form.
  // Through text first, so that a value built in C++ (json(0) is a signed integer) reads as it
  // would from a file (0 is unsigned there).
  FillValue fill = parse_v3_fill_value(json::parse(spec.fill_value.dump()), spec.dtype, where);
  if (spec.zarr_format == 3) fill.specified = true;  // v3 always states one (the zero default)
  const json fill_json = fill_value_json(fill, spec.dtype, spec.zarr_format, where);

  BuiltArray out;
  if (spec.zarr_format == 3) {
    out.documents = v3_documents(spec, v3_codecs(spec, compressors), fill_json);
    out.meta = parse_v3_array(out.documents[0].second, where);
  } else {
    out.documents = v2_documents(spec, compressors, fill_json, where);
    const json& zarray = out.documents.back().second;
    const json zattrs = out.documents.size() > 1 ? out.documents[0].second : json();
    out.meta = parse_v2_array(zarray, zattrs, where);
  }
  return out;
}

Documents group_documents(int zarr_format, const json& attributes) {
  if (zarr_format == 3)
    return {{"zarr.json", {{"zarr_format", 3}, {"node_type", "group"}, {"attributes", attributes}}}};
  Documents docs;
  if (!attributes.empty()) docs.emplace_back(".zattrs", attributes);
  docs.emplace_back(".zgroup", json{{"zarr_format", 2}});
  return docs;
}

}  // namespace lazycube::zarr::writer
