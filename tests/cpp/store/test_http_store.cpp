// HttpStore against a private nginx: whole objects, ranges, suffixes, offsets, missing keys,
// sizes, authentication errors and options.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "lazycube/error.hpp"
#include "lazycube/store/store.hpp"
#include "nginx_server.hpp"
#include "read_helpers.hpp"

using namespace lazycube;
using namespace lazycube::test;

namespace {

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + i / 7) & 0xff);
  return s;
}

struct HttpFixture : ::testing::Test {
  void SetUp() override {
    LAZYCUBE_REQUIRE_NGINX();
    content = pattern(100000);
    write_file(www.path() / "dir" / "obj.bin", content);
    write_file(www.path() / "dir" / "empty", "");
    server = std::make_unique<NginxServer>(www.path());
  }
  TempDir www;
  std::string content;
  std::unique_ptr<NginxServer> server;
};

}  // namespace

TEST_F(HttpFixture, HttpGetWholeRangeSuffixOffset) {
  auto store = make_http_store(server->url() + "/dir/");
  EXPECT_EQ(store->url(), server->url() + "/dir");
  auto whole = store->get("obj.bin");
  ASSERT_TRUE(whole);
  EXPECT_EQ(as_string(*whole), content);
  auto r = store->get("obj.bin", ByteRange::range(1000, 5000));
  ASSERT_TRUE(r);
  EXPECT_EQ(as_string(*r), content.substr(1000, 5000));
  auto clipped = store->get("obj.bin", ByteRange::range(99990, 100));
  ASSERT_TRUE(clipped);
  EXPECT_EQ(as_string(*clipped), content.substr(99990));
  auto suffix = store->get("obj.bin", ByteRange::suffix(123));
  ASSERT_TRUE(suffix);
  EXPECT_EQ(as_string(*suffix), content.substr(content.size() - 123));
  auto big_suffix = store->get("obj.bin", ByteRange::suffix(1000000));
  ASSERT_TRUE(big_suffix);
  EXPECT_EQ(as_string(*big_suffix), content);
  auto from = store->get("obj.bin", ByteRange::from(99000));
  ASSERT_TRUE(from);
  EXPECT_EQ(as_string(*from), content.substr(99000));
  Buffer out;
  ASSERT_TRUE(store->get_into("obj.bin", ByteRange::range(7, 3), out));
  EXPECT_EQ(as_string(out), content.substr(7, 3));
  auto empty = store->get("empty");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->size(), 0u);
  EXPECT_THROW(store->get("obj.bin", ByteRange::range(200000, 10)), StoreError);
  auto at_end = store->get("obj.bin", ByteRange::from(100000));  // like the file store: empty
  ASSERT_TRUE(at_end);
  EXPECT_EQ(at_end->size(), 0u);
}

TEST_F(HttpFixture, HttpMissingAndSize) {
  auto store = make_http_store(server->url() + "/dir");
  EXPECT_FALSE(store->get("nope"));
  EXPECT_FALSE(store->get("nope", ByteRange::suffix(10)));
  Buffer out;
  EXPECT_FALSE(store->get_into("nope/0.0", ByteRange::full(), out));
  EXPECT_EQ(store->size("obj.bin"), 100000u);
  EXPECT_FALSE(store->size("nope"));
  EXPECT_TRUE(store->exists("obj.bin"));
  EXPECT_THROW(store->list(""), StoreError);
  EXPECT_THROW(store->list_dir(""), StoreError);
  const auto stats = store->stats();
  EXPECT_GE(stats.requests, 5u);
  EXPECT_EQ(stats.retries, 0u);
  EXPECT_GT(stats.latency_ms_max, 0.0);
}

TEST_F(HttpFixture, HttpForbiddenIsImmediateAuthError) {
  auto store = make_http_store(server->url() + "/forbidden", {{"retries", "5"}});
  try {
    store->get("a/b");
    FAIL() << "expected AuthError";
  } catch (const AuthError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("403"), std::string::npos) << msg;
    EXPECT_NE(msg.find("AccessDenied"), std::string::npos) << msg;
    EXPECT_NE(msg.find("attempts: 1"), std::string::npos) << msg;
  }
  EXPECT_EQ(store->stats().requests, 1u);
  // Credentials in the URL never reach messages or url().
  const std::string with_secret = "http://user:hunter2@" + server->url().substr(7) + "/forbidden";
  auto secret_store = make_http_store(with_secret);
  EXPECT_EQ(secret_store->url().find("hunter2"), std::string::npos);
  try {
    secret_store->get("k?sig=s3cr3t");
    FAIL() << "expected AuthError";
  } catch (const AuthError& e) {
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
  }
  auto unauth = make_http_store(server->url() + "/unauthorized");
  try {
    unauth->get("x");
    FAIL() << "expected AuthError";
  } catch (const AuthError& e) {
    EXPECT_NE(std::string(e.what()).find("401 InvalidAccessKeyId"), std::string::npos) << e.what();
  }
}

