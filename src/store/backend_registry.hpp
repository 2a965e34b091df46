// The registry of store backends: which URL schemes (and which https:// hosts) each backend
// reads, and the factory that opens a URL as a store. Every caller that turns a URL into a store
// or needs to know a URL's kind goes through here (parse_url_scheme, open_location, kerchunk
// reference targets, the GDAL mapping); messages listing what this build reads are generated
// from it.
//
// Adding a backend: one file defining `void register_X_backend(BackendRegistry&)` (schemes,
// https hosts, factory), one line in backend_registry.cpp calling it, its UrlKind, its
// storage-option column (storage_options.cpp), its GDAL mapping and its test fixture. Backends
// are registered by an explicit list in backend_registry.cpp, not by static initialisers: the
// linker drops unreferenced object files of a static library, and self-registering globals with
// them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lazycube/store/store.hpp"
#include "url_scheme.hpp"

namespace lazycube {

struct Backend {
  UrlKind kind = UrlKind::Unsupported;
  std::vector<std::string> schemes;  // lower case; the first is the canonical name ("gs" for gcs://)
  // https:// hosts this backend reads instead of plain HTTP: "storage.example.com" exactly, or
  // "*.example.com" for any host ending in ".example.com".
  std::vector<std::string> https_hosts;
  // Opens `url` as a store (storage options already stripped of reference-only ones). nullptr
  // for kinds open_location handles itself (local paths, reference sets).
  Location (*open)(const ParsedUrl& url, const StoreOptions& options) = nullptr;
  std::string_view describe;  // for "this build reads ..." messages, e.g. "az:// (abfs://, abfss://)"
};

class BackendRegistry {
 public:
  void add(Backend backend);
  const std::vector<Backend>& backends() const { return backends_; }

 private:
  std::vector<Backend> backends_;
};

// The registry, filled once (thread-safe) by the explicit list in backend_registry.cpp.
const BackendRegistry& backend_registry();

// The backend registered for `kind`; nullptr when none (Local is served by the "file" backend).
const Backend* find_backend(UrlKind kind);

// The backend registered for scheme `scheme` (lower case); nullptr when none.
const Backend* backend_for_scheme(std::string_view scheme);

// The backend claiming https:// host `host` (lower case, no port); nullptr when none.
const Backend* backend_for_https_host(std::string_view host);

// Opens a remote URL through its backend; StoreError naming the scheme when none reads it.
Location open_registered(const ParsedUrl& url, const StoreOptions& options);

// For messages: "local paths, file://, http(s)://, s3://, gs:// (gcs://), az:// (abfs://, abfss://)".
std::string registered_schemes_text();

// The registration functions, one per backend file (called by backend_registry.cpp only).
void register_file_backend(BackendRegistry& r);       // open_location.cpp
void register_http_backend(BackendRegistry& r);       // http_store.cpp
void register_s3_backend(BackendRegistry& r);         // s3_store.cpp
void register_gs_backend(BackendRegistry& r);         // gcs_store.cpp
void register_az_backend(BackendRegistry& r);         // azure_store.cpp
void register_reference_backend(BackendRegistry& r);  // open_location.cpp

}  // namespace lazycube
