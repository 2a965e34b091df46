// Kerchunk JSON parsing with simdjson (reference sets can be hundreds of MB).
#include "reference_spec.hpp"

#include <simdjson.h>

#include <cctype>
#include <unordered_map>

#include "lazycube/error.hpp"
#include "util/text.hpp"

namespace lazycube::refs {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw MetadataError("kerchunk references " + where + ": " + what);
}

// ---- "{{ expression }}" rendering (the small part of Jinja that kerchunk files use) ----

class ExprParser {
 public:
  ExprParser(std::string_view text, const std::map<std::string, std::int64_t>& ints, const std::string& what)
      : s_(text), ints_(ints), what_(what) {}

  std::int64_t parse() {
    std::int64_t v = sum();
    skip_space();
    if (pos_ != s_.size()) fail("unexpected '" + std::string(s_.substr(pos_)) + "'");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw MetadataError("template '{{" + std::string(s_) + "}}' in " + what_ + ": " + why);
  }
  // Every operation is checked: a hostile file must not overflow int64 (undefined behaviour).
  [[noreturn]] void overflow() const { fail("the value does not fit a 64-bit integer"); }
  std::int64_t add(std::int64_t a, std::int64_t b) const {
    std::int64_t r;
    if (__builtin_add_overflow(a, b, &r)) overflow();
    return r;
  }
  std::int64_t sub(std::int64_t a, std::int64_t b) const {
    std::int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) overflow();
    return r;
  }
  std::int64_t mul(std::int64_t a, std::int64_t b) const {
    std::int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) overflow();
    return r;
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(std::string_view tok) {
    skip_space();
    if (s_.substr(pos_, tok.size()) != tok) return false;
    pos_ += tok.size();
    return true;
  }
  std::int64_t sum() {
    std::int64_t v = product();
    for (;;) {
      if (eat("+")) v = add(v, product());
      else if (eat("-")) v = sub(v, product());
      else return v;
    }
  }
  std::int64_t product() {
    std::int64_t v = factor();
    for (;;) {
      if (eat("*")) {
        v = mul(v, factor());
      } else if (eat("//") || eat("/")) {
        const std::int64_t d = factor();
        if (d == 0) fail("division by zero");
        if (d == -1) {
          v = sub(0, v);
          continue;
        }
        v = v / d - ((v % d != 0 && ((v < 0) != (d < 0))) ? 1 : 0);  // Python's floor division
      } else if (eat("%")) {
        const std::int64_t d = factor();
        if (d == 0) fail("division by zero");
        if (d == -1) {
          v = 0;
          continue;
        }
        v = v % d;
        if (v != 0 && ((v < 0) != (d < 0))) v += d;  // Python's sign: that of the divisor
      } else {
        return v;
      }
    }
  }
  std::int64_t factor() {
    skip_space();
    // Nesting is bounded: each level is a frame of recursion.
    if (++depth_ > kMaxDepth) fail("nested more than " + std::to_string(kMaxDepth) + " levels deep");
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth_};
    if (eat("(")) {
      std::int64_t v = sum();
      if (!eat(")")) fail("missing ')'");
      return v;
    }
    if (eat("-")) return sub(0, factor());
    if (eat("+")) return factor();
    if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      std::int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_])))
        v = add(mul(v, 10), s_[pos_++] - '0');
      return v;
    }
    const std::size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    if (start == pos_) fail(pos_ < s_.size() ? "unexpected '" + std::string(1, s_[pos_]) + "'" : "expression ends early");
    const std::string name(s_.substr(start, pos_ - start));
    auto it = ints_.find(name);
    if (it == ints_.end()) fail("unknown name '" + name + "'");
    return it->second;
  }

  static constexpr int kMaxDepth = 200;
  std::string_view s_;
  const std::map<std::string, std::int64_t>& ints_;
  const std::string& what_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

std::string_view string_of(element e, const std::string& where, const std::string& what) {
  std::string_view s;
  if (e.get(s) != simdjson::SUCCESS) bad(where, what + " must be a string");
  return s;
}

