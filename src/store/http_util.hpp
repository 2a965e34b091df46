// Small HTTP helpers shared by the engine and the stores: header parsing, server error
// bodies, URL redaction and key encoding.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

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
// The URL without credentials or query string (presigned URLs carry signatures there).
std::string redact_url(std::string_view url);
// RFC 3986 percent-encoding: unreserved characters kept, '/' kept when `keep_slash` (store keys
// in URL paths); query values and SigV4 canonical strings use keep_slash = false.
std::string percent_encode(std::string_view text, bool keep_slash = true);

}  // namespace lazycube::http
