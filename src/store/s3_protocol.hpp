// Pieces of the S3 REST protocol (also spoken by GCS's XML API): URI encoding, the
// ListObjectsV2 result and error bodies (parsed minimally: only the elements we use). The XML
// helpers and the <Error> parser serve Azure's dialect too (azure_protocol.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lazycube::s3 {

// Decodes the five predefined XML entities and numeric character references (as UTF-8).
std::string xml_decode(std::string_view text);

// The text of the first <name>…</name> element at or after `from` (decoded), or empty.
// `from` is moved past the element when found; `found` tells an empty element from none.
std::string xml_element(std::string_view xml, std::string_view name, std::size_t& from, bool* found = nullptr);

// The raw (undecoded) inner text of each <name>…</name> block, in order ("<Blob>" does not match
// "<BlobPrefix>").
std::vector<std::string_view> blocks(std::string_view xml, std::string_view name);

// `xml` with every <name>…</name> block cut out (to read top-level elements only).
std::string without_blocks(std::string_view xml, std::string_view name);

struct ListPage {
  std::vector<std::string> keys;      // <Contents><Key>
  std::vector<std::string> prefixes;  // <CommonPrefixes><Prefix>
  bool truncated = false;             // <IsTruncated>
  std::string next_token;             // <NextContinuationToken>
};

// Parses a ListBucketResult (ListObjectsV2). Throws StoreError when it is not one.
ListPage parse_list_page(std::string_view xml);

struct ErrorBody {
  std::string code;     // <Code>, e.g. SignatureDoesNotMatch
  std::string message;  // <Message>
};
// The <Error> of a failed request; empty fields when the body is not an S3 error document.
ErrorBody parse_error_body(std::string_view xml);

// Replaces every occurrence of each non-empty secret in `text` by "***".
std::string redact(std::string text, const std::vector<std::string>& secrets);

// The CompleteMultipartUpload body listing parts 1..N with their ETags (as the server sent them,
// quotes included).
std::string complete_multipart_xml(const std::vector<std::string>& etags);

}  // namespace lazycube::s3
