#include "util/npy.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include "lazycube/error.hpp"
#include "util/local_file.hpp"
#include "util/text.hpp"

namespace lazycube::npy {

namespace {

constexpr char kMagic[] = "\x93NUMPY";

std::size_t max_code_points(const NDArray& array) {
  std::size_t n = 1;
  for (const auto& s : array.strings) n = std::max(n, utf8_to_utf32(s).size());
  return n;
}

std::size_t max_length(const NDArray& array) {
  std::size_t n = 1;
  for (const auto& s : array.strings) n = std::max(n, s.size());
  return n;
}

std::string shape_tuple(const Shape& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  if (shape.size() == 1) out += ",";
  return out + ")";
}

// A record's descr as NumPy writes it: a list of (name, type) in offset order, gaps as
// ('', '|V<n>') padding, nested records as nested lists.
std::string record_descr(const DataType& t) {
  std::vector<const RecordField*> fields;
  for (const RecordField& f : *t.fields) fields.push_back(&f);
  std::sort(fields.begin(), fields.end(), [](const RecordField* a, const RecordField* b) { return a->offset < b->offset; });
  std::string out = "[";
  std::size_t at = 0;
  auto item = [&](const std::string& name, const std::string& type) {
    std::string quoted;
    for (char c : name) quoted += c == '\'' || c == '\\' ? std::string("\\") + c : std::string(1, c);
    out += (out.size() > 1 ? ", " : "") + ("('" + quoted + "', " + type + ")");
  };
  for (const RecordField* f : fields) {
    if (f->offset > at) item("", "'|V" + std::to_string(f->offset - at) + "'");
    item(f->name, f->dtype.kind == DTypeKind::Record ? record_descr(f->dtype) : "'" + f->dtype.numpy_str() + "'");
    at = f->offset + f->dtype.itemsize;
  }
  if (t.itemsize > at) item("", "'|V" + std::to_string(t.itemsize - at) + "'");
  return out + "]";
}

}  // namespace

std::string descr_of(const NDArray& array) {
  switch (array.dtype.kind) {
    case DTypeKind::String: return "<U" + std::to_string(max_code_points(array));
    case DTypeKind::VlenBytes: return "|S" + std::to_string(max_length(array));
    case DTypeKind::Record: return record_descr(array.dtype);
    default: return array.dtype.numpy_str();
  }
}

std::string header(const std::string& descr, const Shape& shape) {
  // A record's descr is a list literal; every other one a quoted type string.
  const std::string literal = !descr.empty() && descr.front() == '[' ? descr : "'" + descr + "'";
  std::string dict = "{'descr': " + literal + ", 'fortran_order': False, 'shape': " +
                     shape_tuple(shape) + ", }";
  // magic(6) + version(2) + length(2) + dict + padding + '\n' is a multiple of 64.
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  if (dict.size() > 65535) throw UsageError("npy header too long");
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>((dict.size() >> 8) & 0xff);
  return out + dict;
}

void write(std::ostream& out, const NDArray& array) {
  const std::string descr = descr_of(array);
  out << header(descr, array.shape);
  if (array.dtype.kind == DTypeKind::String) {
    const std::size_t width = max_code_points(array);
    std::u32string cell;
    for (const auto& s : array.strings) {
      cell = utf8_to_utf32(s);
      cell.resize(width, U'\0');
      out.write(reinterpret_cast<const char*>(cell.data()),
                static_cast<std::streamsize>(width * 4));
    }
  } else if (array.dtype.kind == DTypeKind::VlenBytes) {
    const std::size_t width = max_length(array);
    std::string cell;
    for (const auto& s : array.strings) {
      cell = s;
      cell.resize(width, '\0');
      out.write(cell.data(), static_cast<std::streamsize>(width));
    }
  } else {
    out.write(reinterpret_cast<const char*>(array.data.data()),
              static_cast<std::streamsize>(array.data.size()));
  }
}

void write_file(const std::string& path, const NDArray& array) {
  write_local_file(path, [&](std::ostream& out) { write(out, array); });
}

File read(std::istream& in) {
  char pre[10];
  if (!in.read(pre, 10) || std::memcmp(pre, kMagic, 6) != 0)
    throw UsageError("not a .npy file (bad magic)");
  std::size_t header_len = 0;
  const auto major = static_cast<unsigned char>(pre[6]);
  if (major == 1) {
    header_len = static_cast<unsigned char>(pre[8]) | (static_cast<unsigned char>(pre[9]) << 8);
  } else {
    char more[2];
    if (!in.read(more, 2)) throw UsageError("truncated .npy header");
    header_len = static_cast<std::size_t>(static_cast<unsigned char>(pre[8])) |
                 (static_cast<std::size_t>(static_cast<unsigned char>(pre[9])) << 8) |
                 (static_cast<std::size_t>(static_cast<unsigned char>(more[0])) << 16) |
                 (static_cast<std::size_t>(static_cast<unsigned char>(more[1])) << 24);
  }
  std::string dict(header_len, '\0');
  if (!in.read(dict.data(), static_cast<std::streamsize>(header_len)))
    throw UsageError("truncated .npy header");
  File f;
  std::smatch m;
  static const std::regex descr_re(R"('descr':\s*'([^']*)')");
  static const std::regex order_re(R"('fortran_order':\s*(True|False))");
  static const std::regex shape_re(R"('shape':\s*\(([^)]*)\))");
  if (!std::regex_search(dict, m, descr_re)) throw UsageError("npy header without descr");
  f.descr = m[1];
  if (std::regex_search(dict, m, order_re)) f.fortran_order = m[1] == "True";
  if (!std::regex_search(dict, m, shape_re)) throw UsageError("npy header without shape");
  std::string dims = m[1];
  std::replace(dims.begin(), dims.end(), ',', ' ');
  std::istringstream ds(dims);
  for (std::uint64_t n; ds >> n;) f.shape.push_back(n);
  std::ostringstream rest;
  rest << in.rdbuf();
  const std::string bytes = rest.str();
  f.data = Buffer::copy_of({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()});
  return f;
}

File read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NotFound("cannot open '" + path + "'");
  return read(in);
}

}  // namespace lazycube::npy
