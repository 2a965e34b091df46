// Zarr v2 `.zarray` → ArrayMetadata.
#include <nlohmann/json.hpp>

#include "array_metadata.hpp"
#include "lazycube/error.hpp"
#include "util/byte_swap.hpp"

namespace lazycube::zarr {

using nlohmann::json;

namespace {

// A NumPy structured dtype as .zarray lists it: [[name, type], ...], a type being a dtype string
// or a nested list; fields packed in order. One byte order for every multi-byte field (a record
// is swapped as a whole); sub-array fields ([name, type, shape]) are refused.
void add_v2_fields(const json& list, const std::string& where, std::vector<RecordField>& fields, std::size_t& size,
                   ByteOrder& order) {
  for (const json& f : list) {
    if (!f.is_array() || f.size() < 2 || !f[0].is_string() || f[0].get<std::string>().empty())
      throw MetadataError(where + ": structured dtype field " + f.dump() + " is not [name, type]");
    const std::string name = f[0].get<std::string>();
    if (f.size() > 2)
      throw MetadataError(where + ": structured dtype field '" + name + "' is a sub-array " + f[2].dump() +
                          ", which lazycube does not read");
    DataType t;
    if (f[1].is_array()) {
      std::vector<RecordField> inner;
      std::size_t inner_size = 0;
      add_v2_fields(f[1], where, inner, inner_size, order);
      t = DataType::record(std::move(inner), inner_size);
    } else if (f[1].is_string()) {
      ParsedNumpyDType p;
      try {
        p = parse_numpy_dtype(f[1].get<std::string>());
      } catch (const MetadataError& e) {
        throw MetadataError(where + ": structured dtype field '" + name + "': " + e.what());
      }
      if (p.dtype.is_variable_length())
        throw MetadataError(where + ": structured dtype field '" + name + "' is an object field");
      if (p.dtype.swap_unit() > 1 && p.order != ByteOrder::NotApplicable) {
        if (order != ByteOrder::NotApplicable && order != p.order)
          throw MetadataError(where + ": structured dtype field '" + name +
                              "' has another byte order than the fields before it; lazycube reads records "
                              "whose fields share one byte order");
        order = p.order;
      }
      t = p.dtype;
    } else {
      throw MetadataError(where + ": structured dtype field '" + name + "' has the type " + f[1].dump());
    }
    fields.push_back({name, size, t});
    size += t.itemsize;
  }
}

ParsedNumpyDType parse_v2_structured(const json& list, const std::string& where) {
  std::vector<RecordField> fields;
  std::size_t size = 0;
  ByteOrder order = ByteOrder::NotApplicable;
  add_v2_fields(list, where, fields, size, order);
  try {
    return {DataType::record(std::move(fields), size), order};
  } catch (const UsageError& e) {
    throw MetadataError(where + ": structured dtype " + list.dump() + ": " + e.what());
  }
}

}  // namespace

ArrayMetadata parse_v2_array(const json& zarray, const json& zattrs, const std::string& where) {
  ArrayMetadata m;
  m.zarr_format = 2;
  const json& fmt = require(zarray, "zarr_format", where);
  if (!fmt.is_number_integer() || fmt.get<int>() != 2)
    throw MetadataError(where + ": .zarray has zarr_format " + fmt.dump() + ", expected 2");
  m.shape = parse_shape(require(zarray, "shape", where), "shape", where, true);
  m.chunk_shape = parse_shape(require(zarray, "chunks", where), "chunks", where, false);
  if (m.chunk_shape.size() != m.shape.size())
    throw MetadataError(where + ": 'chunks' has " + std::to_string(m.chunk_shape.size()) +
                        " dims but 'shape' has " + std::to_string(m.shape.size()));

  const json& dtype_json = require(zarray, "dtype", where);
  ParsedNumpyDType parsed;
  if (dtype_json.is_array()) {
    parsed = parse_v2_structured(dtype_json, where);
  } else if (!dtype_json.is_string()) {
    throw MetadataError(where + ": dtype must be a string or a list of fields, got " + dtype_json.dump());
  } else {
    try {
      parsed = parse_numpy_dtype(dtype_json.get<std::string>());
    } catch (const MetadataError& e) {
      throw MetadataError(where + ": " + e.what());
    }
  }
  m.dtype = parsed.dtype;

  std::string order = "C";
  if (auto it = zarray.find("order"); it != zarray.end()) {
    if (!it->is_string() || (*it != "C" && *it != "F"))
      throw MetadataError(where + ": 'order' must be \"C\" or \"F\", got " + it->dump());
    order = it->get<std::string>();
  }
  m.key_encoding = ChunkKeyEncoding::v2('.');
  if (auto it = zarray.find("dimension_separator"); it != zarray.end() && !it->is_null()) {
    if (*it != "." && *it != "/")
      throw MetadataError(where + ": 'dimension_separator' must be \".\" or \"/\", got " +
                          it->dump());
    m.key_encoding = ChunkKeyEncoding::v2(it->get<std::string>()[0]);
  }

  // Filters (encode order) then the compressor; an object codec among the filters turns the
  // object dtype into strings and acts as the array->bytes codec.
  std::shared_ptr<const codec::ArrayToBytesCodec> object_codec;
  auto add_bytes_codec = [&](const json& c, const char* role) {
    if (!c.is_object() || !c.contains("id") || !c["id"].is_string())
      throw MetadataError(where + ": " + role + " " + c.dump() + " has no string 'id'");
    try {
      m.codecs.bytes_codecs.push_back(codec::make_v2_bytes_codec(c, m.dtype));
    } catch (const CodecError& e) {
      throw CodecError(where + ": " + e.what());
    }
  };
  if (auto it = zarray.find("filters"); it != zarray.end() && !it->is_null()) {
    if (!it->is_array()) throw MetadataError(where + ": 'filters' must be a list or null");
    for (const auto& f : *it) {
      if (f.is_object() && f.contains("id") && f["id"].is_string() &&
          codec::is_v2_object_codec(f["id"].get<std::string>())) {
        if (object_codec || !m.codecs.bytes_codecs.empty())
          throw MetadataError(where + ": object codec " + f.dump() + " must be the first filter");
        try {
          object_codec = codec::make_v2_object_codec(f);
        } catch (const CodecError& e) {
          throw CodecError(where + ": " + e.what());
        }
        continue;
      }
      add_bytes_codec(f, "filter");
    }
  }
  if (auto it = zarray.find("compressor"); it != zarray.end() && !it->is_null())
    add_bytes_codec(*it, "compressor");
  m.v2_codecs = {{"compressor", zarray.value("compressor", json())}, {"filters", zarray.value("filters", json())}};

  if (dtype_json.is_string() && dtype_json.get<std::string>().find('O') != std::string::npos) {
    if (!object_codec)
      throw MetadataError(where + ": object dtype '|O' needs an object codec filter "
                                  "(vlen-utf8 or vlen-bytes)");
    m.dtype = object_codec->name() == "vlen-bytes" ? DataType::vlen_bytes() : DataType::string();
    m.codecs.array_to_bytes = object_codec;
  } else {
    if (object_codec)
      throw MetadataError(where + ": object codec filter on non-object dtype " + m.dtype.name());
    m.codecs.array_to_bytes = codec::make_endian_codec(parsed.order);
  }
  if (order == "F" && m.shape.size() > 1) {
    std::vector<std::size_t> perm(m.shape.size());
    for (std::size_t d = 0; d < perm.size(); ++d) perm[d] = perm.size() - 1 - d;
    m.codecs.array_codecs.push_back(codec::make_transpose_codec(perm));
  }

  m.fill = parse_v2_fill_value(zarray.contains("fill_value") ? zarray["fill_value"] : json(),
                               m.dtype, where);
  // A structured fill value is base64 of the record as stored: to native order.
  if (m.dtype.kind == DTypeKind::Record && parsed.order == ByteOrder::Big) swap_elements(m.fill.bytes.span(), m.dtype);

  if (zattrs.is_object()) {
    m.attrs = zattrs;
    if (auto it = zattrs.find("_ARRAY_DIMENSIONS"); it != zattrs.end()) {
      if (!it->is_array() || it->size() != m.shape.size())
        throw MetadataError(where + ": _ARRAY_DIMENSIONS " + it->dump() + " does not match " +
                            std::to_string(m.shape.size()) + " dims");
      for (const auto& n : *it) {
        if (!n.is_string()) throw MetadataError(where + ": _ARRAY_DIMENSIONS must hold strings");
        m.dimension_names.push_back(n.get<std::string>());
      }
    }
  } else if (!zattrs.is_null()) {
    throw MetadataError(where + ": .zattrs is not a JSON object");
  }
  return m;
}

}  // namespace lazycube::zarr
