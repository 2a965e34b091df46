// fsspec-style storage_options for the object-store backends (s3://, gs://), parsed and checked.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "lazycube/store/store.hpp"

namespace lazycube::cloud {

struct CloudOptions {
  std::optional<bool> anon;   // true: never sign; false: sign when credentials are found
  std::string key;            // access key id (S3, GCS HMAC)
  std::string secret;         // secret access key (S3, GCS HMAC)
  std::string token;          // S3: session token; GCS: OAuth2 bearer token
  std::string endpoint_url;   // custom endpoint: path-style addressing
  std::string region_name;
  std::string profile;        // AWS profile name (overrides AWS_PROFILE)
  bool requester_pays = false;
  std::size_t max_concurrency = 64;
  double timeout_s = 0;       // whole-transfer timeout per attempt, 0 = none
  int retries = 5;            // attempts = retries + 1
};

// Parses `options` for a store of URL scheme `scheme` ("s3", "gs"). An unknown option or a bad
// value is a StoreError naming it (never echoing a secret's value).
CloudOptions parse_cloud_options(const StoreOptions& options, std::string_view scheme);

// "true"/"false"/"1"/"0"/"yes"/"no" (case-insensitive); nullopt otherwise.
std::optional<bool> parse_bool(std::string_view text);

}  // namespace lazycube::cloud
