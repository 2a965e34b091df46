// --option KEY=VALUE → storage options; the open flags → OpenOptions.
#include "commands.hpp"

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

OpenOptions open_options_of(const OpenArgs& args) {
  OpenOptions o;
  o.storage_options = parse_storage_options(args.options);
  o.engine = args.engine;
  o.mask_valid_range = args.mask_valid_range;
  return o;
}

}  // namespace lazycube::cli
