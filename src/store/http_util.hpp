// Small HTTP helpers shared by the engine and the stores: header parsing, server error
// bodies, URL redaction and key encoding.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lazycube/store/store.hpp"

namespace lazycube::http {

struct ContentRange {
  std::uint64_t first = 0, last = 0;  // inclusive
  std::optional<std::uint64_t> total;  // nullopt for "*"
};
// "bytes 0-99/1234" (or "bytes 0-99/*"); nullopt when malformed.
std::optional<ContentRange> parse_content_range(std::string_view value);
// "bytes */1234" of a 416 reply: the object size.
std::optional<std::uint64_t> parse_unsatisfied_range(std::string_view value);
// Retry-After in seconds (delta-seconds form only; HTTP dates are ignored).
std::optional<double> parse_retry_after(std::string_view value);
// "Code: Message" from an S3/GCS-style XML error body (<Code>, <Message>); empty if none.
std::string server_error(std::string_view body);
// The URL without credentials or query string (presigned URLs carry signatures there): the
// public lazycube::redact_url (store.hpp), defined in http_util.cpp.
using ::lazycube::redact_url;

// The host of a URL, with its port if any: "oauth2.googleapis.com" of
// "https://oauth2.googleapis.com/token".
std::string host_of(std::string_view url);
// RFC 3986 percent-encoding: unreserved characters kept, '/' kept when `keep_slash` (store keys
// in URL paths); query values and SigV4 canonical strings use keep_slash = false.
std::string percent_encode(std::string_view text, bool keep_slash = true);

// An RFC 9110 IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") as Unix seconds; nullopt when
// malformed.
std::optional<std::int64_t> parse_http_date(std::string_view value);
// An object's version from a HEAD/GET reply's headers (lower-cased names): its ETag, and how long
// the reply stays fresh by RFC 9111 -- Cache-Control max-age (less Age), else Expires less Date --
// counted from `now` (Unix seconds). no-store: no ETag (not to be cached); no-cache or a missing
// or past lifetime: fresh_until 0. A 404 `status`: exists false, fresh for the same lifetime
// (a server that lets caches keep its 404s).
ObjectVersion object_version(long status, const std::map<std::string, std::string>& headers, std::int64_t now);

// The request headers of a read condition: If-Match (the ETag quoted when it is not already) and
// If-Unmodified-Since (an HTTP date).
std::vector<std::string> condition_headers(const ReadCondition& condition);
// Throws a StoreError naming `what` when a reply shows the object is not the one `condition`
// names: HTTP 412, or an ETag header that differs from the expected one (a server that ignored
// If-Match). `headers`: the reply's, lower-cased names.
void check_condition(long status, const std::map<std::string, std::string>& headers, const ReadCondition& condition,
                     const std::string& what);

}  // namespace lazycube::http
