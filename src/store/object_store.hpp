// One Store over HTTP object protocols (AWS S3, S3-compatible endpoints, GCS's XML API, Azure
// Blob Storage): the backends differ only in base URL, authentication (a signer) and listing
// dialect, set up by their factories.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "http_engine.hpp"
#include "lazycube/store/store.hpp"
#include "storage_options.hpp"

namespace lazycube::cloud {

// How a container is listed: S3's ListObjectsV2 (continuation tokens) or Azure's List Blobs
// (markers). Both answer errors with <Error><Code><Message>.
enum class ListDialect { S3, Azure };

struct ObjectStoreConfig {
  std::string scheme;    // "s3", "gs" or "az", for url() and messages
  std::string bucket;    // bucket or container; "" for an account-wide store (keys start with
                         // the container: kerchunk targets), which cannot list
  std::string prefix;    // key prefix inside the bucket, no leading/trailing '/'
  std::string base_url;  // the bucket's URL without trailing '/': objects are base_url + "/" + key
  std::optional<http::SigV4> sigv4;   // sign every request (SigV4 header auth)
  std::shared_ptr<const http::Signer> signer;  // or sign each attempt (http::Signer)
  std::vector<std::string> headers;   // sent with every request ("Name: value")
  std::vector<std::string> secrets;   // strings never to appear in a message
  std::string auth_description;       // how requests authenticate, for error messages (no secrets)
  TransferOptions transfer;           // engine, retries, coalescing, listing page size: the parsed storage options
  ListDialect dialect = ListDialect::S3;
  bool suffix_ranges = true;          // false: the server has no "bytes=-N" (suffixes cost a HEAD)
};

std::shared_ptr<Store> make_object_store(ObjectStoreConfig config);

// (bucket, prefix) of s3://bucket/prefix or gs://bucket/prefix (prefix without surrounding '/');
// StoreError when the bucket is missing.
std::pair<std::string, std::string> bucket_and_prefix(const ParsedUrl& url);

// Factories (s3_store.cpp, gcs_store.cpp): `bucket` and `prefix` from s3://bucket/prefix.
std::shared_ptr<Store> make_s3_store(const std::string& bucket, const std::string& prefix,
                                     const StoreOptions& options);
std::shared_ptr<Store> make_gcs_store(const std::string& bucket, const std::string& prefix,
                                      const StoreOptions& options);
// az://container/prefix, abfs[s]://container@ACCOUNT.dfs.core.windows.net/prefix,
// https://ACCOUNT.blob.core.windows.net/container/prefix (azure_store.cpp).
std::shared_ptr<Store> make_azure_store(const ParsedUrl& url, const StoreOptions& options);

// The S3 object URL base for `bucket`: path-style ENDPOINT/BUCKET when `endpoint_url` is set (or
// the bucket name has dots, which break virtual-host TLS), else https://BUCKET.s3.REGION.amazonaws.com.
std::string s3_bucket_url(const std::string& bucket, const std::string& region, const std::string& endpoint_url);

}  // namespace lazycube::cloud
