#include "backend_registry.hpp"

#include "lazycube/error.hpp"

namespace lazycube {

void BackendRegistry::add(Backend backend) { backends_.push_back(std::move(backend)); }

const BackendRegistry& backend_registry() {
  // The one list of backends (see the header for why it is explicit).
  static const BackendRegistry registry = [] {
    BackendRegistry r;
    register_file_backend(r);
    register_http_backend(r);
    register_s3_backend(r);
    register_gs_backend(r);
    register_az_backend(r);
    register_reference_backend(r);
    return r;
  }();
  return registry;
}

const Backend* find_backend(UrlKind kind) {
  if (kind == UrlKind::Local) kind = UrlKind::File;
  for (const auto& b : backend_registry().backends())
    if (b.kind == kind) return &b;
  // http and https are one backend, registered under Http.
  if (kind == UrlKind::Https) return find_backend(UrlKind::Http);
  return nullptr;
}

const Backend* backend_for_scheme(std::string_view scheme) {
  for (const auto& b : backend_registry().backends())
    for (const auto& s : b.schemes)
      if (s == scheme) return &b;
  return nullptr;
}

const Backend* backend_for_https_host(std::string_view host) {
  for (const auto& b : backend_registry().backends())
    for (const std::string& pattern : b.https_hosts) {
      if (pattern.starts_with("*.")) {
        const std::string_view suffix = std::string_view(pattern).substr(1);  // ".example.com"
        if (host.size() > suffix.size() && host.ends_with(suffix)) return &b;
      } else if (host == pattern) {
        return &b;
      }
    }
  return nullptr;
}

Location open_registered(const ParsedUrl& url, const StoreOptions& options) {
  const Backend* b = find_backend(url.kind);
  if (!b || !b->open)
    throw StoreError("unsupported URL scheme '" + url.scheme + "' in '" + url.canonical() + "' (this build reads " +
                     registered_schemes_text() + ")");
  return b->open(url, options);
}

std::string registered_schemes_text() {
  std::string out;
  for (const auto& b : backend_registry().backends()) {
    if (b.describe.empty()) continue;
    out += (out.empty() ? "" : ", ") + std::string(b.describe);
  }
  return out;
}

}  // namespace lazycube
