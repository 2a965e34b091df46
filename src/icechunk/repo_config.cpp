#include "repo_config.hpp"

#include <cctype>
#include <cstring>

#include <flatbuffers/flexbuffers.h>

#include <nlohmann/json.hpp>

#include "lazycube/error.hpp"

namespace lazycube::icechunk {

namespace {

using nlohmann::json;

constexpr int kMaxDepth = 32;

// The FlexBuffers configuration being read: its bytes bound every key.
struct FlexSource {
  const std::uint8_t* begin;
  const std::uint8_t* end;
  const std::string& file;
};

// A key's text, its terminating NUL looked for inside the buffer: flatbuffers 2.0.8's verifier
// accepts a key without one (its VerifyKey stops at the first non-zero byte), and AsKey() alone
// would read past the end.
std::string key_text(const flexbuffers::Reference& k, const FlexSource& src) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(k.AsKey());
  const void* nul = p >= src.begin && p < src.end ? std::memchr(p, 0, static_cast<std::size_t>(src.end - p)) : nullptr;
  if (!nul) throw MetadataError(src.file + ": corrupt repository configuration (a FlexBuffers key without its end)");
  return std::string(reinterpret_cast<const char*>(p), static_cast<const std::uint8_t*>(nul) - p);
}

// Both encodings become the same JSON tree; a tagged YAML value `!kind X` and serde's externally
// tagged FlexBuffers map {"kind": X} read alike.
json from_flex(const flexbuffers::Reference& r, int depth, const FlexSource& src) {
  if (depth > kMaxDepth) throw MetadataError(src.file + ": the repository configuration nests too deeply");
  if (r.IsNull()) return nullptr;
  if (r.IsBool()) return r.AsBool();
  if (r.IsUInt()) return r.AsUInt64();
  if (r.IsInt()) return r.AsInt64();
  if (r.IsFloat()) return r.AsDouble();
  if (r.IsString()) return r.AsString().str();
  if (r.IsKey()) return key_text(r, src);
  if (r.IsMap()) {
    const auto m = r.AsMap();
    const auto keys = m.Keys();
    const auto values = m.Values();
    json out = json::object();
    for (std::size_t i = 0; i < m.size(); ++i) out[key_text(keys[i], src)] = from_flex(values[i], depth + 1, src);
    return out;
  }
  if (r.IsAnyVector()) {
    const auto v = r.AsVector();
    json out = json::array();
    for (std::size_t i = 0; i < v.size(); ++i) out.push_back(from_flex(v[i], depth + 1, src));
    return out;
  }
  return nullptr;  // blobs: nothing lazycube reads
}

std::string text_or_empty(const json& doc, const char* key) {
  const auto it = doc.find(key);
  return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The options lazycube's stores take from an S3-like declaration (S3Options of Icechunk).
StoreOptions s3_options(const json& o) {
  StoreOptions out;
  if (!o.is_object()) return out;
  if (auto e = text_or_empty(o, "endpoint_url"); !e.empty()) out["endpoint_url"] = e;
  if (auto r = text_or_empty(o, "region"); !r.empty()) out["region_name"] = r;
  if (auto a = o.find("anonymous"); a != o.end() && a->is_boolean() && a->get<bool>()) out["anon"] = "true";
  return out;
}

// The options lazycube takes from a GCS or Azure declaration: Icechunk keeps these as the Rust
// object_store crate's string options; the ones with a lazycube equivalent are carried
// (spellings with and without the crate's prefixes), the rest (credentials are the user's
// business) ignored. Keys are matched case-insensitively.
StoreOptions string_map_options(const json& o, const std::vector<std::pair<std::string_view, std::string_view>>& names) {
  StoreOptions out;
  if (!o.is_object()) return out;
  for (const auto& [key, value] : o.items()) {
    if (!value.is_string()) continue;
    std::string k = key;
    for (auto& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const auto& [theirs, ours] : names)
      if (k == theirs) out[std::string(ours)] = value.get<std::string>();
  }
  return out;
}

StoreOptions gcs_options(const json& o) {
  return string_map_options(o, {{"google_service_account", "token"},
                                {"service_account", "token"},
                                {"google_service_account_path", "token"},
                                {"service_account_path", "token"}});
}

StoreOptions azure_options(const json& o) {
  return string_map_options(o, {{"azure_storage_account_name", "account_name"}, {"account_name", "account_name"}});
}

std::vector<DeclaredContainer> containers_from(const json& config, const std::string& file) {
  std::vector<DeclaredContainer> out;
  if (!config.is_object()) return out;
  const auto vcc = config.find("virtual_chunk_containers");
  if (vcc == config.end() || vcc->is_null()) return out;
  if (!vcc->is_object())
    throw MetadataError(file + ": virtual_chunk_containers of the repository configuration is not a mapping");
  for (const auto& [key, c] : vcc->items()) {
    if (!c.is_object()) throw MetadataError(file + ": virtual chunk container '" + key + "' is not a mapping");
    DeclaredContainer d;
    d.name = text_or_empty(c, "name");
    d.url_prefix = text_or_empty(c, "url_prefix");
    if (d.url_prefix.empty()) d.url_prefix = key;  // spec 2 keys containers by their prefix
    const auto store = c.find("store");
    if (store != c.end() && store->is_object() && store->size() == 1) {
      d.kind = store->begin().key();
      const json& settings = store->begin().value();
      if (d.kind == "s3_compatible" || d.kind == "s3" || d.kind == "tigris") d.options = s3_options(settings);
      if (d.kind == "gcs") d.options = gcs_options(settings);
      if (d.kind == "azure") d.options = azure_options(settings);
    } else if (store != c.end() && store->is_string()) {
      d.kind = store->get<std::string>();  // a unit variant ("in_memory")
    } else {
      throw MetadataError(file + ": virtual chunk container '" + key + "' has no store (one of s3_compatible, s3, gcs, azure, http, local_file_system, ...)");
    }
    out.push_back(std::move(d));
  }
  return out;
}

// ---- the YAML subset of config.yaml ------------------------------------------------------

struct Line {
  std::size_t indent = 0;
  std::string_view text;  // without indentation
  std::size_t number = 0;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

class YamlSubset {
 public:
  YamlSubset(std::vector<Line> lines, std::string file) : lines_(std::move(lines)), file_(std::move(file)) {}

  // The mapping of the lines from `pos` indented by at least `indent`.
  json mapping(std::size_t& pos, std::size_t indent) {
    json out = json::object();
    const std::size_t own = pos < lines_.size() ? lines_[pos].indent : 0;
    while (pos < lines_.size() && lines_[pos].indent >= indent) {
      const Line& l = lines_[pos];
      if (l.indent != own) fail(l, "unexpected indentation");
      if (l.text.starts_with("- ")) fail(l, "sequences are not supported here");
      const auto colon = key_end(l);
      const std::string_view key_text = trim(l.text.substr(0, colon));
      const json key_value = scalar(key_text, l);
      // A key that reads as another scalar (`true:`, `null:`) is taken as written.
      std::string key = key_value.is_string() ? key_value.get<std::string>() : std::string(key_text);
      std::string_view rest = trim(l.text.substr(colon + 1));
      ++pos;
      std::string tag;
      if (rest.starts_with("!")) {
        const auto space = rest.find(' ');
        tag = std::string(rest.substr(1, space == std::string_view::npos ? rest.size() - 1 : space - 1));
        rest = space == std::string_view::npos ? std::string_view() : trim(rest.substr(space + 1));
      }
      json value;
      if (rest.empty()) value = pos < lines_.size() && lines_[pos].indent > own ? mapping(pos, own + 1) : json(nullptr);
      else value = scalar(rest, l);
      out[key] = tag.empty() ? std::move(value) : json{{tag, std::move(value)}};
    }
    return out;
  }

 private:
  [[noreturn]] void fail(const Line& l, const std::string& why) const {
    throw MetadataError(file_ + ":" + std::to_string(l.number) + ": cannot read the virtual chunk containers (" + why +
                        ")");
  }

  std::size_t key_end(const Line& l) const {
    if (!l.text.empty() && (l.text.front() == '\'' || l.text.front() == '"')) {
      const auto close = l.text.find(l.text.front(), 1);
      if (close != std::string_view::npos && l.text.substr(close + 1).starts_with(":")) return close + 1;
    } else if (const auto c = l.text.find(": "); c != std::string_view::npos) {
      return c;
    } else if (l.text.ends_with(":")) {
      return l.text.size() - 1;
    }
    fail(l, "expected 'key: value'");
  }

  json scalar(std::string_view s, const Line& l) const {
    if (s == "null" || s == "~") return nullptr;
    if (s == "true") return true;
    if (s == "false") return false;
    if (s == "{}") return json::object();
    if (s == "[]") return json::array();
    if (s.starts_with("'")) {
      if (s.size() < 2 || !s.ends_with("'")) fail(l, "unterminated quoted string");
      std::string out;
      for (std::size_t i = 1; i + 1 < s.size(); ++i) {
        out += s[i];
        if (s[i] == '\'' && s[i + 1] == '\'') ++i;  // '' is a quote
      }
      return out;
    }
    if (s.starts_with("\"")) {
      const auto parsed = json::parse(s, nullptr, false);  // YAML's double-quoted escapes are JSON's (enough here)
      if (!parsed.is_string()) fail(l, "bad double-quoted string");
      return parsed;
    }
    if (s.starts_with("{") || s.starts_with("[") || s.starts_with("&") || s.starts_with("*") || s.starts_with("|") ||
        s.starts_with(">"))
      fail(l, "flow collections, anchors and block scalars are not supported here");
    return std::string(s);  // numbers stay text: none of the fields read is numeric
  }

  std::vector<Line> lines_;
  std::string file_;
};

}  // namespace

std::vector<DeclaredContainer> containers_from_flexbuffers(const std::uint8_t* data, std::size_t size,
                                                           const std::string& file) {
  if (!data || size == 0) return {};
  if (!flexbuffers::VerifyBuffer(data, size))
    throw MetadataError(file + ": corrupt repository configuration (FlexBuffers verification failed)");
  return containers_from(from_flex(flexbuffers::GetRoot(data, size), 0, FlexSource{data, data + size, file}), file);
}

std::vector<DeclaredContainer> containers_from_yaml(std::string_view text, const std::string& file) {
  // Only the top-level `virtual_chunk_containers:` block is read; the rest of the file (other
  // settings, in whatever YAML) is not lazycube's business.
  std::vector<Line> block;
  bool inside = false;
  std::string_view inline_value;
  std::size_t number = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view raw = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++number;
    if (trim(raw).empty() || trim(raw).starts_with("#")) continue;
    const std::size_t indent = raw.find_first_not_of(' ');
    if (indent == 0) {
      if (inside) break;
      if (raw.starts_with("virtual_chunk_containers:")) {
        inside = true;
        inline_value = trim(raw.substr(25));
      }
      continue;
    }
    if (inside) block.push_back({indent, trim(raw), number});
  }
  if (!inside) return {};
  json vcc = nullptr;
  if (!inline_value.empty() && inline_value != "null" && inline_value != "{}")
    throw MetadataError(file + ": cannot read virtual_chunk_containers: '" + std::string(inline_value) + "'");
  if (!block.empty()) {
    std::size_t pos = 0;
    vcc = YamlSubset(block, file).mapping(pos, 1);
  }
  return containers_from(json{{"virtual_chunk_containers", vcc}}, file);
}

}  // namespace lazycube::icechunk
