// Pieces of Azure Blob Storage's REST dialect: the SharedKey and SAS signers (http::Signer), the
// List Blobs page, connection strings. The request/response core is object_store.cpp.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "http_engine.hpp"
#include "s3_protocol.hpp"

namespace lazycube::azure {

// The REST API version every request names (x-ms-version).
inline constexpr std::string_view kApiVersion = "2021-08-06";

// Signs each attempt with SharedKey (HMAC-SHA256 of the canonical request under the decoded
// account key): adds x-ms-date and Authorization. The canonical string covers the verb, the
// standard headers present (Content-Length, Content-Type, Range, ...), every x-ms-* header and
// the resource (/ACCOUNT + URL path + sorted query parameters).
class SharedKeySigner final : public http::Signer {
 public:
  // Throws StoreError when `base64_key` is not base64 (never echoing it).
  SharedKeySigner(std::string account, std::string_view base64_key);
  void sign(const std::string& method, std::string& url, std::vector<std::string>& headers) const override;
  // The string HMAC'd for this request (tests compare it with the documented form).
  std::string string_to_sign(const std::string& method, const std::string& url,
                             const std::vector<std::string>& headers) const;

 private:
  std::string account_;
  std::string key_;  // decoded
};

// Appends a shared access signature (the query string "sv=...&sig=...") to every URL.
class SasSigner final : public http::Signer {
 public:
  explicit SasSigner(std::string sas) : sas_(std::move(sas)) {}
  void sign(const std::string& method, std::string& url, std::vector<std::string>& headers) const override;

 private:
  std::string sas_;
};

// The List Blobs URL of one page: ?restype=container&comp=list with prefix, delimiter, marker
// and maxresults when set.
std::string list_page_query(const std::string& prefix, bool delimited, const std::string& marker, int page_size);

// Parses an <EnumerationResults> page: <Blob><Name> → keys, <BlobPrefix><Name> → prefixes,
// <NextMarker> → next_token (truncated when non-empty). Throws StoreError when it is not one.
s3::ListPage parse_list_page(std::string_view xml);

// "Key=Value;Key=Value" (keys as written: AccountName, AccountKey, SharedAccessSignature,
// BlobEndpoint, DefaultEndpointsProtocol, EndpointSuffix). Throws StoreError for a part without
// '=' (naming its position, never its text).
std::map<std::string, std::string> parse_connection_string(std::string_view text);

// HMAC-SHA256 of `text` under `key` (raw bytes in, raw bytes out): SharedKey requests and SAS
// signatures.
std::string hmac_sha256(std::string_view key, std::string_view text);

// lazycube::base64_decode (util/text.hpp) that throws StoreError naming `what` when `text` is
// not base64 (never echoing it).
std::string base64_decode(std::string_view text, const std::string& what);

// The id of block `index` of a block list: base64 of a fixed-length text (Azure wants every id
// of a blob the same length).
std::string block_id(std::size_t index);
// The Put Block List body committing `ids` in order.
std::string block_list_xml(const std::vector<std::string>& ids);

}  // namespace lazycube::azure
