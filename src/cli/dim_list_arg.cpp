// Comma-separated option values: --variables V1,V2 and --input-dims / --input-overlap DIM=N,...
#include <set>

#include "commands.hpp"

namespace lazycube::cli {

namespace {

// The comma-separated items of every text, in order (empty items kept, to be reported); commas
// inside [...] (an edge list, DIM=[24,24,48]) do not separate items.
std::vector<std::string> split_commas(const std::vector<std::string>& texts) {
  std::vector<std::string> items;
  for (const auto& text : texts) {
    std::string item;
    int depth = 0;
    for (const char c : text) {
      if (c == '[') ++depth;
      if (c == ']' && depth > 0) --depth;
      if (c == ',' && depth == 0) {
        items.push_back(std::move(item));
        item.clear();
        continue;
      }
      item += c;
    }
    items.push_back(std::move(item));
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

DimLengths parse_dim_lengths(const std::vector<std::string>& texts, const std::string& option) {
  DimLengths out;
  for (const auto& item : split_commas(texts)) {
    const auto eq = item.find('=');
    const std::string form = option + " expects DIM=N or DIM=[N,N,...][,DIM=...], got '" + item + "'";
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) throw UsageProblem(form);
    const std::string dim = item.substr(0, eq);
    if (out.lengths.count(dim) || out.edges.count(dim)) throw UsageProblem(option + ": dim '" + dim + "' given twice");
    const std::string_view value = std::string_view(item).substr(eq + 1);
    if (value.front() != '[') {
      const std::int64_t n = parse_integer_arg(value, option, item);
      if (n < 1) throw UsageProblem(option + " '" + item + "': " + dim + " must be at least 1");
      out.lengths.emplace(dim, static_cast<std::uint64_t>(n));
      continue;
    }
    if (value.back() != ']' || value.size() < 3) throw UsageProblem(form);
    std::vector<std::uint64_t> edges;
    for (const auto& part : split_commas({std::string(value.substr(1, value.size() - 2))})) {
      const std::int64_t n = parse_integer_arg(part, option, item);
      if (n < 1) throw UsageProblem(option + " '" + item + "': every edge length of " + dim + " must be at least 1");
      edges.push_back(static_cast<std::uint64_t>(n));
    }
    out.edges.emplace(dim, std::move(edges));
  }
  return out;
}

}  // namespace lazycube::cli
