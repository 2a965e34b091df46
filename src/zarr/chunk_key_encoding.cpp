// Zarr chunk key encodings: default, v2, and the zarr-extensions registry's fanout, suffix and
// prefix (include/lazycube/zarr/chunk_key_encoding.hpp).
#include "lazycube/zarr/chunk_key_encoding.hpp"

#include <charconv>

#include <nlohmann/json.hpp>

#include "lazycube/error.hpp"

namespace lazycube::zarr {

using json = nlohmann::json;

namespace {

char separator_of(const json& encoding, char fallback, const std::string& where) {
  const auto c = encoding.find("configuration");
  if (c == encoding.end() || !c->is_object()) return fallback;
  const auto s = c->find("separator");
  if (s == c->end()) return fallback;
  if (!s->is_string() || (*s != "/" && *s != "."))
    throw MetadataError(where + ": chunk_key_encoding separator must be \".\" or \"/\", got " + s->dump());
  return s->get<std::string>()[0];
}

// A suffix or prefix must not turn a chunk key into a path out of the array's folder or onto
// its metadata (the registry's rules for prefix; but for the leading '/', applied to suffix too).
void check_affix(const std::string& affix, const std::string& field, const std::string& where) {
  const auto bad = [&](const std::string& why) {
    throw MetadataError(where + ": chunk_key_encoding " + field + " '" + affix + "' " + why);
  };
  if (affix.empty()) bad("is empty");
  if (field == "prefix" && affix.front() == '/') bad("begins with '/'");
  for (const char* s : {"..", "\\", "//", "zarr.json"})
    if (affix.find(s) != std::string::npos) bad(std::string("contains '") + s + "'");
  if (affix.find('\0') != std::string::npos) bad("contains a NUL byte");
}

bool read_number(std::string_view text, std::uint64_t& out) {
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && p == text.data() + text.size();
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  while (true) {
    const auto end = text.find(sep);
    parts.push_back(text.substr(0, end));
    if (end == std::string_view::npos) return parts;
    text.remove_prefix(end + 1);
  }
}

}  // namespace

ChunkKeyEncoding ChunkKeyEncoding::v3_default(char separator) {
  ChunkKeyEncoding e(Kind::Default);
  e.separator_ = separator;
  return e;
}

ChunkKeyEncoding ChunkKeyEncoding::v2(char separator) {
  ChunkKeyEncoding e(Kind::V2);
  e.separator_ = separator;
  return e;
}

ChunkKeyEncoding ChunkKeyEncoding::parse(const json& encoding, const std::string& where) {
  // The registry's own example of prefix writes base_encoding as a bare name.
  if (encoding.is_string()) return parse(json{{"name", encoding}}, where);
  if (!encoding.is_object())
    throw MetadataError(where + ": chunk_key_encoding must be an object, got " + encoding.dump());
  const auto name_it = encoding.find("name");
  if (name_it == encoding.end() || !name_it->is_string())
    throw MetadataError(where + ": chunk_key_encoding has no string 'name': " + encoding.dump());
  const std::string name = name_it->get<std::string>();
  const json conf = encoding.contains("configuration") ? encoding["configuration"] : json::object();
  if (!conf.is_object())
    throw MetadataError(where + ": chunk_key_encoding '" + name + "' configuration must be an object");

  if (name == "default") return v3_default(separator_of(encoding, '/', where));
  if (name == "v2") return v2(separator_of(encoding, '.', where));
  if (name == "fanout") {
    ChunkKeyEncoding e(Kind::Fanout);
    e.max_children_ = 1001;
    if (const auto m = conf.find("max_children"); m != conf.end()) {
      if (!m->is_number_integer() || m->get<std::int64_t>() <= 3)
        throw MetadataError(where + ": chunk_key_encoding fanout 'max_children' must be an integer greater than 3, got " +
                            m->dump());
      e.max_children_ = m->get<std::uint64_t>();
    }
    return e;
  }
  if (name == "suffix" || name == "prefix") {
    const std::string field = name;  // the configuration member holding the text
    ChunkKeyEncoding e(name == "suffix" ? Kind::Suffix : Kind::Prefix);
    const auto text = conf.find(field);
    if (text == conf.end() || !text->is_string())
      throw MetadataError(where + ": chunk_key_encoding " + name + " needs a string '" + field + "'");
    e.affix_ = text->get<std::string>();
    check_affix(e.affix_, field, where);
    // The suffix proposal spells the member base_encoding and, in one example, base-encoding.
    auto base = conf.find("base_encoding");
    if (base == conf.end()) base = conf.find("base-encoding");
    if (base == conf.end())
      throw MetadataError(where + ": chunk_key_encoding " + name + " needs 'base_encoding'");
    e.base_ = std::make_shared<const ChunkKeyEncoding>(parse(*base, where + ": " + name + " base_encoding"));
    return e;
  }
  throw MetadataError(where + ": unsupported chunk_key_encoding '" + name +
                      "' (lazycube reads default, v2, fanout, suffix and prefix)");
}

std::string ChunkKeyEncoding::key(std::span<const std::uint64_t> index) const {
  switch (kind_) {
    case Kind::Default: {
      std::string k = "c";
      for (const auto i : index) k.append(1, separator_).append(std::to_string(i));
      return k;
    }
    case Kind::V2: {
      if (index.empty()) return "0";
      std::string k;
      for (std::size_t d = 0; d < index.size(); ++d) {
        if (d > 0) k.push_back(separator_);
        k += std::to_string(index[d]);
      }
      return k;
    }
    case Kind::Fanout: {
      // Each coordinate as `d{dim}` then its digits in base max_children - 1, most significant
      // first; "c" names the chunk itself.
      const std::uint64_t base = max_children_ - 1;
      std::string k;
      for (std::size_t d = 0; d < index.size(); ++d) {
        k.append("d").append(std::to_string(d)).push_back('/');
        std::vector<std::uint64_t> digits;
        std::uint64_t v = index[d];
        do {
          digits.push_back(v % base);
          v /= base;
        } while (v > 0);
        for (auto it = digits.rbegin(); it != digits.rend(); ++it) k.append(std::to_string(*it)).push_back('/');
      }
      return k + "c";
    }
    case Kind::Suffix: return base_->key(index) + affix_;
    case Kind::Prefix: return affix_ + base_->key(index);
  }
  return {};
}

std::optional<std::vector<std::uint64_t>> ChunkKeyEncoding::parse_key(std::string_view key, std::size_t ndim) const {
  std::vector<std::uint64_t> index;
  switch (kind_) {
    case Kind::Default: {
      if (key == "c") return ndim == 0 ? std::optional(index) : std::nullopt;
      if (ndim == 0 || key.size() < 2 || key[0] != 'c' || key[1] != separator_) return std::nullopt;
      key.remove_prefix(2);
      [[fallthrough]];
    }
    case Kind::V2: {
      if (kind_ == Kind::V2 && ndim == 0) return key == "0" ? std::optional(index) : std::nullopt;
      for (const auto part : split(key, separator_)) {
        std::uint64_t v = 0;
        if (!read_number(part, v)) return std::nullopt;
        index.push_back(v);
      }
      break;
    }
    case Kind::Fanout: {
      const auto parts = split(key, '/');
      if (parts.empty() || parts.back() != "c") return std::nullopt;
      const std::uint64_t base = max_children_ - 1;
      for (std::size_t i = 0; i + 1 < parts.size();) {
        if (parts[i] != "d" + std::to_string(index.size())) return std::nullopt;
        std::uint64_t v = 0;
        std::size_t digits = 0;
        for (++i; i + 1 < parts.size() && !parts[i].starts_with('d'); ++i, ++digits) {
          std::uint64_t digit = 0;
          if (!read_number(parts[i], digit) || digit >= base) return std::nullopt;
          if (v > (UINT64_MAX - digit) / base) return std::nullopt;
          v = v * base + digit;
        }
        if (digits == 0) return std::nullopt;
        index.push_back(v);
      }
      break;
    }
    case Kind::Suffix:
      if (!key.ends_with(affix_)) return std::nullopt;
      key.remove_suffix(affix_.size());
      return base_->index_of(key, ndim);
    case Kind::Prefix:
      if (!key.starts_with(affix_)) return std::nullopt;
      key.remove_prefix(affix_.size());
      return base_->index_of(key, ndim);
  }
  if (index.size() != ndim) return std::nullopt;
  return index;
}

std::optional<std::vector<std::uint64_t>> ChunkKeyEncoding::index_of(std::string_view key, std::size_t ndim) const {
  auto index = parse_key(key, ndim);
  // Only the key this encoding writes for that index ("01", "+1" or a leading zero digit name
  // no chunk).
  if (index && this->key(*index) != key) return std::nullopt;
  return index;
}

json ChunkKeyEncoding::to_json() const {
  switch (kind_) {
    case Kind::Default:
    case Kind::V2:
      return {{"name", kind_ == Kind::Default ? "default" : "v2"},
              {"configuration", {{"separator", std::string(1, separator_)}}}};
    case Kind::Fanout: return {{"name", "fanout"}, {"configuration", {{"max_children", max_children_}}}};
    case Kind::Suffix:
    case Kind::Prefix: {
      const std::string name = kind_ == Kind::Suffix ? "suffix" : "prefix";
      return {{"name", name}, {"configuration", {{name, affix_}, {"base_encoding", base_->to_json()}}}};
    }
  }
  return {};
}

}  // namespace lazycube::zarr
