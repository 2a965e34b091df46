// Element data types. In memory every fixed-size type is native (little-endian) byte order;
// the stored byte order is a property of the codec chain, not of the type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lazycube {

enum class DTypeKind {
  Bool,
  Int,
  UInt,
  Float,
  Complex,
  DateTime,   // numpy datetime64: int64 count of `scale` x `unit` since 1970-01-01
  TimeDelta,  // numpy timedelta64: int64 count of `scale` x `unit`
  Bytes,      // fixed-length byte string (numpy 'S<n>'), NUL padded
  Unicode,    // fixed-length UTF-32 (numpy 'U<n>'), itemsize = 4 * n
  String,     // variable-length UTF-8 string (v2 '|O' + vlen-utf8, v3 'string')
  VlenBytes,  // variable-length bytes (v3 'bytes' / 'variable_length_bytes', v2 vlen-bytes)
  Record,     // fixed-size record of named fields (numpy structured dtype, Zarr v3 `struct`)
};

struct RecordField;

struct DataType {
  DTypeKind kind = DTypeKind::Float;
  std::size_t itemsize = 8;  // bytes per element in memory; 0 for variable-length kinds
  std::string unit;          // datetime/timedelta unit: Y M W D h m s ms us ns ps fs as, or "generic"
  std::int64_t scale = 1;    // datetime/timedelta: count of units per step (e.g. 10 for '10ms')
  // Record: the fields in declaration order, each at its byte offset within the itemsize bytes
  // (each field native-endian in memory, like any element).
  std::shared_ptr<const std::vector<RecordField>> fields = {};

  static DataType boolean() { return {DTypeKind::Bool, 1, {}, 1}; }
  static DataType int_(std::size_t size) { return {DTypeKind::Int, size, {}, 1}; }
  static DataType uint(std::size_t size) { return {DTypeKind::UInt, size, {}, 1}; }
  static DataType float_(std::size_t size) { return {DTypeKind::Float, size, {}, 1}; }
  static DataType complex(std::size_t size) { return {DTypeKind::Complex, size, {}, 1}; }
  static DataType datetime(std::string unit, std::int64_t scale = 1) {
    return {DTypeKind::DateTime, 8, std::move(unit), scale};
  }
  static DataType timedelta(std::string unit, std::int64_t scale = 1) {
    return {DTypeKind::TimeDelta, 8, std::move(unit), scale};
  }
  static DataType bytes(std::size_t n) { return {DTypeKind::Bytes, n, {}, 1}; }
  static DataType unicode(std::size_t chars) { return {DTypeKind::Unicode, 4 * chars, {}, 1}; }
  static DataType string() { return {DTypeKind::String, 0, {}, 1}; }
  static DataType vlen_bytes() { return {DTypeKind::VlenBytes, 0, {}, 1}; }
  // UsageError for a field name given twice, a variable-length field or one past `itemsize`.
  static DataType record(std::vector<RecordField> fields, std::size_t itemsize);

  bool is_variable_length() const {
    return kind == DTypeKind::String || kind == DTypeKind::VlenBytes;
  }
  bool is_numeric() const {
    return kind == DTypeKind::Bool || kind == DTypeKind::Int || kind == DTypeKind::UInt ||
           kind == DTypeKind::Float || kind == DTypeKind::Complex;
  }
  // Size of the unit that gets byte-swapped (complex swaps each half; strings their code units).
  // A record's is its widest field's: each field is swapped by itself (util/byte_swap.hpp).
  std::size_t swap_unit() const;

  // numpy dtype string in native (little-endian) order, e.g. "<f4", "|b1", "<M8[10ms]", "<U4", "|O";
  // a record's is numpy's "|V<itemsize>" (its fields: `fields`).
  std::string numpy_str() const;
  // Short human name, e.g. "float32", "datetime64[10ms]", "<U4", "string",
  // "struct{x: float32, t: datetime64[s]}".
  std::string name() const;

  bool operator==(const DataType& o) const;
};

struct RecordField {
  std::string name;
  std::size_t offset = 0;
  DataType dtype;
  bool operator==(const RecordField& o) const = default;
};


enum class ByteOrder { Little, Big, NotApplicable };

struct ParsedNumpyDType {
  DataType dtype;
  ByteOrder order;  // as written in the type string ('|' -> NotApplicable)
};

// Parses a numpy type string as used in Zarr v2 ('<f4', '>i8', '|b1', '<M8[ns]', '|S5', '<U3', '|O'),
// and the other spellings np.dtype() takes for the same types: without the byte-order prefix
// ('f4', '=f4'), by name ('float32', 'int16', 'bool', 'double', 'datetime64[ns]') and by
// one-letter code ('f', 'd', 'i', 'B'); '=' is the native (little-endian) order. The one parser
// of dtype strings: Zarr v2 metadata and every codec configuration's dtype key go through it.
// Throws MetadataError naming the string when it is not understood.
ParsedNumpyDType parse_numpy_dtype(std::string_view typestr);

// Nanoseconds per unit for datetime units (Y and M are calendar units: returns 0 for them).
std::int64_t datetime_unit_ns(std::string_view unit);

}  // namespace lazycube
