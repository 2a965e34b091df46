// Comma-separated option values: --variables V1,V2 and --input-dims / --input-overlap DIM=N,...
#include <set>

#include "commands.hpp"

namespace lazycube::cli {

namespace {

// The comma-separated items of every text, in order (empty items kept, to be reported).
std::vector<std::string> split_commas(const std::vector<std::string>& texts) {
  std::vector<std::string> items;
  for (const auto& text : texts) {
    std::size_t begin = 0;
    while (true) {
      const auto comma = text.find(',', begin);
      items.push_back(text.substr(begin, comma == std::string::npos ? comma : comma - begin));
      if (comma == std::string::npos) break;
      begin = comma + 1;
    }
  }
  return items;
}

}  // namespace

std::vector<std::string> parse_name_list(const std::vector<std::string>& texts, const std::string& option) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (auto& name : split_commas(texts)) {
    if (name.empty()) throw UsageProblem(option + " expects NAME,NAME,..., got an empty name");
    if (!seen.insert(name).second) throw UsageProblem(option + ": '" + name + "' given twice");
    names.push_back(std::move(name));
  }
  return names;
}

std::vector<std::pair<std::string, std::int64_t>> parse_dim_values(
    const std::vector<std::string>& texts, const std::string& option, std::optional<std::int64_t> min) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  std::set<std::string> seen;
  for (const auto& item : split_commas(texts)) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw UsageProblem(option + " expects DIM=N[,DIM=N...], got '" + item + "'");
    std::string dim = item.substr(0, eq);
    const std::int64_t value = parse_integer_arg(std::string_view(item).substr(eq + 1), option, item);
    if (min && value < *min)
      throw UsageProblem(option + " '" + item + "': " + dim + " must be at least " + std::to_string(*min));
    if (!seen.insert(dim).second) throw UsageProblem(option + ": dim '" + dim + "' given twice");
    out.emplace_back(std::move(dim), value);
  }
  return out;
}

}  // namespace lazycube::cli
