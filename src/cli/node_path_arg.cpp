// Variables named by node paths inside a hierarchy ("group1/array") -> OpenOptions::group + names.
#include "commands.hpp"
#include "lazycube/format/registry.hpp"

namespace lazycube::cli {

std::vector<std::string> node_path_variables(const std::string& url, const std::vector<std::string>& names,
                                             OpenOptions& options) {
  std::size_t paths = 0;
  for (const auto& n : names) paths += n.find('/') != std::string::npos;
  // Files read by GDAL name their arrays "group/var" themselves.
  const format::Format* by_url = format::url_format(url, options.engine);
  if (paths == 0 || (by_url && !by_url->has_nodes)) return names;
  if (paths != names.size())
    throw UsageProblem("variables given as node paths (group/array) and as names together: give all as paths");
  std::vector<std::string> out;
  std::string group;
  for (const auto& n : names) {
    const auto slash = n.rfind('/');
    const std::string parent = n.substr(0, slash);
    if (!out.empty() && parent != group)
      throw UsageProblem("'" + n + "' is not in group '" + group + "': the variables read together share one group");
    group = parent;
    out.push_back(n.substr(slash + 1));
    if (out.back().empty()) throw UsageProblem("'" + n + "' names no array (a path ends with the array's name)");
  }
  // One array opens alone: the other arrays of its group need not share its dims.
  options.group = names.size() == 1 ? names.front() : group;
  return out;
}

}  // namespace lazycube::cli
