// Server-free pieces of the HTTP layer: header parsing, error bodies, URL redaction, range
// coalescing and the counters.
#include <gtest/gtest.h>

#include "store/http_coalesce.hpp"
#include "store/http_counters.hpp"
#include "store/http_util.hpp"
#include "lazycube/error.hpp"

using namespace lazycube;
using namespace lazycube::http;

TEST(HttpUnits, HttpParsesHeaders) {
  auto cr = parse_content_range("bytes 10-19/100");
  ASSERT_TRUE(cr);
  EXPECT_EQ(cr->first, 10u);
  EXPECT_EQ(cr->last, 19u);
  EXPECT_EQ(cr->total, 100u);
  EXPECT_FALSE(parse_content_range("bytes 10-19/*")->total);
  EXPECT_FALSE(parse_content_range("bytes 20-10/100"));
  EXPECT_FALSE(parse_content_range("bytes 10-100/100"));
  EXPECT_FALSE(parse_content_range("items 1-2/3"));
  EXPECT_EQ(parse_unsatisfied_range("bytes */42"), 42u);
  EXPECT_EQ(parse_retry_after(" 3 "), 3.0);
  EXPECT_FALSE(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"));
}

TEST(HttpUnits, HttpServerErrorAndRedaction) {
  EXPECT_EQ(server_error("<?xml?><Error><Code>SignatureDoesNotMatch</Code><Message>bad sig</Message></Error>"),
            "SignatureDoesNotMatch: bad sig");
  EXPECT_EQ(server_error("<Error><Code>NoSuchKey</Code></Error>"), "NoSuchKey");
  EXPECT_EQ(server_error("plain text"), "");
  EXPECT_EQ(redact_url("https://user:pw@host:9/a/b?X-Amz-Signature=abc#f"), "https://host:9/a/b");
  EXPECT_EQ(redact_url("http://host/a@b"), "http://host/a@b");
  EXPECT_EQ(percent_encode("a b/c%d.0~"), "a%20b/c%25d.0~");
}

TEST(HttpUnits, HttpCoalescePlans) {
  std::vector<ByteRequest> reqs = {
      {"a", ByteRange::range(100, 10)},  {"a", ByteRange::range(0, 10)},   {"b", ByteRange::range(0, 10)},
      {"a", ByteRange::range(5, 10)},    {"a", ByteRange::suffix(4)},      {"a", ByteRange::range(1000, 10)},
      {"a", ByteRange::full()},
  };
  auto plan = coalesce(reqs, 100, 1 << 20);
  // a: [0,10) [5,15) [100,110) merge (gaps <= 100); [1000,1010) alone; b alone; suffix, full alone.
  EXPECT_EQ(plan.fetches.size(), 5u);
  const auto& merged = plan.fetches[plan.parts[0].fetch];
  EXPECT_EQ(merged.key, "a");
  EXPECT_EQ(merged.range.offset, 0u);
  EXPECT_EQ(merged.range.length, 110u);
  EXPECT_TRUE(plan.parts[0].sliced);
  EXPECT_EQ(plan.parts[0].offset, 100u);
  EXPECT_EQ(plan.parts[3].offset, 5u);
  EXPECT_EQ(plan.parts[1].fetch, plan.parts[3].fetch);
  EXPECT_FALSE(plan.parts[5].sliced);
  EXPECT_FALSE(plan.parts[2].sliced);
  EXPECT_EQ(plan.fetches[plan.parts[4].fetch].range.kind, ByteRange::Kind::Suffix);
  // Size cap: nothing merges past 20 bytes.
  EXPECT_EQ(coalesce(reqs, 100, 20).fetches.size(), 6u);
  EXPECT_EQ(coalesce(reqs, 0, 1 << 20).fetches.size(), 6u);  // overlapping ranges still merge
}

TEST(HttpUnits, HttpCountersPercentiles) {
  Counters c;
  for (int i = 1; i <= 100; ++i) c.attempt(10, i);
  c.retry("http_503");
  c.retry("timeout");
  c.retry("weird");
  c.error();
  const auto s = c.snapshot();
  EXPECT_EQ(s.requests, 100u);
  EXPECT_EQ(s.bytes, 1000u);
  EXPECT_EQ(s.retries, 3u);
  EXPECT_EQ(s.retries_by_cause.at("http_503"), 1u);
  EXPECT_EQ(s.retries_by_cause.at("other"), 1u);
  EXPECT_EQ(s.errors, 1u);
  EXPECT_DOUBLE_EQ(s.latency_ms_p50, 50.0);
  EXPECT_DOUBLE_EQ(s.latency_ms_p90, 90.0);
  EXPECT_DOUBLE_EQ(s.latency_ms_p99, 99.0);
  EXPECT_DOUBLE_EQ(s.latency_ms_max, 100.0);
}

TEST(HttpUnits, ReadConditions) {
  // If-Match quotes a bare ETag; If-Unmodified-Since is an IMF-fixdate (also past 2038).
  EXPECT_EQ(condition_headers({"abc", 0}), std::vector<std::string>{"If-Match: \"abc\""});
  EXPECT_EQ(condition_headers({"W/\"abc\"", 0}), std::vector<std::string>{"If-Match: W/\"abc\""});
  EXPECT_EQ(condition_headers({"", 1'700'000'000}),
            std::vector<std::string>{"If-Unmodified-Since: Tue, 14 Nov 2023 22:13:20 GMT"});
  EXPECT_EQ(condition_headers({"", 4'294'111'232}),
            std::vector<std::string>{"If-Unmodified-Since: Thu, 28 Jan 2106 08:40:32 GMT"});
  EXPECT_TRUE(condition_headers({}).empty());
  // 412, or an ETag differing from the expected one (a server ignoring If-Match), fail.
  EXPECT_THROW(check_condition(412, {}, {"abc", 0}, "u"), StoreError);
  EXPECT_THROW(check_condition(206, {{"etag", "\"xyz\""}}, {"abc", 0}, "u"), StoreError);
  EXPECT_NO_THROW(check_condition(206, {{"etag", "\"abc\""}}, {"abc", 0}, "u"));
  EXPECT_NO_THROW(check_condition(206, {{"etag", "W/\"abc\""}}, {"\"abc\"", 0}, "u"));
  EXPECT_NO_THROW(check_condition(412, {}, {}, "u"));  // no condition: the store's own handling
  // Ranges of one object with different conditions are fetched apart.
  std::vector<ByteRequest> reqs = {{"k", ByteRange::range(0, 10), {"a", 0}}, {"k", ByteRange::range(10, 10), {"a", 0}},
                                   {"k", ByteRange::range(20, 10), {"b", 0}}};
  const auto plan = coalesce(reqs, 100, 1 << 20);
  ASSERT_EQ(plan.fetches.size(), 2u);
  EXPECT_EQ(plan.fetches[0].condition.etag, "a");
  EXPECT_EQ(plan.fetches[1].condition.etag, "b");
}

// RFC 9111 freshness of a reply (the persistent cache's version records): max-age less Age,
// else Expires less Date; no-cache revalidates; no-store keeps nothing; a malformed Expires is
// already expired.
TEST(HttpUnits, ObjectVersionFreshness) {
  const std::int64_t now = 1'700'000'000;
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);
  EXPECT_FALSE(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"));
  EXPECT_FALSE(parse_http_date("Sun, 06 Foo 1994 08:49:37 GMT"));
  EXPECT_FALSE(parse_http_date("Sun, 06 Nov 1994 25:49:37 GMT"));

  auto v = object_version(200, {{"etag", "\"abc\""}, {"cache-control", "public, max-age=3600"}}, now);
  EXPECT_EQ(v.etag, "\"abc\"");
  EXPECT_EQ(v.fresh_until, now + 3600);
  EXPECT_EQ(object_version(200, {{"etag", "e"}, {"cache-control", "Max-Age=100"}, {"age", "40"}}, now).fresh_until, now + 60);
  EXPECT_EQ(object_version(200, {{"etag", "e"}, {"cache-control", "max-age=10"}, {"age", "40"}}, now).fresh_until, 0);
  EXPECT_EQ(object_version(200, {{"etag", "e"}, {"cache-control", "max-age=3600, no-cache"}}, now).fresh_until, 0);
  EXPECT_EQ(object_version(200, {{"etag", "e"}, {"cache-control", "max-age=\"20\""}}, now).fresh_until, now + 20);
  EXPECT_EQ(object_version(200, {{"etag", "e"}, {"cache-control", "max-age=soon"}}, now).fresh_until, 0);
  const auto none = object_version(200, {{"etag", "e"}, {"cache-control", "private, no-store"}}, now);
  EXPECT_EQ(none.etag, "");  // the server forbids keeping it
  EXPECT_EQ(none.fresh_until, 0);
  // Expires counts from the server's Date; max-age wins over it.
  EXPECT_EQ(object_version(200, {{"etag", "e"}, {"date", "Sun, 06 Nov 1994 08:49:37 GMT"},
                            {"expires", "Sun, 06 Nov 1994 09:49:37 GMT"}}, now).fresh_until, now + 3600);
  EXPECT_EQ(object_version(200, {{"etag", "e"}, {"expires", "0"}}, now).fresh_until, 0);
  EXPECT_EQ(object_version(200, {{"etag", "e"}, {"cache-control", "max-age=5"}, {"expires", "Sun, 06 Nov 1994 09:49:37 GMT"}},
                           now).fresh_until, now + 5);
  // No ETag: nothing to key an entry by, whatever the lifetime.
  EXPECT_EQ(object_version(200, {{"cache-control", "max-age=60"}}, now), ObjectVersion{});
  // A 404: no object, its absence fresh for the lifetime the reply declares (none: ask again).
  EXPECT_EQ(object_version(404, {{"cache-control", "max-age=60"}}, now), (ObjectVersion{"", now + 60, false}));
  EXPECT_EQ(object_version(404, {{"etag", "e"}}, now), (ObjectVersion{"", 0, false}));
  EXPECT_EQ(object_version(404, {{"cache-control", "max-age=60, no-store"}}, now), (ObjectVersion{"", 0, false}));
  EXPECT_EQ(object_version(200, {{"etag", "e"}}, now).fresh_until, 0);
}
