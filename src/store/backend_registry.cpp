#include "backend_registry.hpp"

#include <algorithm>

#include "lazycube/error.hpp"

namespace lazycube {

void BackendRegistry::add(Backend backend) {
  if (backend.schemes.empty()) throw StoreError("a store backend registered without a URL scheme");
  for (const auto& b : backends_) {
    for (const auto& s : backend.schemes)
      if (std::find(b.schemes.begin(), b.schemes.end(), s) != b.schemes.end())
        throw StoreError("URL scheme '" + s + "' registered by two store backends");
    for (const auto& h : backend.https_hosts)
      if (std::find(b.https_hosts.begin(), b.https_hosts.end(), h) != b.https_hosts.end())
        throw StoreError("https host '" + h + "' registered by two store backends");
  }
  const auto at = std::upper_bound(backends_.begin(), backends_.end(), backend.listing_order,
                                   [](int order, const Backend& b) { return order < b.listing_order; });
  backends_.insert(at, std::move(backend));
}

void BackendRegistry::add_layer(StoreLayer layer) {
  for (const auto& l : layers_)
    if (l.name == layer.name) throw StoreError("store layer '" + std::string(layer.name) + "' registered twice");
  const auto at = std::upper_bound(layers_.begin(), layers_.end(), layer.order,
                                   [](int order, const StoreLayer& l) { return order < l.order; });
  layers_.insert(at, layer);
}

const BackendRegistry& backend_registry() {
  static const BackendRegistry registry = [] {
    BackendRegistry r;
    register_all_backends(r);
    return r;
  }();
  return registry;
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
  if (!url.backend || !url.backend->open)
    throw StoreError("unsupported URL scheme '" + url.scheme + "' in '" + url.canonical() + "' (this build reads " +
                     registered_schemes_text() + ")");
  Location location = url.backend->open(url, options);
  // The store layers (the persistent cache) wrap every network store here, the one place they
  // are opened.
  if (url.backend->takes_storage_options()) {
    const StorageOptions parsed = parse_storage_options(options, *url.backend);
    for (const auto& layer : backend_registry().layers()) location = layer.wrap(std::move(location), parsed);
  }
  return location;
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