TEST_F(HttpFixture, HttpGetManyCoalesces) {
  auto store = make_http_store(server->url() + "/dir");
  std::vector<ByteRequest> reqs;
  for (std::uint64_t i = 0; i < 50; ++i) reqs.push_back({"obj.bin", ByteRange::range(i * 1000, 500)});
  reqs.push_back({"obj.bin", ByteRange::suffix(10)});
  reqs.push_back({"missing", ByteRange::range(0, 10)});
  reqs.push_back({"obj.bin", ByteRange::full()});
  auto out = store->get_many(reqs);
  ASSERT_EQ(out.size(), reqs.size());
  for (std::size_t i = 0; i < 50; ++i) {
    ASSERT_TRUE(out[i]);
    EXPECT_EQ(as_string(*out[i]), content.substr(i * 1000, 500));
  }
  EXPECT_EQ(as_string(*out[50]), content.substr(content.size() - 10));
  EXPECT_FALSE(out[51]);
  EXPECT_EQ(as_string(*out[52]), content);
  EXPECT_EQ(store->stats().requests, 4u);  // 50 ranges merged into one, + suffix, missing, whole

  auto apart = make_http_store(server->url() + "/dir", {{"coalesce_gap", "0"}});
  apart->get_many(std::vector<ByteRequest>(reqs.begin(), reqs.begin() + 50));
  EXPECT_EQ(apart->stats().requests, 50u);
  auto capped = make_http_store(server->url() + "/dir", {{"coalesce_max", "10000"}});
  auto parts = capped->get_many(std::vector<ByteRequest>(reqs.begin(), reqs.begin() + 50));
  EXPECT_EQ(capped->stats().requests, 5u);
  for (std::size_t i = 0; i < 50; ++i) EXPECT_EQ(as_string(*parts[i]), content.substr(i * 1000, 500));
}

// get_each hands each result over as its request completes, not after the whole batch: with one
// request in flight and 100 ms per request, the first result arrives while the others are
// still to be fetched. Every request is delivered exactly once, with the right bytes.
TEST_F(HttpFixture, HttpGetEachDeliversAsRequestsComplete) {
  server->set_faults("latency_ms = 100");
  auto store = make_http_store(server->url() + "/dir", {{"max_concurrency", "1"}, {"coalesce_gap", "0"}});
  std::vector<ByteRequest> reqs;
  for (std::uint64_t i = 0; i < 4; ++i) reqs.push_back({"obj.bin", ByteRange::range(i * 20000, 100)});
  reqs.push_back({"missing", ByteRange::full()});
  std::vector<int> seen(reqs.size(), 0);
  std::vector<std::uint64_t> requests_done_at_delivery;
  store->get_each(reqs, [&](std::size_t i, std::optional<Buffer>&& bytes) {
    ASSERT_LT(i, reqs.size());
    ++seen[i];
    requests_done_at_delivery.push_back(store->stats().requests);
    if (i == 4) {
      EXPECT_FALSE(bytes);
    } else {
      ASSERT_TRUE(bytes);
      EXPECT_EQ(as_string(*bytes), content.substr(i * 20000, 100));
    }
  });
  EXPECT_EQ(seen, std::vector<int>(reqs.size(), 1));
  ASSERT_EQ(requests_done_at_delivery.size(), reqs.size());
  EXPECT_LT(requests_done_at_delivery.front(), reqs.size()) << "the first result waited for the whole batch";
}