// A non-negative integer given as a JSON number or (in `gen`) as a rendered template.
std::uint64_t unsigned_of(element e, const std::string& where, const std::string& what) {
  std::uint64_t u = 0;
  if (e.get(u) == simdjson::SUCCESS) return u;
  std::int64_t i = 0;
  if (e.get(i) == simdjson::SUCCESS) bad(where, what + " must not be negative, got " + std::to_string(i));
  bad(where, what + " must be a non-negative integer");
}

std::uint64_t parse_unsigned_text(const std::string& text, const std::string& where, const std::string& what) {
  const std::string t = trim(text);
  if (t.empty() || t.size() > 19) bad(where, what + " '" + t + "' is not a non-negative integer");
  std::uint64_t v = 0;
  for (char c : t) {
    if (!std::isdigit(static_cast<unsigned char>(c))) bad(where, what + " '" + t + "' is not a non-negative integer");
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

class Builder {
 public:
  explicit Builder(std::string where) : where_(std::move(where)) {}

  std::uint32_t target_index(const std::string& url) {
    auto [it, fresh] = index_.emplace(url, static_cast<std::uint32_t>(set_.targets.size()));
    if (fresh) {
      if (set_.targets.size() >= ReferenceEntry::kInline - 1) bad(where_, "too many distinct target URLs");
      set_.targets.push_back(url);
    }
    return it->second;
  }

  // One `refs` value: a string (inline), an object (inline JSON), [url] or [url, offset, length].
  void add_value(const std::string& key, element v, const std::map<std::string, std::string>& templates) {
    const std::string where = where_ + ", key '" + key + "'";
    ReferenceEntry e;
    switch (v.type()) {
      case element_type::STRING: {
        std::string_view s = string_of(v, where, "value");
        if (s.rfind("base64:", 0) == 0) {
          auto raw = base64_decode(s.substr(7));
          if (!raw) bad(where, "invalid base64 after 'base64:'");
          e.data = std::move(*raw);
        } else {
          e.data = std::string(s);
        }
        break;
      }
      case element_type::OBJECT: e.data = simdjson::minify(v); break;
      case element_type::ARRAY: {
        simdjson::dom::array a = v.get_array().value_unsafe();
        const std::size_t n = a.size();
        if (n != 1 && n != 3)
          bad(where, "a reference list must be [url] or [url, offset, length], got " + std::to_string(n) + " items");
        std::string url(string_of(a.at(0).value_unsafe(), where, "the target url"));
        if (url.find("{{") != std::string::npos) url = render_template(url, {}, templates, where);
        if (url.empty()) bad(where, "empty target url");
        e.target = target_index(url);
        if (n == 3) {
          e.offset = unsigned_of(a.at(1).value_unsafe(), where, "offset");
          e.length = unsigned_of(a.at(2).value_unsafe(), where, "length");
          if (e.length == ReferenceEntry::kWholeObject || e.offset > ReferenceEntry::kWholeObject - e.length)
            bad(where, "offset + length overflows");
        }
        break;
      }
      default: bad(where, "expected a string, an object or a list");
    }
    if (key.empty()) bad(where_, "empty key");
    set_.entries.insert_or_assign(key, std::move(e));
  }

  void add_gen(element g, std::size_t index, const std::map<std::string, std::string>& templates) {
    const std::string where = where_ + ", gen[" + std::to_string(index) + "]";
    simdjson::dom::object obj;
    if (g.get(obj) != simdjson::SUCCESS) bad(where, "must be an object");
    element key_el, url_el, dims_el, off_el, len_el;
    if (obj["key"].get(key_el) != simdjson::SUCCESS) bad(where, "has no 'key'");
    if (obj["url"].get(url_el) != simdjson::SUCCESS) bad(where, "has no 'url'");
    if (obj["dimensions"].get(dims_el) != simdjson::SUCCESS) bad(where, "has no 'dimensions'");
    const bool has_off = obj["offset"].get(off_el) == simdjson::SUCCESS;
    const bool has_len = obj["length"].get(len_el) == simdjson::SUCCESS;
    if (has_off != has_len) bad(where, "needs both 'offset' and 'length' or neither");
    const std::string key_t(string_of(key_el, where, "'key'"));
    const std::string url_t(string_of(url_el, where, "'url'"));

    // Each dimension: {start, stop, step} (a Python range) or an explicit list of integers.
    std::vector<std::string> names;
    std::vector<std::vector<std::int64_t>> values;
    simdjson::dom::object dims;
    if (dims_el.get(dims) != simdjson::SUCCESS) bad(where, "'dimensions' must be an object");
    std::uint64_t total = 1;
    for (auto [name, spec] : dims) {
      const std::string dw = where + ", dimension '" + std::string(name) + "'";
      std::vector<std::int64_t> vals;
      simdjson::dom::array list;
      simdjson::dom::object range;
      if (spec.get(list) == simdjson::SUCCESS) {
        for (element x : list) {
          std::int64_t i = 0;
          if (x.get(i) != simdjson::SUCCESS) bad(dw, "list items must be integers");
          vals.push_back(i);
        }
      } else if (spec.get(range) == simdjson::SUCCESS) {
        auto field = [&](const char* f, std::int64_t dflt, bool required) {
          element x;
          if (range[f].get(x) != simdjson::SUCCESS) {
            if (required) bad(dw, std::string("has no '") + f + "'");
            return dflt;
          }
          std::int64_t i = 0;
          if (x.get(i) != simdjson::SUCCESS) bad(dw, std::string("'") + f + "' must be an integer");
          return i;
        };
        const std::int64_t start = field("start", 0, false), stop = field("stop", 0, true), step = field("step", 1, false);
        if (step == 0) bad(dw, "'step' must not be 0");
        const std::int64_t span = step > 0 ? stop - start : start - stop;
        const std::int64_t astep = step > 0 ? step : -step;
        const std::uint64_t count = span <= 0 ? 0 : static_cast<std::uint64_t>((span + astep - 1) / astep);
        if (count > kMaxGeneratedKeys) bad(dw, "expands to more than " + std::to_string(kMaxGeneratedKeys) + " keys");
        for (std::uint64_t k = 0; k < count; ++k) vals.push_back(start + static_cast<std::int64_t>(k) * step);
      } else {
        bad(dw, "must be {start, stop, step} or a list");
      }
      total *= std::max<std::uint64_t>(vals.size(), 1);
      if (vals.empty()) total = 0;
      if (total > kMaxGeneratedKeys) bad(where, "expands to more than " + std::to_string(kMaxGeneratedKeys) + " keys");
      names.emplace_back(name);
      values.push_back(std::move(vals));
    }
    if (total == 0) return;
    // Odometer over the cartesian product, last dimension fastest (like itertools.product).
    std::vector<std::size_t> at(names.size(), 0);
    std::map<std::string, std::int64_t> ints;
    for (;;) {
      for (std::size_t d = 0; d < names.size(); ++d) ints[names[d]] = values[d][at[d]];
      const std::string key = render_template(key_t, ints, templates, where + " 'key'");
      const std::string url = render_template(url_t, ints, templates, where + " 'url'");
      ReferenceEntry e;
      e.target = target_index(url);
      if (has_off) {
        auto number = [&](element x, const char* what) {
          std::string_view s;
          if (x.get(s) == simdjson::SUCCESS)
            return parse_unsigned_text(render_template(s, ints, templates, where + " '" + what + "'"), where, what);
          return unsigned_of(x, where, what);
        };
        e.offset = number(off_el, "offset");
        e.length = number(len_el, "length");
      }
      if (key.empty()) bad(where, "renders an empty key");
      set_.entries.insert_or_assign(key, std::move(e));
      std::size_t d = names.size();
      while (d > 0) {
        --d;
        if (++at[d] < values[d].size()) break;
        at[d] = 0;
        if (d == 0) return;
      }
      if (names.empty()) return;
    }
  }

  ReferenceSet take() { return std::move(set_); }

 private:
  std::string where_;
  ReferenceSet set_;
  std::unordered_map<std::string, std::uint32_t> index_;
};

simdjson::dom::object parse_object(simdjson::dom::parser& parser, const simdjson::padded_string& text,
                                   const std::string& where) {
  element root;
  if (auto err = parser.parse(text).get(root); err != simdjson::SUCCESS)
    bad(where, std::string("is not valid JSON (") + simdjson::error_message(err) + ")");
  simdjson::dom::object obj;
  if (root.get(obj) != simdjson::SUCCESS) bad(where, "must be a JSON object");
  return obj;
}

}  // namespace

std::string render_template(std::string_view text, const std::map<std::string, std::int64_t>& ints,
                            const std::map<std::string, std::string>& strings, const std::string& what) {
  std::string out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t open = text.find("{{", pos);
    if (open == std::string_view::npos) {
      out.append(text.substr(pos));
      break;
    }
    out.append(text.substr(pos, open - pos));
    const std::size_t close = text.find("}}", open + 2);
    if (close == std::string_view::npos)
      throw MetadataError("template in " + what + ": '{{' without '}}' in '" + std::string(text) + "'");
    const std::string expr = trim(text.substr(open + 2, close - open - 2));
    if (auto s = strings.find(expr); s != strings.end() && ints.find(expr) == ints.end())
      out += s->second;
    else
      out += std::to_string(ExprParser(expr, ints, what).parse());
    pos = close + 2;
  }
  return out;
}

