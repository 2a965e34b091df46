#include "url_scheme.hpp"

#include <cctype>
#include <utility>

namespace lazycube {

namespace {

// The one scheme table.
constexpr std::pair<std::string_view, UrlKind> kSchemes[] = {
    {"file", UrlKind::File}, {"http", UrlKind::Http}, {"https", UrlKind::Https}, {"s3", UrlKind::S3},
    {"gs", UrlKind::Gs},     {"gcs", UrlKind::Gs},    {"reference", UrlKind::Reference},
};

bool scheme_char(char c, bool first) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalpha(u) || (!first && (std::isdigit(u) || c == '+' || c == '-' || c == '.'));
}

}  // namespace

std::string_view scheme_name(UrlKind kind) {
  for (const auto& [name, k] : kSchemes)
    if (k == kind) return name;  // the first entry of a kind is its canonical name
  return "";
}

ParsedUrl parse_url_scheme(std::string_view url) {
  ParsedUrl p;
  const auto sep = url.find("://");
  bool has_scheme = sep != std::string_view::npos && sep > 0;
  for (std::size_t i = 0; has_scheme && i < sep; ++i) has_scheme = scheme_char(url[i], i == 0);
  if (!has_scheme) {
    p.rest = std::string(url);
    return p;
  }
  std::string scheme(url.substr(0, sep));
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  p.rest = std::string(url.substr(sep + 3));
  p.kind = UrlKind::Unsupported;
  p.scheme = scheme;
  for (const auto& [name, kind] : kSchemes)
    if (scheme == name) {
      p.kind = kind;
      p.scheme = std::string(scheme_name(kind));
    }
  return p;
}

std::string remote_schemes_text() { return "local paths, file://, http(s)://, s3://, gs:// (or gcs://)"; }

}  // namespace lazycube
