#include "url_scheme.hpp"

#include <cctype>

#include "backend_registry.hpp"

namespace lazycube {

namespace {

bool scheme_char(char c, bool first) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalpha(u) || (!first && (std::isdigit(u) || c == '+' || c == '-' || c == '.'));
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool has_role(const Backend* b, BackendRole role) { return b != nullptr && b->role == role; }

}  // namespace

bool ParsedUrl::is_local() const { return has_role(backend, BackendRole::Local); }
bool ParsedUrl::is_http() const { return has_role(backend, BackendRole::Http); }
bool ParsedUrl::is_object_store() const { return has_role(backend, BackendRole::ObjectStore); }
bool ParsedUrl::is_reference() const { return has_role(backend, BackendRole::References); }

std::string authority_host(std::string_view authority) {
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
  if (const auto colon = authority.find(':'); colon != std::string_view::npos) authority = authority.substr(0, colon);
  return lower(std::string(authority));
}

ParsedUrl parse_url_scheme(std::string_view url) {
  ParsedUrl p;
  const auto sep = url.find("://");
  bool has_scheme = sep != std::string_view::npos && sep > 0;
  for (std::size_t i = 0; has_scheme && i < sep; ++i) has_scheme = scheme_char(url[i], i == 0);
  if (!has_scheme) {
    p.backend = backend_for_scheme("file");
    p.rest = std::string(url);
    return p;
  }
  const std::string scheme = lower(std::string(url.substr(0, sep)));
  p.rest = std::string(url.substr(sep + 3));
  p.backend = backend_for_scheme(scheme);
  if (!p.backend) {
    p.scheme = scheme;
    return p;
  }
  // https keeps its name (http and https are one backend); a host another backend claims
  // (Azure's *.blob.core.windows.net) is read by that backend.
  p.scheme = scheme == "https" ? scheme : p.backend->name();
  if (scheme == "https")
    if (const Backend* claim = backend_for_https_host(authority_host(p.rest.substr(0, p.rest.find_first_of("/?#")))))
      p.backend = claim;
  return p;
}

}  // namespace lazycube