ReferenceSet parse_reference_set(std::string_view json, const std::string& where) {
  simdjson::dom::parser parser;
  const simdjson::padded_string text(json);
  simdjson::dom::object root = parse_object(parser, text, where);
  Builder builder(where);

  element version_el;
  if (root["version"].get(version_el) != simdjson::SUCCESS) {
    // Version 0: the whole object is the key map.
    for (auto [key, value] : root) builder.add_value(std::string(key), value, {});
    return builder.take();
  }
  std::int64_t version = 0;
  if (version_el.get(version) != simdjson::SUCCESS || version != 1)
    bad(where, "unsupported 'version' " + simdjson::minify(version_el) + " (versions 0 and 1 are read)");

  std::map<std::string, std::string> templates;
  if (element t; root["templates"].get(t) == simdjson::SUCCESS && !t.is_null()) {
    simdjson::dom::object obj;
    if (t.get(obj) != simdjson::SUCCESS) bad(where, "'templates' must be an object");
    for (auto [name, value] : obj)
      templates[std::string(name)] = std::string(string_of(value, where, "template '" + std::string(name) + "'"));
  }
  if (element r; root["refs"].get(r) == simdjson::SUCCESS) {
    simdjson::dom::object refs;
    if (r.get(refs) != simdjson::SUCCESS) bad(where, "'refs' must be an object");
    for (auto [key, value] : refs) builder.add_value(std::string(key), value, templates);
  } else {
    bad(where, "version 1 needs a 'refs' object");
  }
  if (element g; root["gen"].get(g) == simdjson::SUCCESS && !g.is_null()) {
    simdjson::dom::array gens;
    if (g.get(gens) != simdjson::SUCCESS) bad(where, "'gen' must be a list");
    std::size_t i = 0;
    for (element entry : gens) builder.add_gen(entry, i++, templates);
  }
  return builder.take();
}

bool is_reference_set(std::string_view json) {
  // On-demand parsing: only the top-level keys up to the first telling one are looked at, so
  // detecting a reference set of hundreds of MB costs little.
  simdjson::ondemand::parser parser;
  const simdjson::padded_string text(json);
  simdjson::ondemand::document doc;
  if (parser.iterate(text).get(doc) != simdjson::SUCCESS) return false;
  simdjson::ondemand::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) return false;
  for (auto field : obj) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return false;
    if (key == "refs") {
      simdjson::ondemand::json_type type;
      return field.value().type().get(type) == simdjson::SUCCESS && type == simdjson::ondemand::json_type::object;
    }
    if (key == ".zgroup" || key == ".zattrs" || key == ".zarray" || key.ends_with("/.zgroup") ||
        key.ends_with("/.zarray"))
      return true;
  }
  return false;
}

}  // namespace lazycube::refs