// An exception from the sink stops the requests not yet started and reaches the caller as is.
TEST_F(HttpFixture, HttpGetEachSinkErrorStopsTheRest) {
  server->set_faults("latency_ms = 50");
  auto store = make_http_store(server->url() + "/dir", {{"max_concurrency", "1"}, {"coalesce_gap", "0"}});
  std::vector<ByteRequest> reqs;
  for (std::uint64_t i = 0; i < 20; ++i) reqs.push_back({"obj.bin", ByteRange::range(i * 1000, 10)});
  int calls = 0;
  EXPECT_THROW(store->get_each(reqs,
                               [&](std::size_t, std::optional<Buffer>&&) {
                                 ++calls;
                                 throw CodecError("decoding failed in the sink");
                               }),
               CodecError);
  EXPECT_EQ(calls, 1);
  EXPECT_LT(store->stats().requests, 5u) << "requests went on after the sink failed";
}

TEST_F(HttpFixture, HttpKeepsConnectionsAlive) {
  auto store = make_http_store(server->url() + "/dir", {{"max_concurrency", "1"}});
  for (std::uint64_t i = 0; i < 30; ++i) ASSERT_TRUE(store->get("obj.bin", ByteRange::range(i * 10, 10)));
  for (int i = 0; i < 100 && server->logged_requests() < 30; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::istringstream log(server->access_log());
  std::set<std::string> connections;
  std::string line;
  while (std::getline(log, line)) connections.insert(line.substr(0, line.find(' ')));
  EXPECT_EQ(server->logged_requests(), 30u);
  EXPECT_LE(connections.size(), 2u) << server->access_log();
}

TEST_F(HttpFixture, HttpHttp2OverTls) {
  NginxServer tls(www.path(), /*tls=*/true);
  auto untrusted = make_http_store(tls.url() + "/dir", {{"retries", "0"}});
  EXPECT_THROW(untrusted->get("obj.bin"), StoreError);  // self-signed: refused without its CA
  auto store = make_http_store(tls.url() + "/dir", {{"ca_file", tls.ca_file()}, {"coalesce_gap", "0"}});
  std::vector<ByteRequest> reqs;
  for (std::uint64_t i = 0; i < 20; ++i) reqs.push_back({"obj.bin", ByteRange::range(i * 4000, 1000)});
  auto out = store->get_many(reqs);
  for (std::uint64_t i = 0; i < 20; ++i) EXPECT_EQ(as_string(*out[i]), content.substr(i * 4000, 1000));
  for (int i = 0; i < 100 && tls.logged_requests() < 21; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::istringstream log(tls.access_log());
  std::set<std::string> connections;
  std::string line;
  std::size_t h2 = 0;
  while (std::getline(log, line)) {
    if (line.find(" 206 ") == std::string::npos) continue;
    connections.insert(line.substr(0, line.find(' ')));
    h2 += line.find("HTTP/2.0") != std::string::npos;
  }
  EXPECT_EQ(h2, 20u) << tls.access_log();
  EXPECT_LE(connections.size(), 2u) << "HTTP/2 streams should share a connection\n" << tls.access_log();
  // s3:// and gs:// take ca_file too (one option parser, one engine): anonymous, to the same
  // server through endpoint_url.
  for (const std::string scheme : {"s3", "gs", "gcs"}) {
    const StoreOptions route{{"endpoint_url", tls.url()}, {"anon", "true"}, {"retries", "0"}};
    EXPECT_THROW(open_location(scheme + "://dir", route).store->get("obj.bin"), StoreError) << scheme;
    StoreOptions trusted = route;
    trusted["ca_file"] = tls.ca_file();
    auto b = open_location(scheme + "://dir", trusted).store->get("obj.bin", ByteRange::range(5, 10));
    ASSERT_TRUE(b) << scheme;
    EXPECT_EQ(as_string(*b), content.substr(5, 10)) << scheme;
  }
}

TEST(HttpOptions, HttpUnknownOptionIsNamed) {
  try {
    open_location("http://127.0.0.1:1/x", {{"max_concurency", "4"}});
    FAIL() << "expected StoreError";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("max_concurency"), std::string::npos);
  }
  EXPECT_THROW(open_location("http://127.0.0.1:1/x", {{"timeout", "soon"}}), StoreError);
  auto loc = open_location("https://127.0.0.1:1/x/", {{"max_concurrency", "4"}, {"timeout", "2.5"}});
  EXPECT_EQ(loc.store->url(), "https://127.0.0.1:1/x");
  EXPECT_EQ(make_http_store("http://user:secret@127.0.0.1:1/x?sig=abc")->url().find("secret"), std::string::npos);
}
