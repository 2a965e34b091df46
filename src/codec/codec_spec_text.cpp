// The codec spec text of the writers ("zstd:3", "blosc:lz4:5:shuffle", "gzip:6+crc32c", "none",
// "bitround:10+zstd:3") → the Zarr v3 codec list (less `bytes`) or the Zarr v2 compressor object. Every codec made here
// is built once through the registry, so a bad parameter fails now, before anything is written.
#include <charconv>
#include <vector>
#include <nlohmann/json.hpp>

#include "codec_util.hpp"

namespace lazycube::codec {

namespace {

using nlohmann::json;

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto at = text.find(sep, start);
    out.emplace_back(text.substr(start, at == std::string_view::npos ? text.size() - start : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

// One codec of the text, e.g. {"zstd", "3"}, with what the error messages need.
class Part {
 public:
  Part(std::string_view whole, std::string_view part) : whole_(whole), fields_(split(part, ':')) {}

  const std::string& name() const { return fields_[0]; }
  bool has(std::size_t i) const { return i < fields_.size() && !fields_[i].empty(); }
  const std::string& at(std::size_t i) const { return fields_[i]; }
  void at_most(std::size_t n) const {
    if (fields_.size() > n + 1)
      fail("'" + name() + "' takes at most " + std::to_string(n) + " parameter" + (n == 1 ? "" : "s") +
           ", got '" + fields_[n + 1] + "'");
  }
  std::int64_t integer(std::size_t i, std::int64_t fallback, const char* what) const {
    if (!has(i)) return fallback;
    std::int64_t v = 0;
    const std::string& s = fields_[i];
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size())
      fail("'" + name() + "': " + what + " must be an integer, got '" + s + "'");
    return v;
  }
  [[noreturn]] void fail(const std::string& why) const {
    detail::fail("codec spec '" + std::string(whole_) + "': " + why);
  }

 private:
  std::string_view whole_;
  std::vector<std::string> fields_;
};

// The v3 form {"name", "configuration"} and the v2 form {"id", ...} of one codec.
struct Forms {
  json v3;
  json v2;
};

Forms blosc(const Part& p, const DataType& dtype) {
  p.at_most(3);
  const std::string cname = p.has(1) ? p.at(1) : "lz4";
  const auto clevel = p.integer(2, 5, "the level");
  std::string shuffle = p.has(3) ? p.at(3) : "shuffle";
  static const char* kShuffles[] = {"noshuffle", "shuffle", "bitshuffle"};
  int shuffle_id = -1;
  for (int i = 0; i < 3; ++i)
    if (shuffle == kShuffles[i]) shuffle_id = i;
  if (shuffle_id < 0) p.fail("blosc shuffle must be noshuffle, shuffle or bitshuffle, got '" + shuffle + "'");
  const std::size_t typesize = dtype.itemsize == 0 ? 1 : dtype.itemsize;
  return {{{"name", "blosc"},
           {"configuration",
            {{"cname", cname}, {"clevel", clevel}, {"shuffle", shuffle}, {"typesize", typesize}, {"blocksize", 0}}}},
          {{"id", "blosc"}, {"cname", cname}, {"clevel", clevel}, {"shuffle", shuffle_id}, {"blocksize", 0}}};
}

// A codec with at most one integer parameter under `key`.
Forms one_integer(const Part& p, const char* v3_name, const char* key, std::int64_t fallback, const char* what) {
  p.at_most(1);
  const auto value = p.integer(1, fallback, what);
  json v3_config{{key, value}};
  if (p.name() == "zstd") v3_config["checksum"] = false;
  return {{{"name", v3_name}, {"configuration", v3_config}}, {{"id", p.name()}, {key, value}}};
}

Forms forms_of(const Part& p, const DataType& dtype) {
  const std::string& n = p.name();
  if (n == "zstd") return one_integer(p, "zstd", "level", 1, "the level");
  if (n == "gzip") return one_integer(p, "gzip", "level", 1, "the level");
  if (n == "zlib") return one_integer(p, "numcodecs.zlib", "level", 1, "the level");
  if (n == "lz4") return one_integer(p, "numcodecs.lz4", "acceleration", 1, "the acceleration");
  if (n == "blosc") return blosc(p, dtype);
  if (n == "crc32c") {
    p.at_most(0);
    return {{{"name", "crc32c"}}, json()};
  }
  if (n == "bitround") {  // array->array, v3 only: the writer puts it before `bytes`
    p.at_most(1);
    if (!p.has(1)) p.fail("'bitround' needs the mantissa bits to keep, e.g. bitround:10");
    return {{{"name", "bitround"}, {"configuration", {{"keepbits", p.integer(1, 0, "keepbits")}}}}, json()};
  }
  p.fail("unknown codec '" + n + "' (known: none, zstd, gzip, zlib, lz4, blosc, crc32c, bitround)");
}

}  // namespace

json parse_codec_spec(std::string_view text, int zarr_format, const DataType& dtype) {
  if (zarr_format != 2 && zarr_format != 3)
    detail::fail("codec spec '" + std::string(text) + "': zarr_format must be 2 or 3, got " +
                 std::to_string(zarr_format));
  json v3 = json::array();
  json v2 = nullptr;
  const ChunkSpec spec{dtype, {}};
  const auto parts = split(text, '+');
  for (const auto& part_text : parts) {
    const Part p(text, part_text);
    if (p.name().empty()) p.fail("empty codec name");
    if (p.name() == "none") {
      p.at_most(0);
      if (parts.size() > 1) p.fail("'none' cannot be combined with other codecs");
      continue;
    }
    Forms f = forms_of(p, dtype);
    // Built once through the registry: bad levels, unknown blosc compressors fail here.
    try {
      if (zarr_format == 3) {
        const std::string name = f.v3["name"].get<std::string>();
        const json config = f.v3.contains("configuration") ? f.v3["configuration"] : json::object();
        if (v3_codec_kind(name) == CodecKind::ArrayToArray) {
          if (!v3.empty()) p.fail("'" + p.name() + "' must come before the compressors");
          make_array_codec(name, config, spec);
        } else {
          make_bytes_codec(name, config, spec);
        }
      } else {
        if (f.v2.is_null()) p.fail("'" + p.name() + "' is a Zarr v3 codec here (zarr-python 2 cannot read it)");
        if (!v2.is_null()) p.fail("Zarr v2 takes one compressor, got more");
        make_v2_bytes_codec(f.v2, dtype);
      }
    } catch (const CodecError& e) {
      const std::string msg = e.what();
      if (msg.rfind("codec spec", 0) == 0) throw;
      p.fail(msg);
    }
    if (zarr_format == 3) v3.push_back(std::move(f.v3));
    else v2 = std::move(f.v2);
  }
  return zarr_format == 3 ? v3 : v2;
}

}  // namespace lazycube::codec
