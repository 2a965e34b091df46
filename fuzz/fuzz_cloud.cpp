// What the cloud backends parse out of server answers: S3 (and GCS XML API) ListObjectsV2 pages
// and <Error> bodies, Azure List Blobs pages, XML entities, the HTTP headers we read
// (Content-Range, Retry-After), Azure connection strings, and GCS's JSON: the token endpoint's
// answer and service-account key files.
//
// Input: one selector byte, then the body (for the token answer: two more bytes of HTTP status).
#include "../src/store/azure_protocol.hpp"
#include "../src/store/gcs_token.hpp"
#include "../src/store/http_util.hpp"
#include "../src/store/s3_protocol.hpp"
#include "fuzz_common.hpp"

using namespace lazycube;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Input in(data, size);
  const int mode = in.byte() % 9;
  long status = 200;
  if (mode == 7) status = in.byte() % 2 == 0 ? 200 : 100 + (in.byte() % 5) * 100 + in.byte() % 30;
  const std::string_view body = in.rest();
  fuzz::typed_or_valid([&] {
    switch (mode) {
      case 0: (void)s3::parse_list_page(body); break;
      case 1: {
        (void)s3::parse_error_body(body);
        (void)http::server_error(body);
        break;
      }
      case 2: (void)azure::parse_list_page(body); break;
      case 3: {
        (void)s3::xml_decode(body);
        std::size_t from = 0;
        bool found = false;
        (void)s3::xml_element(body, "Key", from, &found);
        fuzz::check(from <= body.size(), "xml_element moved past the end");
        (void)s3::blocks(body, "Contents");
        (void)s3::without_blocks(body, "Contents");
        break;
      }
      case 4: {
        if (const auto r = http::parse_content_range(body)) fuzz::check(r->first <= r->last, "Content-Range with first > last");
        (void)http::parse_unsatisfied_range(body);
        if (const auto s = http::parse_retry_after(body)) fuzz::check(*s >= 0, "negative Retry-After");
        break;
      }
      case 5: (void)azure::parse_connection_string(body); break;
      case 6: (void)azure::base64_decode(body, "fuzz"); break;
      case 7: {
        const auto token = cloud::parse_gcs_token_response(status, body, "fuzz token exchange");
        fuzz::check(!token.access_token.empty() && token.lifetime_s >= 0, "token answer accepted without a token");
        break;
      }
      default: (void)cloud::parse_gcs_service_account_key(body, "fuzz-key.json"); break;
    }
  });
  return 0;
}
