// Parsed array metadata shared by the Zarr v2 and v3 front ends: everything the read path
// needs, with the codec chain already built.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lazycube/chunk_grid.hpp"
#include "lazycube/codec/codec.hpp"
#include "lazycube/dtype.hpp"
#include "lazycube/ndarray.hpp"
#include "lazycube/zarr/chunk_key_encoding.hpp"

namespace lazycube::zarr {

struct FillValue {
  bool specified = false;      // false for a v2 `null` (no _FillValue for xarray)
  Buffer bytes;                // fixed-size types: itemsize native-endian bytes (zeros if unset)
  std::string string;          // variable-length types
};

class ShardingCodec;
struct NarrowFloatFormat;
struct StructLayout;

// A parsed v3 `data_type`: the in-memory type, and what reading it takes beyond that.
struct V3DataType {
  DataType dtype;
  // bfloat16 / float8_*: stored in this format, widened to `dtype` (float32) on read.
  const NarrowFloatFormat* narrow = nullptr;
  // How a fixed-length bytes fill value is written: base64 (zarr-python 3's bytes types), or
  // the ASCII text itself (the registry's fixed-length-ascii).
  enum class Fill { Default, Base64, AsciiText };
  Fill fill = Fill::Default;
  // struct / structured: the fields (`dtype` is then the packed record as bytes).
  std::shared_ptr<const StructLayout> layout;
  // zarrs' `optional`: the elements are of this type or null; `dtype` is what they read as
  // (optional_type.hpp: null as NaN, bool and integers widened to float64).
  std::optional<DataType> optional_inner;
};

struct ArrayMetadata {
  int zarr_format = 2;
  Shape shape;
  // Regular grids: the chunk shape. Rectilinear ones: per dim the largest (decoded) chunk.
  Shape chunk_shape;
  // The chunk grid when it is not regular (v3 `rectilinear`); rank 0 otherwise.
  ChunkGrid grid;
  DataType dtype;
  FillValue fill;
  codec::CodecPipeline codecs;
  // Zarr v2: {"compressor", "filters"} as `.zarray` spells them (what xarray's zarr engine puts
  // in a variable's encoding, as numcodecs objects); null for v3.
  nlohmann::json v2_codecs;
  ChunkKeyEncoding key_encoding;
  std::vector<std::string> dimension_names;  // empty when absent
  std::string stored_dtype;  // v3 narrow floats: the data_type name of what `dtype` widens ("" otherwise)
  nlohmann::json attrs = nlohmann::json::object();

  // The chunk grid: `grid` when the metadata's is rectilinear, else regular over chunk_shape.
  ChunkGrid chunk_grid() const {
    return grid.rank() == shape.size() && grid.shape() == shape ? grid : ChunkGrid::regular(shape, chunk_shape);
  }
};

// Parses `.zarray` (+ `.zattrs` content, may be null). `where` names the array in messages.
ArrayMetadata parse_v2_array(const nlohmann::json& zarray, const nlohmann::json& zattrs,
                             const std::string& where);
// A v3 `chunk_grid` (`regular`, or the registry's `rectilinear` with its run-length and
// encoded_chunk_shapes forms) over `shape`: fills m.chunk_shape and, for a rectilinear grid,
// m.grid. MetadataError naming `where`, the field and the dim.
void parse_v3_chunk_grid(const nlohmann::json& chunk_grid, ArrayMetadata& m, const std::string& where);
// The v3 `chunk_grid` of `grid` (regular when it is).
nlohmann::json v3_chunk_grid_json(const ChunkGrid& grid);
// Parses an array `zarr.json`.
ArrayMetadata parse_v3_array(const nlohmann::json& zarr_json, const std::string& where);
// Refuses what a reader must understand and this one does not (Zarr v3 "extension points"): a
// top-level field of a zarr.json (`node_type` "array" or "group") other than the spec's, unless
// it is null or an object with "must_understand": false, and an entry of an `extensions` list
// without "must_understand": false. MetadataError naming the field or extension.
void check_v3_must_understand(const nlohmann::json& zarr_json, const std::string& node_type, const std::string& where);

// A v3 `data_type` (data_type_v3.cpp). MetadataError naming `where`, the type and the
// configuration field at fault.
V3DataType parse_v3_data_type(const nlohmann::json& data_type, const std::string& where);
// The v3 `data_type` of `dtype` (the inverse of the parser's).
nlohmann::json v3_data_type_json(const DataType& dtype, const std::string& where);

// Builds a v3 codec chain for chunks of `decoded` (used for sharding's inner/index chains).
// With `narrow`, the elements are stored in that format and `decoded` is float32: the innermost
// array->bytes codec (through sharding) reads the stored elements and widens them.
// With `optional_inner`, the array has zarrs' optional data type of that inner type (`decoded` is
// its read type): the array->bytes codec must be the optional codec.
codec::CodecPipeline parse_v3_codecs(const nlohmann::json& codecs, const codec::ChunkSpec& decoded,
                                     const std::string& where, const NarrowFloatFormat* narrow = nullptr,
                                     const DataType* optional_inner = nullptr);

// Fill values.
FillValue parse_v2_fill_value(const nlohmann::json& value, const DataType& dtype,
                              const std::string& where);
FillValue parse_v3_fill_value(const nlohmann::json& value, const DataType& dtype,
                              const std::string& where);
// The same, for the forms the data type's registry entry gives (narrow floats, ASCII text).
FillValue parse_v3_fill_value(const nlohmann::json& value, const V3DataType& data_type,
                              const std::string& where);
// The inverse of both: the fill value as `zarr_format`'s metadata writes it (v2: null when not
// specified). MetadataError naming `where` for a value the writer cannot express.
nlohmann::json fill_value_json(const FillValue& fill, const DataType& dtype, int zarr_format,
                               const std::string& where);

// Node paths and keys joined with '/', "" being the root: "a" + "b" → "a/b", "" + "b" → "b".
std::string join_node_path(const std::string& a, const std::string& b);

// JSON helpers that throw MetadataError naming `where` and the key.
const nlohmann::json& require(const nlohmann::json& obj, const char* key, const std::string& where);
Shape parse_shape(const nlohmann::json& value, const char* key, const std::string& where,
                  bool allow_zero);
// The string `key` of `obj`; `fallback` when `obj` is not an object or lacks the key;
// MetadataError naming `where` and the key when the value is not a string.
std::string string_member(const nlohmann::json& obj, const char* key, const std::string& where,
                          const std::string& fallback = "");

}  // namespace lazycube::zarr
