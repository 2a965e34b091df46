#include "lazycube/dtype.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <optional>
#include <utility>
#include <set>

#include "lazycube/error.hpp"

static_assert(std::endian::native == std::endian::little,
              "lazycube assumes a little-endian host (in-memory data is native = little endian)");

namespace lazycube {

namespace {

bool valid_time_unit(std::string_view u) {
  static constexpr std::string_view units[] = {"Y", "M",  "W",  "D",  "h",  "m",  "s",
                                               "ms", "us", "ns", "ps", "fs", "as", "generic"};
  for (auto x : units)
    if (x == u) return true;
  return false;
}

std::string time_suffix(const DataType& t) {
  if (t.unit.empty() || t.unit == "generic") return "";
  std::string s = "[";
  if (t.scale != 1) s += std::to_string(t.scale);
  s += t.unit;
  s += ']';
  return s;
}

}  // namespace

DataType DataType::record(std::vector<RecordField> record_fields, std::size_t size) {
  if (record_fields.empty()) throw UsageError("a record type needs at least one field");
  std::set<std::string> names;
  for (const RecordField& f : record_fields) {
    if (f.name.empty()) throw UsageError("a record field needs a name");
    if (!names.insert(f.name).second) throw UsageError("record field '" + f.name + "' is given twice");
    if (f.dtype.is_variable_length())
      throw UsageError("record field '" + f.name + "' has the variable-length type " + f.dtype.name());
    if (f.offset > size || f.dtype.itemsize > size - f.offset)
      throw UsageError("record field '" + f.name + "' ends past the record's " + std::to_string(size) + " bytes");
  }
  DataType t{DTypeKind::Record, size, {}, 1};
  t.fields = std::make_shared<const std::vector<RecordField>>(std::move(record_fields));
  return t;
}

bool DataType::operator==(const DataType& o) const {
  if (kind != o.kind || itemsize != o.itemsize || unit != o.unit || scale != o.scale) return false;
  if (fields == o.fields) return true;
  return fields && o.fields && *fields == *o.fields;
}

std::size_t DataType::swap_unit() const {
  switch (kind) {
    case DTypeKind::Record: {
      std::size_t widest = 1;
      if (fields)
        for (const RecordField& f : *fields) widest = std::max(widest, f.dtype.swap_unit());
      return widest;
    }
    case DTypeKind::Complex: return itemsize / 2;
    case DTypeKind::Unicode: return 4;
    case DTypeKind::Bytes:
    case DTypeKind::Bool:
    case DTypeKind::String:
    case DTypeKind::VlenBytes: return 1;
    default: return itemsize;
  }
}

std::string DataType::numpy_str() const {
  switch (kind) {
    case DTypeKind::Bool: return "|b1";
    case DTypeKind::Int: return itemsize == 1 ? "|i1" : "<i" + std::to_string(itemsize);
    case DTypeKind::UInt: return itemsize == 1 ? "|u1" : "<u" + std::to_string(itemsize);
    case DTypeKind::Float: return "<f" + std::to_string(itemsize);
    case DTypeKind::Complex: return "<c" + std::to_string(itemsize);
    case DTypeKind::DateTime: return "<M8" + time_suffix(*this);
    case DTypeKind::TimeDelta: return "<m8" + time_suffix(*this);
    case DTypeKind::Bytes: return "|S" + std::to_string(itemsize);
    case DTypeKind::Unicode: return "<U" + std::to_string(itemsize / 4);
    case DTypeKind::String:
    case DTypeKind::VlenBytes: return "|O";
    case DTypeKind::Record: return "|V" + std::to_string(itemsize);
  }
  return "?";
}

std::string DataType::name() const {
  switch (kind) {
    case DTypeKind::Bool: return "bool";
    case DTypeKind::Int: return "int" + std::to_string(itemsize * 8);
    case DTypeKind::UInt: return "uint" + std::to_string(itemsize * 8);
    case DTypeKind::Float: return "float" + std::to_string(itemsize * 8);
    case DTypeKind::Complex: return "complex" + std::to_string(itemsize * 8);
    case DTypeKind::DateTime: return "datetime64" + time_suffix(*this);
    case DTypeKind::TimeDelta: return "timedelta64" + time_suffix(*this);
    case DTypeKind::Bytes: return "|S" + std::to_string(itemsize);
    case DTypeKind::Unicode: return "<U" + std::to_string(itemsize / 4);
    case DTypeKind::String: return "string";
    case DTypeKind::VlenBytes: return "bytes";
    case DTypeKind::Record: {
      std::string s = "struct{";
      if (fields)
        for (const RecordField& f : *fields) s += (s.size() > 7 ? ", " : "") + f.name + ": " + f.dtype.name();
      return s + "}";
    }
  }
  return "?";
}

namespace {

// NumPy's names for types (np.dtype("float32").str == "<f4"), and its one-letter codes that take
// no size ("f" is float32, "b" int8, "B" uint8): the type string each one stands for. A name may
// carry a byte-order prefix ("=float32" is not NumPy, but "=f4" is; both are taken).
std::optional<std::string_view> numpy_type_name(std::string_view s) {
  static constexpr std::pair<std::string_view, std::string_view> names[] = {
      {"bool", "b1"},        {"bool_", "b1"},        {"bool8", "b1"},       {"int8", "i1"},
      {"int16", "i2"},       {"int32", "i4"},        {"int64", "i8"},       {"uint8", "u1"},
      {"uint16", "u2"},      {"uint32", "u4"},       {"uint64", "u8"},      {"float16", "f2"},
      {"float32", "f4"},     {"float64", "f8"},      {"complex64", "c8"},   {"complex128", "c16"},
      {"half", "f2"},        {"single", "f4"},       {"double", "f8"},      {"float", "f8"},
      {"float_", "f8"},      {"int", "i8"},          {"int_", "i8"},        {"intp", "i8"},
      {"uint", "u8"},        {"uintp", "u8"},        {"byte", "i1"},        {"ubyte", "u1"},
      {"short", "i2"},       {"ushort", "u2"},       {"intc", "i4"},        {"uintc", "u4"},
      {"longlong", "i8"},    {"ulonglong", "u8"},    {"complex", "c16"},    {"csingle", "c8"},
      {"cdouble", "c16"},    {"cfloat", "c16"},      {"f", "f4"},           {"d", "f8"},
      {"e", "f2"},           {"b", "i1"},            {"B", "u1"},           {"h", "i2"},
      {"H", "u2"},           {"i", "i4"},            {"I", "u4"},           {"l", "i8"},
      {"L", "u8"},           {"q", "i8"},            {"Q", "u8"},           {"F", "c8"},
      {"D", "c16"}};
  for (const auto& [name, code] : names)
    if (name == s) return code;
  return std::nullopt;
}

}  // namespace

ParsedNumpyDType parse_numpy_dtype(std::string_view s) {
  const std::string original(s);
  auto bad = [&](const std::string& why) -> MetadataError {
    return MetadataError("unsupported numpy dtype '" + original + "': " + why);
  };
  if (s.empty()) throw bad("empty");
  // The spellings of a type by name: "float32", "datetime64[ns]", "timedelta64".
  std::string spelled;
  {
    std::string_view body = s;
    std::string prefix;
    if (body.front() == '<' || body.front() == '>' || body.front() == '=' || body.front() == '|') {
      prefix = std::string(1, body.front());
      body.remove_prefix(1);
    }
    if (auto code = numpy_type_name(body)) {
      spelled = prefix + std::string(*code);
    } else if (body.starts_with("datetime64")) {
      spelled = prefix + "M8" + std::string(body.substr(10));
    } else if (body.starts_with("timedelta64")) {
      spelled = prefix + "m8" + std::string(body.substr(11));
    }
    if (!spelled.empty()) s = spelled;
  }
  ByteOrder order = ByteOrder::NotApplicable;
  switch (s.front()) {
    case '<': order = ByteOrder::Little; s.remove_prefix(1); break;
    case '>': order = ByteOrder::Big; s.remove_prefix(1); break;
    case '|': s.remove_prefix(1); break;
    case '=': order = ByteOrder::Little; s.remove_prefix(1); break;
    default: break;
  }
  if (s.empty()) throw bad("no type code");
  const char code = s.front();
  s.remove_prefix(1);

  if (code == 'O') {
    if (!s.empty()) throw bad("trailing characters");
    // An object array: what it holds is decided by its object codec (vlen-utf8 / vlen-bytes).
    return {DataType::string(), ByteOrder::NotApplicable};
  }
  if (code == 'M' || code == 'm') {
    if (s.empty() || s.front() != '8') throw bad("datetime/timedelta must be 8 bytes");
    s.remove_prefix(1);
    std::string unit = "generic";
    std::int64_t scale = 1;
    if (!s.empty()) {
      if (s.front() != '[' || s.back() != ']') throw bad("expected [unit]");
      std::string_view inner = s.substr(1, s.size() - 2);
      std::size_t digits = 0;
      while (digits < inner.size() && inner[digits] >= '0' && inner[digits] <= '9') ++digits;
      if (digits > 0) {
        auto [p, ec] = std::from_chars(inner.data(), inner.data() + digits, scale);
        if (ec != std::errc() || scale <= 0) throw bad("bad unit multiplier");
      }
      unit = std::string(inner.substr(digits));
      if (!valid_time_unit(unit)) throw bad("unknown time unit '" + unit + "'");
    }
    DataType t = code == 'M' ? DataType::datetime(unit, scale) : DataType::timedelta(unit, scale);
    return {t, order};
  }

  std::size_t n = 0;
  if (!s.empty()) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || p != s.data() + s.size()) throw bad("bad size");
  }
  auto need = [&](std::initializer_list<std::size_t> sizes) {
    for (auto x : sizes)
      if (x == n) return;
    throw bad("unsupported item size " + std::to_string(n));
  };
  switch (code) {
    case 'b':
      need({1});
      return {DataType::boolean(), ByteOrder::NotApplicable};
    case '?':
      return {DataType::boolean(), ByteOrder::NotApplicable};
    case 'i':
      need({1, 2, 4, 8});
      return {DataType::int_(n), n == 1 ? ByteOrder::NotApplicable : order};
    case 'u':
      need({1, 2, 4, 8});
      return {DataType::uint(n), n == 1 ? ByteOrder::NotApplicable : order};
    case 'f':
      need({2, 4, 8});
      return {DataType::float_(n), order};
    case 'c':
      need({8, 16});
      return {DataType::complex(n), order};
    case 'S':
    case 'a':
      if (n == 0) throw bad("zero-length byte strings");
      return {DataType::bytes(n), ByteOrder::NotApplicable};
    case 'U':
      if (n == 0) throw bad("zero-length unicode strings");
      return {DataType::unicode(n), order};
    case 'V':
      throw bad("structured/void dtypes are not supported");
    default:
      throw bad("unknown type code '" + std::string(1, code) + "'");
  }
}

std::int64_t datetime_unit_ns(std::string_view unit) {
  if (unit == "W") return 7LL * 86400 * 1000000000LL;
  if (unit == "D") return 86400LL * 1000000000LL;
  if (unit == "h") return 3600LL * 1000000000LL;
  if (unit == "m") return 60LL * 1000000000LL;
  if (unit == "s") return 1000000000LL;
  if (unit == "ms") return 1000000LL;
  if (unit == "us") return 1000LL;
  if (unit == "ns") return 1;
  return 0;  // Y, M (calendar), sub-nanosecond and generic units
}

}  // namespace lazycube
