// Storage options defined once (src/store/storage_options.cpp) and URL schemes recognised once
// (src/store/url_scheme.cpp): every tuning option is accepted by http(s)://, s3:// and gs://
// (gcs://) and applied (observed against one shared nginx: s3:// and gs:// reach it through
// endpoint_url, anonymously); an unknown option is an error listing the valid ones for that
// scheme; gcs:// reads exactly like gs:// (store, reference targets, GDAL mapping).
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "netcdf/gdal_location.hpp"
#include "store/backend_registry.hpp"
#include "store/storage_options.hpp"
#include "store/url_scheme.hpp"
#include "lazycube/error.hpp"
#include "lazycube/refs/references.hpp"
#include "lazycube/store/reference_access.hpp"
#include "lazycube/store/store.hpp"
#include "moto_fixture.hpp"
#include "nginx_server.hpp"
#include "read_helpers.hpp"

using namespace lazycube;
using namespace lazycube::test;

namespace {

// ---------------------------------------------------------------------------------------------
// The scheme table.

TEST(UrlScheme, BackendsAndCanonicalNames) {
  EXPECT_EQ(parse_url_scheme("gs://b/k").backend, backend_for_scheme("gs"));
  EXPECT_EQ(parse_url_scheme("gcs://b/k").backend, backend_for_scheme("gs"));
  EXPECT_EQ(parse_url_scheme("gcs://b/k").scheme, "gs");
  EXPECT_EQ(parse_url_scheme("gcs://b/k").canonical(), "gs://b/k");
  EXPECT_EQ(parse_url_scheme("GS://b/k").backend, backend_for_scheme("gs"));
  EXPECT_TRUE(parse_url_scheme("GS://b/k").is_object_store());
  EXPECT_EQ(parse_url_scheme("s3://b").backend, backend_for_scheme("s3"));
  EXPECT_EQ(parse_url_scheme("HTTPS://h/x").scheme, "https");
  EXPECT_TRUE(parse_url_scheme("HTTPS://h/x").is_http());
  EXPECT_EQ(parse_url_scheme("http://h/x").rest, "h/x");
  EXPECT_TRUE(parse_url_scheme("reference://x.json").is_reference());
  EXPECT_EQ(parse_url_scheme("file:///a/b").scheme, "file");
  EXPECT_EQ(parse_url_scheme("file:///a/b").rest, "/a/b");
  EXPECT_TRUE(parse_url_scheme("file:///a/b").is_local());
  EXPECT_FALSE(parse_url_scheme("file:///a/b").is_plain_path());
  EXPECT_TRUE(parse_url_scheme("/a/b").is_plain_path());
  EXPECT_TRUE(parse_url_scheme("/a/b://c").is_plain_path());  // not a scheme: '/' before "://"
  EXPECT_EQ(parse_url_scheme("rel/dir").rest, "rel/dir");
  const ParsedUrl ftp = parse_url_scheme("ftp://h/x");
  EXPECT_FALSE(ftp.supported());
  EXPECT_EQ(ftp.scheme, "ftp");
  EXPECT_FALSE(ftp.is_remote());
  EXPECT_FALSE(ftp.is_local());
  EXPECT_EQ(*local_path_of("file:///a/b"), "/a/b");
  EXPECT_FALSE(local_path_of("s3://b/k").has_value());
}

// Store layers register once each, ordered innermost first; the persistent cache is one, and it
// wraps a network store only when its options ask for it.
TEST(BackendRegistry, StoreLayersRegisterOnceAndWrapOnRequest) {
  BackendRegistry r;
  r.add_layer({.name = "outer", .order = 200});
  r.add_layer({.name = "inner", .order = 10});
  EXPECT_THROW(r.add_layer({.name = "inner"}), StoreError);
  ASSERT_EQ(r.layers().size(), 2u);
  EXPECT_EQ(r.layers()[0].name, "inner");
  std::vector<std::string_view> names;
  for (const auto& l : backend_registry().layers()) names.push_back(l.name);
  EXPECT_EQ(names, (std::vector<std::string_view>{"disk_cache"}));
  const Backend& http = *backend_for_scheme("http");
  const Location plain = open_registered(parse_url_scheme("http://127.0.0.1:9/x"), {});
  EXPECT_EQ(plain.store->stats().cache_hits + plain.store->stats().cache_misses, 0u);
  TempDir cache;
  const auto wrapped = backend_registry().layers()[0].wrap(plain, parse_storage_options({{"cache_dir", cache.str()}}, http));
  EXPECT_NE(wrapped.store.get(), plain.store.get());
  EXPECT_EQ(wrapped.store->url(), plain.store->url());
  const auto same = backend_registry().layers()[0].wrap(plain, parse_storage_options({{"cache_dir", ""}}, http));
  EXPECT_EQ(same.store.get(), plain.store.get());
}

// The registry refuses a second claim of a scheme or https host (each is defined once); every
// shared option a backend names exists. (Each scheme registered once: test_azure_store.cpp.)
TEST(BackendRegistry, ClaimsAreExclusiveAndSharedOptionsExist) {
  BackendRegistry r;
  r.add({.role = BackendRole::ObjectStore, .schemes = {"x1", "x2"}, .https_hosts = {"*.x.example"}});
  EXPECT_THROW(r.add({.role = BackendRole::ObjectStore, .schemes = {"x2"}}), StoreError);
  EXPECT_THROW(r.add({.role = BackendRole::ObjectStore, .schemes = {"y"}, .https_hosts = {"*.x.example"}}), StoreError);
  EXPECT_EQ(r.backends().size(), 1u);
  // Every shared option a backend names exists.
  for (const auto& b : backend_registry().backends())
    for (std::string_view name : b.shared_options) {
      bool found = false;
      for (const auto& spec : shared_option_table()) found = found || spec.name == name;
      EXPECT_TRUE(found) << b.name() << " names unknown shared option " << name;
    }
}

TEST(UrlScheme, UnsupportedSchemeIsNamedByOpenAndGdal) {
  EXPECT_NE(message_of<StoreError>([] { open_location("ftp://h/x"); }).find("'ftp'"), std::string::npos);
  EXPECT_NE(message_of<StoreError>([] { netcdf::gdal_location("ftp://h/x.nc", {}); }).find("'ftp'"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// The option table and parser, no server.

// A valid text for an option of value type `type`.
std::string sample_value(std::string_view type) {
  if (type == "seconds") return "1.5";
  if (type == "integer") return "3";
  if (type == "bytes") return "8388608";  // 8 MiB: inside every byte option's range
  if (type == "bool") return "true";
  return "x";
}

// The network backends in listing order (the docs/stores.md table's columns: http(s), s3, gs, az).
std::vector<const Backend*> network_backends() {
  std::vector<const Backend*> out;
  for (const auto& b : backend_registry().backends())
    if (b.takes_storage_options()) out.push_back(&b);
  return out;
}

// Every option any backend takes: the common ones, the shared ones, each backend's own.
std::vector<StorageOptionSpec> every_option() {
  std::vector<StorageOptionSpec> out(common_option_table().begin(), common_option_table().end());
  out.insert(out.end(), shared_option_table().begin(), shared_option_table().end());
  for (const auto& b : backend_registry().backends()) out.insert(out.end(), b.own_options.begin(), b.own_options.end());
  return out;
}

TEST(StorageOptionTable, EveryOptionParsesForItsBackendsOnly) {
  std::set<std::string_view> names;
  for (const auto& spec : every_option()) {
    EXPECT_TRUE(names.insert(spec.name).second) << "listed twice: " << spec.name;
    EXPECT_FALSE(spec.doc.empty()) << spec.name;
    bool someone = false;
    for (const Backend* b : network_backends()) {
      const StoreOptions one{{std::string(spec.name), sample_value(spec.value)}};
      if (takes_option(*b, spec.name)) {
        someone = true;
        const StorageOptions o = parse_storage_options(one, *b);
        EXPECT_EQ(o.given.count(spec.name), 1u) << spec.name;
      } else {
        const std::string msg = message_of<StoreError>([&] { parse_storage_options(one, *b); });
        EXPECT_NE(msg.find("'" + std::string(spec.name) + "' does not apply"), std::string::npos) << msg;
      }
    }
    EXPECT_TRUE(someone) << spec.name << " is taken by no backend";
  }
  // Common options: every network backend.
  for (const auto& spec : common_option_table())
    for (const Backend* b : network_backends()) EXPECT_TRUE(takes_option(*b, spec.name)) << spec.name;
  // A backend's own option lands in StorageOptions::own, typed values checked.
  const StorageOptions az = parse_storage_options({{"account_name", "acct"}}, "az");
  EXPECT_EQ(az.own_option("account_name"), "acct");
  EXPECT_EQ(az.own_option("sas_token"), "");
}

// The "Storage options" table of docs/stores.md (the guide to stores and credentials) is the
// registry's options, row for row.
TEST(StorageOptionTable, DocsTableMatches) {
  const std::string readme = read_file(fs::path(LAZYCUBE_SOURCE_DIR) / "docs" / "stores.md");
  std::string header = "| Option |";
  for (const Backend* b : network_backends()) header += " " + std::string(b->name() == "http" ? "http(s)" : b->name()) + " |";
  EXPECT_NE(readme.find(header + " Value | Meaning |"), std::string::npos) << "docs/stores.md lacks the header\n" << header;
  for (const auto& spec : every_option()) {
    std::string row = "| `" + std::string(spec.name) + "` |";
    for (const Backend* b : network_backends()) row += takes_option(*b, spec.name) ? " yes |" : "  |";
    row += " " + std::string(spec.value) + " | " + std::string(spec.doc) + " |";
    EXPECT_NE(readme.find(row), std::string::npos) << "docs/stores.md lacks the row\n" << row;
  }
}

TEST(StorageOptionTable, TuningOptionsLandInTheSameFieldsForEveryBackend) {
  const StoreOptions tuning{{"max_concurrency", "7"}, {"timeout", "2.5"},   {"connect_timeout", "3"},
                            {"low_speed_time", "4"},  {"retries", "9"},     {"deadline", "12"},
                            {"backoff", "0.25"},      {"max_backoff", "1.5"}, {"ca_file", "/tmp/ca.pem"},
                            {"coalesce_gap", "100"},  {"coalesce_max", "5000"}, {"max_idle_connections", "5"}};
  for (const Backend* b : network_backends()) {
    const TransferOptions t = parse_storage_options(tuning, *b).transfer;
    EXPECT_EQ(t.engine.max_in_flight, 7u);
    EXPECT_DOUBLE_EQ(t.engine.timeout_s, 2.5);
    EXPECT_DOUBLE_EQ(t.engine.connect_timeout_s, 3);
    EXPECT_DOUBLE_EQ(t.engine.low_speed_time_s, 4);
    EXPECT_EQ(t.retry.max_attempts, 10);
    EXPECT_DOUBLE_EQ(t.retry.deadline_s, 12);
    EXPECT_DOUBLE_EQ(t.retry.initial_backoff_s, 0.25);
    EXPECT_DOUBLE_EQ(t.retry.max_backoff_s, 1.5);
    EXPECT_EQ(t.engine.ca_file, "/tmp/ca.pem");
    EXPECT_EQ(t.engine.max_idle_connections, 5u);
    EXPECT_EQ(t.coalesce_gap, 100u);
    EXPECT_EQ(t.coalesce_max, 5000u);
  }
}

TEST(StorageOptionTable, BadValuesNameTheOptionButNeverASecret) {
  for (const auto& kv : std::vector<std::pair<std::string, std::string>>{
           {"max_concurrency", "0"}, {"max_concurrency", "8.5"}, {"timeout", "soon"}, {"deadline", "-1"},
           {"retries", "-1"}, {"coalesce_gap", "1k"}, {"anon", "maybe"}}) {
    const std::string& k = kv.first;
    const std::string msg = message_of<StoreError>([&] { parse_storage_options({kv}, "s3"); });
    EXPECT_NE(msg.find("'" + k + "'"), std::string::npos) << msg;
  }
}

// List options (allowed_prefixes): one parser, the comma form or a JSON list; anything else that
// does not parse is a UsageError naming the option -- never a local path made of JSON debris.
TEST(StorageOptionLists, CommaFormAndJsonListGiveTheSameItems) {
  const std::vector<std::string> want{"http://h/", "s3://b/c/", "/data", "*"};
  EXPECT_EQ(parse_list_option("allowed_prefixes", "http://h/,s3://b/c/,/data,*"), want);
  EXPECT_EQ(parse_list_option("allowed_prefixes", "http://h/, s3://b/c/ /data\t*,"), want);
  EXPECT_EQ(parse_list_option("allowed_prefixes", R"(["http://h/","s3://b/c/","/data","*"])"), want);
  EXPECT_EQ(parse_list_option("allowed_prefixes", R"(  [ "http://h/" , "s3://b/c/", "/data", "*" ] )"), want);
  // A JSON item keeps commas and spaces (the comma form cannot carry them).
  EXPECT_EQ(parse_list_option("allowed_prefixes", R"(["/a b,c/"])"), std::vector<std::string>{"/a b,c/"});
  EXPECT_TRUE(parse_list_option("allowed_prefixes", "").empty());
  EXPECT_TRUE(parse_list_option("allowed_prefixes", "[]").empty());
  EXPECT_TRUE(is_list_option("allowed_prefixes"));
  EXPECT_FALSE(is_list_option("timeout"));
  EXPECT_NO_THROW(check_list_options({{"allowed_prefixes", R"(["http://h/"])"}, {"timeout", "[x"}}));
}

TEST(StorageOptionLists, WhatDoesNotParseIsAUsageErrorNamingTheOption) {
  for (const std::string bad : {R"(["http://h/")", R"([http://h/])", R"(["a",])", R"([1])", R"(["a", null])",
                                R"([["a"]])", R"([""])", R"({"a": 1})", R"("http://h/")", R"(http://h/"])",
                                "http:/h/", "s3:bucket/x", "http://", R"(/data,["x"])"}) {
    const std::string msg = message_of<UsageError>([&] { parse_list_option("allowed_prefixes", bad); });
    EXPECT_NE(msg.find("storage option 'allowed_prefixes'"), std::string::npos) << bad << " -> " << msg;
    const std::string checked = message_of<UsageError>([&] { check_list_options({{"allowed_prefixes", bad}}); });
    EXPECT_EQ(checked, msg);
  }
  // Through parse_storage_options too (every network backend accepts the option).
  const std::string msg =
      message_of<UsageError>([&] { parse_storage_options({{"allowed_prefixes", R"(["http://h/")"}}, "s3"); });
  EXPECT_NE(msg.find("'allowed_prefixes'"), std::string::npos) << msg;
  EXPECT_NO_THROW(parse_storage_options({{"allowed_prefixes", R"(["http://h/"])"}}, "s3"));
}

TEST(StorageOptionLists, AccessPolicyTakesTheJsonForm) {
  const refs::TargetUrl dir = refs::parse_absolute("/refs", "dir");
  const refs::AccessPolicy json(dir, R"(["http://h/data/", "s3://b/"])");
  const refs::AccessPolicy comma(dir, "http://h/data/,s3://b/");
  EXPECT_EQ(json.describe(), comma.describe());
  EXPECT_EQ(json.describe(), "/refs, http://h/data, s3://b/");
  EXPECT_NO_THROW(json.check(refs::parse_absolute("http://h/data/x.nc", "t"), "k"));
  EXPECT_THROW(json.check(refs::parse_absolute("http://other/x.nc", "t"), "k"), StoreError);
  const std::string msg = message_of<UsageError>([&] { refs::AccessPolicy(dir, R"(["http://h/")"); });
  EXPECT_NE(msg.find("'allowed_prefixes'"), std::string::npos) << msg;
}

// ---------------------------------------------------------------------------------------------
// Against nginx: one server for the suite; s3:// and gs:// reach it through endpoint_url.

struct Objects {
  std::vector<std::string> data;
  Objects() {
    std::mt19937 rng(7);
    for (int i = 0; i < 4; ++i) {
      std::string s(5000 + 101 * i, '\0');
      for (auto& c : s) c = static_cast<char>(rng());
      data.push_back(std::move(s));
    }
  }
};

class SharedNginx : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!nginx_unavailable_reason().empty()) return;
    www_ = new TempDir;
    objects_ = new Objects;
    for (std::size_t i = 0; i < objects_->data.size(); ++i)
      write_file(www_->path() / "bkt" / ("o" + std::to_string(i)), objects_->data[i]);
    // Read by the timeout and deadline tests only: nginx logs their abandoned requests late.
    write_file(www_->path() / "bkt" / "slow", objects_->data[0]);
    server_ = new NginxServer(www_->path());
  }
  static void TearDownTestSuite() {
    delete server_;
    delete objects_;
    delete www_;
    server_ = nullptr;
  }
  void SetUp() override {
    LAZYCUBE_REQUIRE_NGINX();
    env_ = std::make_unique<CleanCloudEnv>(home_.str());  // gs:// and s3:// anonymous
    server_->set_faults("");
  }
  void TearDown() override {
    if (server_) server_->set_faults("");
  }

  const std::string& object(int i) const { return objects_->data[i]; }

  // The access-log lines nginx writes for `n` requests logged after `before` lines.
  std::vector<std::string> new_log_lines(std::size_t before, std::size_t n) const {
    for (int i = 0; i < 200 && server_->logged_requests() < before + n; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::istringstream log(server_->access_log());
    std::vector<std::string> lines;
    std::string line;
    for (std::size_t k = 0; std::getline(log, line); ++k)
      if (k >= before) lines.push_back(line);
    return lines;
  }

  static TempDir* www_;
  static Objects* objects_;
  static NginxServer* server_;
  TempDir home_;
  std::unique_ptr<CleanCloudEnv> env_;
};

TempDir* SharedNginx::www_ = nullptr;
Objects* SharedNginx::objects_ = nullptr;
NginxServer* SharedNginx::server_ = nullptr;

// Each test runs for http://, s3://, gs:// and gcs://.
class Tuning : public SharedNginx, public ::testing::WithParamInterface<std::string> {
 protected:
  // The URL of the bucket for the scheme under test, and the options that route it to nginx.
  std::string url() const {
    const std::string& s = GetParam();
    return s == "http" ? server_->url() + "/bkt" : s + "://bkt";
  }
  StoreOptions with_route(StoreOptions o) const {
    if (GetParam() != "http") o["endpoint_url"] = server_->url();
    if (GetParam() == "s3") o["anon"] = "true";
    return o;
  }
  std::shared_ptr<Store> store(StoreOptions o) const { return open_location(url(), with_route(std::move(o))).store; }
};

TEST_P(Tuning, ReadsAndNamesItsScheme) {
  auto s = store({});
  ASSERT_EQ(as_string(*s->get("o1")), object(1));
  EXPECT_EQ(as_string(*s->get("o2", ByteRange::range(10, 20))), object(2).substr(10, 20));
  EXPECT_FALSE(s->get("missing"));
  if (GetParam() != "http") {
    EXPECT_EQ(s->url(), parse_url_scheme(GetParam() + "://").scheme + "://bkt");
  }
}

TEST_P(Tuning, TimeoutAndRetriesAreApplied) {
  server_->set_faults("latency_ms = 3000");
  auto s = store({{"timeout", "0.1"}, {"retries", "1"}, {"backoff", "0.001"}});
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = message_of<StoreError>([&] { s->get("slow"); });
  EXPECT_NE(msg.find("2 attempt"), std::string::npos) << msg;
  EXPECT_LT(seconds_since(t0), 2.5);
  EXPECT_EQ(s->stats().retries_by_cause["timeout"], 1u);
}

TEST_P(Tuning, DeadlineBoundsRetries) {
  server_->set_faults("pdrop = 1");
  auto s = store({{"retries", "100000"}, {"deadline", "0.2"}, {"backoff", "0.02"}, {"max_backoff", "0.05"}});
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = message_of<StoreError>([&] { s->get("slow", ByteRange::range(0, 10)); });
  EXPECT_NE(msg.find("deadline"), std::string::npos) << msg;
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_GT(s->stats().retries_by_cause["connection"], 0u);
}

// The cap is observed without upper time bounds: with 60 ms of latency per request, four
// requests in flight at once are served on four connections (nginx's log), and one at a time
// cannot take less than four latencies.
TEST_P(Tuning, ConcurrencyCapIsApplied) {
  server_->set_faults("latency_ms = 60");
  std::vector<ByteRequest> reqs;
  for (int i = 0; i < 4; ++i) reqs.push_back({"o" + std::to_string(i), ByteRange::full()});
  auto read_all = [&](const std::string& cap) {
    auto s = store({{"max_concurrency", cap}});
    auto out = s->get_many(reqs);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(as_string(*out[i]), object(i));
  };
  // A cold connection pool makes requests wait for the first connection (curl's PIPEWAIT, to
  // learn whether it multiplexes): warm it first.
  const std::size_t pre = server_->logged_requests();
  read_all("4");
  const std::size_t before = pre + new_log_lines(pre, 4).size();
  read_all("4");
  std::set<std::string> connections;  // of this read's requests
  for (const auto& line : new_log_lines(before, 4))
    if (line.find(" 200 \"GET /bkt/o") != std::string::npos) connections.insert(line.substr(0, line.find(' ')));
  EXPECT_EQ(connections.size(), 4u) << server_->access_log();
  const auto t0 = std::chrono::steady_clock::now();
  read_all("1");
  EXPECT_GE(seconds_since(t0), 4 * 0.06 * 0.95);
}

TEST_P(Tuning, CoalescingIsApplied) {
  const std::vector<ByteRequest> reqs{
      {"o3", ByteRange::range(0, 100)}, {"o3", ByteRange::range(400, 100)}, {"o3", ByteRange::range(200, 100)}};
  auto requests_with = [&](StoreOptions o) {
    auto s = store(std::move(o));
    auto out = s->get_many(reqs);
    for (std::size_t i = 0; i < reqs.size(); ++i)
      EXPECT_EQ(as_string(*out[i]), object(3).substr(reqs[i].range.offset, reqs[i].range.length));
    return s->stats().requests;
  };
  EXPECT_EQ(requests_with({}), 1u);                         // default gap 64 KiB: one request
  EXPECT_EQ(requests_with({{"coalesce_gap", "0"}}), 3u);    // no merging
  EXPECT_EQ(requests_with({{"coalesce_max", "150"}}), 3u);  // merged requests too long
  EXPECT_EQ(requests_with({{"coalesce_gap", "100"}, {"coalesce_max", "300"}}), 2u);
}

TEST_P(Tuning, UnknownOptionListsTheValidOnes) {
  const std::string msg = message_of<StoreError>([&] { store({{"max_concurency", "4"}}); });
  const std::string scheme(parse_url_scheme(url()).scheme);
  EXPECT_NE(msg.find("'max_concurency'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(scheme + "://"), std::string::npos) << msg;
  EXPECT_NE(msg.find("max_concurrency, timeout"), std::string::npos) << msg;
  EXPECT_NE(msg.find("deadline"), std::string::npos) << msg;
  EXPECT_NE(msg.find("coalesce_gap"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("endpoint_url") != std::string::npos, GetParam() != "http") << msg;
  EXPECT_EQ(msg.find("profile") != std::string::npos, GetParam() == "s3") << msg;
  // The gdal engine checks with the same parser.
  const std::string gdal = message_of<StoreError>(
      [&] { netcdf::gdal_location(url() + "/x.nc", with_route({{"max_concurency", "4"}})); });
  EXPECT_EQ(gdal, msg);
}

INSTANTIATE_TEST_SUITE_P(Schemes, Tuning, ::testing::Values("http", "s3", "gs", "gcs"),
                         [](const auto& info) { return info.param; });

// gcs:// is gs:// everywhere: the same bytes from the store and from a kerchunk reference set
// whose targets (and allowed prefix) are written with gcs://.
TEST_F(SharedNginx, GcsTargetsOfReferenceSetsReadLikeGs) {
  TempDir dir;
  write_file(dir.path() / "refs.json",
             R"({"version": 1, "refs": {"a": ["gcs://bkt/o1", 10, 100], "b": ["gs://bkt/o2"]}})");
  const StoreOptions o{{"endpoint_url", server_->url()}, {"allowed_prefixes", "gcs://bkt"}};
  auto s = refs::open_references("reference://" + (dir.path() / "refs.json").string(), o).store;
  EXPECT_EQ(as_string(*s->get("a")), object(1).substr(10, 100));
  EXPECT_EQ(as_string(*s->get("b")), object(2));
}

TEST(GcsScheme, GdalMapsGcsLikeGs) {
  TempDir home;
  CleanCloudEnv env(home.str());
  const StoreOptions o{{"endpoint_url", "http://127.0.0.1:1"}, {"timeout", "2.5"}, {"retries", "4"}};
  const auto gs = netcdf::gdal_location("gs://bkt/dir/x.nc", o);
  const auto gcs = netcdf::gdal_location("gcs://bkt/dir/x.nc", o);
  EXPECT_EQ(gs.path, "/vsigs/bkt/dir/x.nc");
  EXPECT_EQ(gcs.path, gs.path);
  EXPECT_EQ(gcs.options, gs.options);
  const std::vector<std::pair<std::string, std::string>> want{
      {"CPL_GS_ENDPOINT", "http://127.0.0.1:1/"}, {"GS_NO_SIGN_REQUEST", "YES"},
      {"GDAL_HTTP_TIMEOUT", "2.5"}, {"GDAL_HTTP_MAX_RETRY", "4"}};
  EXPECT_EQ(gs.options, want);
  EXPECT_THROW(netcdf::gdal_location("gcs://bkt", o), StoreError);  // no object key
}

}  // namespace
