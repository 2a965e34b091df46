// The v3 `struct` data type (zarr-python 3.3, zarr-extensions data-types/struct) and its legacy
// alias `structured` (fields as [name, data_type] pairs): packed records of named fixed-size
// fields, in declaration order, no padding.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "array_metadata.hpp"

namespace lazycube::zarr {

struct StructField {
  std::string name;
  V3DataType type;  // a nested struct has type.layout set
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

struct StructLayout {
  std::vector<StructField> fields;
  std::uint64_t itemsize = 0;
  // "a: float32, b: struct{...}" for messages.
  std::string describe() const;
};

// The fields of a struct's `configuration`. MetadataError naming `where` and the field at fault:
// no fields, a field without a name or data_type, a duplicate name (two fields over the same
// bytes), a variable-length or widened (bfloat16/float8) field type, a record past 2^31 bytes.
std::shared_ptr<const StructLayout> parse_v3_struct(const nlohmann::json& configuration, bool legacy,
                                                    const std::string& where);

// The in-memory record type of `layout`: its fields at their packed offsets (nested structs as
// nested records).
DataType record_dtype(const StructLayout& layout);

// The fill value: an object with one entry per field (each a fill value of the field's type),
// or, for legacy `structured` arrays, base64 of the packed record. itemsize bytes; MetadataError
// naming the field whose entry is missing, unknown or invalid.
Buffer parse_v3_struct_fill(const StructLayout& layout, const nlohmann::json& fill, const std::string& where);

}  // namespace lazycube::zarr
