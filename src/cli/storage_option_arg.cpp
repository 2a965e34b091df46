// --option KEY=VALUE → storage options; --virtual/--virtual-option → virtual chunk containers;
// the open flags → OpenOptions.
#include "commands.hpp"
#include "lazycube/util/text.hpp"

namespace lazycube::cli {

StoreOptions parse_storage_options(const std::vector<std::string>& texts) {
  StoreOptions out;
  for (const auto& t : texts) {
    const auto eq = t.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageProblem("--option needs KEY=VALUE, got '" + t + "'");
    if (!out.emplace(t.substr(0, eq), t.substr(eq + 1)).second)
      throw UsageProblem("--option " + t.substr(0, eq) + " given twice");
  }
  return out;
}

namespace {

// --virtual PREFIX... with --virtual-option PREFIX:KEY=VALUE... -> prefix -> storage options.
// An option's prefix is the longest --virtual prefix the text starts with (followed by ':'), so
// prefixes may hold ':' themselves (s3://b/, http://host:8080/).
std::map<std::string, StoreOptions> parse_virtual_containers(const std::vector<std::string>& prefixes,
                                                             const std::vector<std::string>& options) {
  std::map<std::string, StoreOptions> out;
  for (const auto& p : prefixes) {
    if (p.empty()) throw UsageProblem("--virtual needs a URL prefix, e.g. s3://bucket/");
    if (!out.emplace(p, StoreOptions{}).second) throw UsageProblem("--virtual " + p + " given twice");
  }
  for (const auto& text : options) {
    const std::string* prefix = nullptr;
    for (const auto& p : prefixes)
      if (text.size() > p.size() && text.compare(0, p.size(), p) == 0 && text[p.size()] == ':' &&
          (!prefix || p.size() > prefix->size()))
        prefix = &p;
    if (!prefix)
      throw UsageProblem("--virtual-option '" + text + "': needs PREFIX:KEY=VALUE with a PREFIX given to --virtual" +
                         (prefixes.empty() ? std::string(" (none is)") : " (" + join_names(prefixes) + ")"));
    const std::string pair = text.substr(prefix->size() + 1);
    const auto eq = pair.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageProblem("--virtual-option '" + text + "': needs PREFIX:KEY=VALUE");
    if (!out[*prefix].emplace(pair.substr(0, eq), pair.substr(eq + 1)).second)
      throw UsageProblem("--virtual-option " + *prefix + ":" + pair.substr(0, eq) + " given twice");
  }
  return out;
}

}  // namespace

OpenOptions open_options_of(const OpenArgs& args) {
  OpenOptions o;
  o.storage_options = parse_storage_options(args.options);
  o.engine = args.engine;
  o.mask_valid_range = args.mask_valid_range;
  o.icechunk.version = args.version;
  o.icechunk.virtual_chunk_containers = parse_virtual_containers(args.virtual_prefixes, args.virtual_options);
  return o;
}

}  // namespace lazycube::cli
