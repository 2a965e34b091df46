// The format registry and the one open path (lazycube/format/registry.hpp).
#include "lazycube/format/registry.hpp"

#include <algorithm>
#include <set>

#include "lazycube/error.hpp"
#include "lazycube/store/vsi_location.hpp"

namespace lazycube::format {

namespace {

using nlohmann::json;

// `path` + the group's components ("/a//b/" -> "a/b"); UsageError for "." or "..".
std::string node_below(const std::string& path, const std::string& group) {
  std::string out = path;
  while (!out.empty() && out.back() == '/') out.pop_back();
  std::size_t begin = 0;
  while (begin <= group.size()) {
    const auto end = std::min(group.find('/', begin), group.size());
    const std::string part = group.substr(begin, end - begin);
    if (part == "." || part == "..")
      throw UsageError("group '" + group + "': '" + part + "' is not a node name (give the path from the root)");
    if (!part.empty()) out += (out.empty() ? "" : "/") + part;
    begin = end + 1;
  }
  return out;
}

const Format& format_named(std::string_view engine) {
  const Format* f = registry().find(engine);
  if (!f) throw UsageError("unknown engine '" + std::string(engine) + "' (known: " + engines_text() + ")");
  return *f;
}

bool takes_key(const Format& f, const std::string& key) {
  return std::any_of(f.option_keys.begin(), f.option_keys.end(), [&](const auto& k) { return k.first == key; });
}

// Every key of the document is some format's, and each format accepts its values.
void check_document(const json& document) {
  if (document.is_null()) return;
  if (!document.is_object()) throw UsageError("format options must be a JSON object, not " + document.dump());
  for (const auto& item : document.items()) {
    const std::string& key = item.key();  // a plain reference: clang 14 cannot capture bindings
    const auto& all = registry().formats();
    if (std::none_of(all.begin(), all.end(), [&](const Format& f) { return takes_key(f, key); })) {
      std::string known;
      for (const auto& f : all)
        for (const auto& k : f.option_keys) known += (known.empty() ? "" : ", ") + k.first + " (" + f.engine + ")";
      throw UsageError("unknown format option '" + key + "' (known: " + known + ")");
    }
  }
  for (const auto& f : registry().formats())
    if (f.check_options) f.check_options(document);
}

// Where the request went, for the check that every option given was used.
struct Chain {
  std::vector<const Format*> formats;
  std::string url;  // for messages, without credentials
};

// A key given that no format of the chain takes, or a group for a format without nodes, is a
// UsageError naming it and what does take it.
void check_used(const Chain& chain, const Request& request) {
  const Format& last = *chain.formats.back();
  if (!request.group.empty() && !last.has_nodes)
    throw UsageError("group '" + request.group + "': only for formats with groups, not with the " + last.engine +
                     " engine (" + chain.url + ")");
  if (!request.format_options.is_object()) return;
  for (const auto& item : request.format_options.items()) {
    const std::string& key = item.key();
    const nlohmann::json& value = item.value();
    if (std::any_of(chain.formats.begin(), chain.formats.end(), [&](const Format* f) { return takes_key(*f, key); }))
      continue;
    const std::string text = value.dump();
    const auto& all = registry().formats();
    if (std::any_of(all.begin(), all.end(), [&](const Format& f) {
          return std::any_of(f.neutral_values.begin(), f.neutral_values.end(),
                             [&](const auto& n) { return n.first == key && n.second == text; });
        }))
      continue;
    std::string owners;
    for (const auto& f : registry().formats())
      if (takes_key(f, key)) owners += (owners.empty() ? "" : ", ") + f.describe;
    const std::string given = value.is_primitive() ? " = " + value.dump() : "";
    throw UsageError("format option '" + key + "'" + given + " applies to " + owners + " only; " + chain.url +
                     " is not one (it reads as " + last.describe + ")");
  }
}

// One round: every candidate's probes in one get_many (deduplicated). A failed round leaves the
// answers empty and each format reads what it needs itself.
Sniff sniff(const Location& location, const Request& request, const std::vector<const Format*>& candidates) {
  Sniff s;
  s.root = location;
  s.node = node_below(location.path, request.group);
  std::vector<ByteRequest> asks;
  std::set<std::string> seen;
  for (const Format* f : candidates) {
    if (!f->probes) continue;
    for (auto& r : f->probes(s, request))
      if (seen.insert(r.key + "\n" + r.range.describe()).second) asks.push_back(std::move(r));
  }
  if (asks.empty()) return s;
  try {
    auto got = location.store->get_many(asks);
    for (std::size_t i = 0; i < asks.size(); ++i) s.answers.emplace(asks[i].key, std::move(got[i]));
  } catch (const Error&) {
    s.answers.clear();
  }
  return s;
}

// Opens `location` with `forced` (or the first format that recognises it), then, while a format
// hands over a store of its own (a reference set, an Icechunk snapshot), the next one.
Contents open_chain(Location location, const Request& request, const Format* forced, Chain& chain) {
  for (int depth = 0; depth < 8; ++depth) {
    std::vector<const Format*> candidates;
    if (forced) {
      if (!forced->open_location)
        throw UsageError("engine '" + forced->engine + "' opens URLs, not store locations: call open(url, options)");
      candidates.push_back(forced);
    } else {
      for (const auto& f : registry().formats())
        if (f.open_location) candidates.push_back(&f);
    }
    const Sniff s = sniff(location, request, candidates);
    const Format* chosen = nullptr;
    for (const Format* f : candidates)
      if (forced || !f->recognises || f->recognises(s)) {
        chosen = f;
        break;
      }
    if (!chosen) throw NotFound("no format recognises " + location.store->describe(location.path));
    chain.formats.push_back(chosen);
    Opened opened = chosen->open_location(s, request);
    if (opened.contents) {
      check_used(chain, request);
      return std::move(*opened.contents);
    }
    if (!opened.next) throw MetadataError(chosen->engine + " format opened nothing at " + chain.url);
    location = std::move(*opened.next);
    forced = nullptr;  // what the layer holds is sniffed again
  }
  throw MetadataError(chain.url + ": formats nest more than 8 deep");
}

}  // namespace

void Registry::add(Format format) {
  if (find(format.engine)) throw UsageError("format engine '" + format.engine + "' registered twice");
  const auto at = std::upper_bound(formats_.begin(), formats_.end(), format.order,
                                   [](int order, const Format& f) { return order < f.order; });
  formats_.insert(at, std::move(format));
}

const Format* Registry::find(std::string_view engine) const {
  for (const auto& f : formats_)
    if (f.engine == engine) return &f;
  return nullptr;
}

const Registry& registry() {
  static const Registry r = [] {
    Registry out;
    register_all_formats(out);
    return out;
  }();
  return r;
}

const Format* url_format(std::string_view url, std::string_view engine) {
  if (!engine.empty()) {
    const Format& f = format_named(engine);
    return f.open_url ? &f : nullptr;
  }
  for (const auto& f : registry().formats())
    if (f.claims_url && f.claims_url(url)) return &f;
  return nullptr;
}

Contents open(std::string_view url, const Request& request) {
  check_document(request.format_options);
  Chain chain;
  chain.url = redact_url(url);
  const Format* forced = request.engine.empty() ? nullptr : &format_named(request.engine);
  if (const Format* by_url = url_format(url, request.engine)) {
    const Format& f = *by_url;
    chain.formats.push_back(&f);
    if (!f.has_nodes) check_used(chain, request);  // a file format: nothing below it, so check before reading
    Opened opened = f.open_url(url, request);
    if (opened.contents) {
      check_used(chain, request);
      return std::move(*opened.contents);
    }
    if (!opened.next) throw MetadataError(f.engine + " format opened nothing at " + chain.url);
    return open_chain(std::move(*opened.next), request, nullptr, chain);
  }
  return open_chain(open_location(url, request.storage_options), request, forced, chain);
}

Contents open(const Location& location, const Request& request) {
  check_document(request.format_options);
  Chain chain;
  chain.url = location.path.empty() ? location.store->url() : location.store->describe(location.path);
  const Format* forced = request.engine.empty() ? nullptr : &format_named(request.engine);
  return open_chain(location, request, forced, chain);
}

std::string engines_text() {
  std::string out;
  for (const auto& f : registry().formats()) out += (out.empty() ? "'" : ", '") + f.engine + "'";
  return out + " (or empty for auto-detection)";
}

}  // namespace lazycube::format
