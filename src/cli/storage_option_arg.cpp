// --option KEY=VALUE → storage options; --virtual/--virtual-option → virtual chunk containers;
// the open flags → OpenOptions.
#include "commands.hpp"
#include "lazycube/store/list_options.hpp"
#include "util/text.hpp"

namespace lazycube::cli {

namespace {

// One storage option "KEY=VALUE" (of --option, or of --virtual-option after its prefix) added to
// `out`; `flag`, `form` and `shown` (the whole argument) name it in the messages.
void add_key_value(const std::string& text, const std::string& flag, const std::string& form, const std::string& shown,
                   StoreOptions& out) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw UsageProblem(flag + " needs " + form + ", got '" + shown + "'");
  if (!out.emplace(text.substr(0, eq), text.substr(eq + 1)).second)
    throw UsageProblem(flag + " " + shown.substr(0, shown.size() - (text.size() - eq)) + " given twice");
  // A list-valued option (allowed_prefixes) parses now, by the one list parser, or the command
  // stops with a usage error naming it.
  try {
    check_list_options({{text.substr(0, eq), text.substr(eq + 1)}});
  } catch (const UsageError& e) {
    throw UsageProblem(flag + ": " + e.what());
  }
}

}  // namespace

StoreOptions parse_storage_options(const std::vector<std::string>& texts) {
  StoreOptions out;
  for (const auto& t : texts) add_key_value(t, "--option", "KEY=VALUE", t, out);
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
    add_key_value(text.substr(prefix->size() + 1), "--virtual-option", "PREFIX:KEY=VALUE", text, out[*prefix]);
  }
  return out;
}

}  // namespace

OpenOptions open_options_of(const OpenArgs& args) {
  OpenOptions o;
  o.storage_options = parse_storage_options(args.options);
  o.engine = args.engine;
  o.mask_valid_range = args.mask_valid_range;
  o.struct_fields = args.struct_fields;
  // The formats' options, one document (the format registry hands each format its keys).
  for (const auto& [key, value] : {std::pair{"branch", &args.version.branch}, std::pair{"tag", &args.version.tag},
                                   std::pair{"snapshot", &args.version.snapshot}})
    if (!value->empty()) o.format_options[key] = *value;
  if (!args.missing_chunks.empty()) o.format_options["missing_chunks"] = args.missing_chunks;
  for (const auto& [prefix, options] : parse_virtual_containers(args.virtual_prefixes, args.virtual_options)) {
    auto& container = o.format_options["virtual_chunk_containers"][prefix];
    container = nlohmann::json::object();
    for (const auto& [k, v] : options) container[k] = v;
  }
  return o;
}

}  // namespace lazycube::cli
