// One Store over the S3 REST protocol (AWS S3, S3-compatible endpoints, GCS's XML API): the
// backends differ only in base URL and authentication, set up by their factories.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http_engine.hpp"
#include "lazycube/store/store.hpp"
#include "storage_options.hpp"

namespace lazycube::cloud {

struct ObjectStoreConfig {
  std::string scheme;    // "s3" or "gs", for url() and messages
  std::string bucket;
  std::string prefix;    // key prefix inside the bucket, no leading/trailing '/'
  std::string base_url;  // the bucket's URL without trailing '/': objects are base_url + "/" + key
  std::optional<http::SigV4> sigv4;   // sign every request (SigV4 header auth)
  std::shared_ptr<const http::Signer> signer;  // or sign each attempt (http::Signer)
  std::vector<std::string> headers;   // sent with every request ("Name: value")
  std::vector<std::string> secrets;   // strings never to appear in a message
  std::string auth_description;       // how requests authenticate, for error messages (no secrets)
  TransferOptions transfer;           // engine, retries, coalescing, listing page size: the parsed storage options
};

std::shared_ptr<Store> make_object_store(ObjectStoreConfig config);

// Factories (s3_store.cpp, gcs_store.cpp): `bucket` and `prefix` from s3://bucket/prefix.
std::shared_ptr<Store> make_s3_store(const std::string& bucket, const std::string& prefix,
                                     const StoreOptions& options);
std::shared_ptr<Store> make_gcs_store(const std::string& bucket, const std::string& prefix,
                                      const StoreOptions& options);

// The S3 object URL base for `bucket`: path-style ENDPOINT/BUCKET when `endpoint_url` is set (or
// the bucket name has dots, which break virtual-host TLS), else https://BUCKET.s3.REGION.amazonaws.com.
std::string s3_bucket_url(const std::string& bucket, const std::string& region, const std::string& endpoint_url);

}  // namespace lazycube::cloud
