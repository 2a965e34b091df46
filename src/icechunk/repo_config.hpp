// The virtual chunk containers a repository declares in its configuration: spec 2 keeps the
// configuration in the `repo` file (FlexBuffers), spec 1 in `config.yaml`. A declaration gives a
// URL prefix and the settings of the store behind it (kind, endpoint, region, anonymous); reading
// from it still needs the user's authorisation (virtual_containers.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lazycube/store/store.hpp"

namespace lazycube::icechunk {

struct DeclaredContainer {
  std::string name;        // "" when the declaration has none
  std::string url_prefix;  // as declared ("s3://bucket/"; spec 1 repositories may hold bare names: "az")
  std::string kind;        // the store: "s3_compatible", "s3", "tigris", "gcs", "azure", "http", "local_file_system", ...
  StoreOptions options;    // lazycube storage options from the declaration (endpoint_url, region_name, anon)
};

// The containers of a spec 2 `repo` file's FlexBuffers configuration (empty when it has none);
// MetadataError naming `file` when the configuration is malformed.
std::vector<DeclaredContainer> containers_from_flexbuffers(const std::uint8_t* data, std::size_t size,
                                                           const std::string& file);

// The containers of a spec 1 `config.yaml` (the block-style YAML Icechunk writes: mappings, plain
// and quoted scalars, `!kind` tags); MetadataError naming `file` for YAML it cannot read there.
std::vector<DeclaredContainer> containers_from_yaml(std::string_view text, const std::string& file);

}  // namespace lazycube::icechunk
