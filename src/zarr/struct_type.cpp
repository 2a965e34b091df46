// The v3 `struct` / legacy `structured` data type: field layout and fill values.
#include "struct_type.hpp"

#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "lazycube/error.hpp"
#include "util/text.hpp"

namespace lazycube::zarr {

using nlohmann::json;

namespace {

constexpr std::uint64_t kMaxRecordBytes = std::uint64_t{1} << 31;

std::string type_name(const StructField& f) {
  return f.type.layout ? "struct{" + f.type.layout->describe() + "}" : f.type.dtype.name();
}

}  // namespace

std::string StructLayout::describe() const {
  std::string s;
  for (const auto& f : fields) s += (s.empty() ? "" : ", ") + f.name + ": " + type_name(f);
  return s;
}

std::shared_ptr<const StructLayout> parse_v3_struct(const json& config, bool legacy, const std::string& where) {
  const std::string ctx = where + ": data_type " + std::string(legacy ? "structured" : "struct");
  if (!config.is_object() || !config.contains("fields"))
    throw MetadataError(ctx + ": missing configuration.fields");
  for (const auto& [key, value] : config.items())
    if (key != "fields") throw MetadataError(ctx + ": unknown configuration field '" + key + "'");
  const json& fields = config["fields"];
  if (!fields.is_array() || fields.empty())
    throw MetadataError(ctx + ": configuration.fields must be a non-empty list, got " + fields.dump());
  auto layout = std::make_shared<StructLayout>();
  std::set<std::string> names;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const json& f = fields[i];
    const std::string at = ctx + ": field " + std::to_string(i);
    const json* name = nullptr;
    const json* type = nullptr;
    if (f.is_object()) {
      for (const auto& [key, value] : f.items())
        if (key != "name" && key != "data_type")
          throw MetadataError(at + " has the unknown key '" + key + "'");
      if (f.contains("name")) name = &f["name"];
      if (f.contains("data_type")) type = &f["data_type"];
    } else if (legacy && f.is_array() && f.size() == 2) {  // ["x", "float32"]
      name = &f[0];
      type = &f[1];
    } else {
      throw MetadataError(at + " must be {\"name\", \"data_type\"}" + (legacy ? " or [name, data_type]" : "") +
                          ", got " + f.dump());
    }
    if (name == nullptr || !name->is_string() || name->get<std::string>().empty())
      throw MetadataError(at + " has no name (a non-empty string)");
    StructField field;
    field.name = name->get<std::string>();
    const std::string fctx = ctx + ": field '" + field.name + "'";
    if (!names.insert(field.name).second)
      throw MetadataError(fctx + " is declared twice: two fields would overlap under one name");
    if (type == nullptr) throw MetadataError(fctx + " has no data_type");
    field.type = parse_v3_data_type(*type, fctx);
    if (field.type.dtype.is_variable_length())
      throw MetadataError(fctx + " has the variable-length type " + type->dump() +
                          ": struct fields must have a fixed size");
    if (field.type.narrow != nullptr)
      throw MetadataError(fctx + " has the type " + type->dump() +
                          ", which lazycube widens to float32: not supported inside a struct");
    field.size = field.type.layout ? field.type.layout->itemsize : field.type.dtype.itemsize;
    field.offset = layout->itemsize;
    if (field.size > kMaxRecordBytes - field.offset)
      throw MetadataError(fctx + " ends past the largest record lazycube reads (" + std::to_string(kMaxRecordBytes) +
                          " bytes)");
    layout->itemsize += field.size;
    layout->fields.push_back(std::move(field));
  }
  return layout;
}

DataType record_dtype(const StructLayout& layout) {
  std::vector<RecordField> fields;
  for (const auto& f : layout.fields)
    fields.push_back({f.name, static_cast<std::size_t>(f.offset), f.type.layout ? record_dtype(*f.type.layout) : f.type.dtype});
  return DataType::record(std::move(fields), static_cast<std::size_t>(layout.itemsize));
}

Buffer parse_v3_struct_fill(const StructLayout& layout, const json& fill, const std::string& where) {
  Buffer out(layout.itemsize);
  if (layout.itemsize != 0) std::memset(out.data(), 0, layout.itemsize);
  if (fill.is_null()) return out;
  if (fill.is_string()) {  // legacy `structured`: base64 of the packed record
    auto raw = base64_decode(fill.get<std::string>());
    if (!raw || raw->size() != layout.itemsize)
      throw MetadataError(where + ": struct fill_value " + fill.dump() + " is not base64 of " +
                          std::to_string(layout.itemsize) + " bytes");
    std::memcpy(out.data(), raw->data(), raw->size());
    return out;
  }
  if (!fill.is_object())
    throw MetadataError(where + ": struct fill_value must be an object with one entry per field, got " + fill.dump());
  for (const auto& [key, value] : fill.items()) {
    bool known = false;
    for (const auto& f : layout.fields) known = known || f.name == key;
    if (!known) throw MetadataError(where + ": struct fill_value names the unknown field '" + key + "'");
  }
  for (const auto& f : layout.fields) {
    const std::string fctx = where + ": struct field '" + f.name + "'";
    if (!fill.contains(f.name)) throw MetadataError(fctx + " has no entry in the fill_value");
    const json& v = fill[f.name];
    if (f.type.layout) {
      Buffer inner = parse_v3_struct_fill(*f.type.layout, v, fctx);
      std::memcpy(out.data() + f.offset, inner.data(), inner.size());
    } else {
      FillValue fv = parse_v3_fill_value(v, f.type, fctx);
      std::memcpy(out.data() + f.offset, fv.bytes.data(), f.size);
    }
  }
  return out;
}

}  // namespace lazycube::zarr
