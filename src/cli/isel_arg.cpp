#include <charconv>
#include <optional>

#include "commands.hpp"

namespace lazycube::cli {

std::int64_t parse_integer_arg(std::string_view s, const std::string& option,
                               const std::string& whole) {
  std::string_view digits = s;
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size())
    throw UsageProblem(option + " '" + whole + "': '" + std::string(s) + "' is not an integer");
  return v;
}

namespace {

std::optional<std::int64_t> parse_int(std::string_view s, const std::string& whole) {
  if (s.empty()) return std::nullopt;
  return parse_integer_arg(s, "--isel", whole);
}

}  // namespace

std::pair<std::string, Indexer> parse_isel(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw UsageProblem("--isel expects DIM=INDEX or DIM=START:STOP[:STEP], got '" + text + "'");
  const std::string dim = text.substr(0, eq);
  const std::string_view spec = std::string_view(text).substr(eq + 1);
  if (spec.find(':') == std::string_view::npos) return {dim, *parse_int(spec, text)};
  std::vector<std::string_view> parts;
  std::size_t begin = 0;
  while (true) {
    const auto colon = spec.find(':', begin);
    parts.push_back(spec.substr(begin, colon == std::string_view::npos ? colon : colon - begin));
    if (colon == std::string_view::npos) break;
    begin = colon + 1;
  }
  if (parts.size() > 3) throw UsageProblem("--isel '" + text + "': too many ':'");
  Slice slice;
  slice.start = parse_int(parts[0], text);
  slice.stop = parse_int(parts[1], text);
  if (parts.size() == 3) {
    if (auto step = parse_int(parts[2], text)) slice.step = *step;
    if (slice.step == 0) throw UsageProblem("--isel '" + text + "': slice step cannot be zero");
  }
  return {dim, slice};
}

}  // namespace lazycube::cli
