// Read-only store over plain HTTP(S): keys are paths under the root URL. Listing is impossible
// over plain HTTP, so Zarr hierarchies need consolidated metadata.
#include <ctime>

#include "storage_options.hpp"

#include "backend_registry.hpp"

#include "http_coalesce.hpp"
#include "http_counters.hpp"
#include "http_engine.hpp"
#include "http_util.hpp"
#include "lazycube/error.hpp"

namespace lazycube {

namespace {

class HttpStore final : public Store {
 public:
  HttpStore(std::string root, const TransferOptions& options) : root_(std::move(root)), options_(options) {
    while (!root_.empty() && root_.back() == '/') root_.pop_back();
  }

  std::string url() const override { return http::redact_url(root_); }

  std::optional<Buffer> get(std::string_view key, ByteRange range) override {
    auto r = get_many({{std::string(key), range}});
    return std::move(r[0]);
  }

  std::optional<std::uint64_t> size(std::string_view key) override {
    auto res = head(key);
    if (!res) return std::nullopt;
    auto it = res->headers.find("content-length");
    if (it == res->headers.end())
      throw StoreError("HEAD " + http::redact_url(url_of(key)) + ": no Content-Length in the reply");
    return std::strtoull(it->second.c_str(), nullptr, 10);
  }

  ObjectVersion version(std::string_view key) override {
    http::Request req;
    req.method = "HEAD";
    req.url = url_of(key);
    auto res = http::Engine::global().perform({req}, options_.retry, options_.engine, &counters_);
    if (res[0].status != 404) check_status(res[0], req);
    return http::object_version(res[0].status, res[0].headers, static_cast<std::int64_t>(std::time(nullptr)));
  }

  std::vector<std::string> list(std::string_view) override { throw no_listing(); }
  std::vector<std::string> list_dir(std::string_view) override { throw no_listing(); }

  StoreStats stats() const override { return counters_.snapshot(); }
  bool prefers_batches() const override { return true; }

 private:
  // The HEAD reply for `key`; nullopt on 404, StoreError on other failures.
  std::optional<http::Response> head(std::string_view key) {
    http::Request req;
    req.method = "HEAD";
    req.url = url_of(key);
    auto res = http::Engine::global().perform({req}, options_.retry, options_.engine, &counters_);
    if (res[0].status == 404) return std::nullopt;
    check_status(res[0], req);
    return std::move(res[0]);
  }

  static StoreError no_listing() {
    return StoreError("listing is not supported over plain HTTP; use consolidated metadata");
  }

  std::string url_of(std::string_view key) const {
    std::string k(key);
    while (!k.empty() && k.front() == '/') k.erase(0, 1);
    return root_ + "/" + http::percent_encode(k);
  }

  // Throws for a final reply that is neither data nor "missing".
  void check_status(const http::Response& res, const http::Request& req) {
    const long s = res.status;
    if (s >= 200 && s < 300) return;
    std::string server = http::server_error(
        std::string_view(reinterpret_cast<const char*>(res.body.data()), res.body.size()));
    std::string what = req.method + " " + http::redact_url(req.url);
    if (req.range.kind != ByteRange::Kind::Full) what += " (" + req.range.describe() + ")";
    if (s == 401 || s == 403)
      throw AuthError(std::to_string(s) + " " + (server.empty() ? "access denied" : server) + " (" + what +
                      ", attempts: " + std::to_string(res.attempts) + "): check the credentials");
    if (s == 416)
      throw StoreError(what + " starts past the end of the object (HTTP 416)");
    throw StoreError(what + ": HTTP " + std::to_string(s) + (server.empty() ? "" : " " + server) +
                     " (attempts: " + std::to_string(res.attempts) + ")");
  }

  // The redirect check of the requests for `key` (they name one object, so one check), in the
  // engine's form: "" allows a hop, anything else says why not.
  static std::function<std::string(const std::string&)> redirect_check_of(const std::vector<ByteRequest>& requests,
                                                                         const std::string& key) {
    for (const auto& r : requests) {
      if (r.key != key || !r.check_redirect) continue;
      return [check = r.check_redirect](const std::string& target) -> std::string {
        try {
          check(target);
        } catch (const Error& e) {
          return e.what();
        }
        return {};
      };
    }
    return {};
  }

  // A 416 for a range starting exactly at the object's end ("bytes */N" with offset N).
  static bool starts_at_end(const http::Response& res, const ByteRange& range) {
    if (range.kind != ByteRange::Kind::Range && range.kind != ByteRange::Kind::Offset) return false;
    auto it = res.headers.find("content-range");
    if (it == res.headers.end()) return false;
    auto total = http::parse_unsatisfied_range(it->second);
    return total && *total == range.offset;
  }

  // Coalesces nearby ranges into fewer requests, then hands each request's bytes to `sink`
  // as its (coalesced) request completes.
  void get_each(const std::vector<ByteRequest>& requests, const ByteSink& sink) override {
    auto plan = http::coalesce(requests, options_.coalesce_gap, options_.coalesce_max);
    std::vector<http::Request> reqs(plan.fetches.size());
    for (std::size_t i = 0; i < plan.fetches.size(); ++i) {
      reqs[i].url = url_of(plan.fetches[i].key);
      reqs[i].range = plan.fetches[i].range;
      reqs[i].headers = http::condition_headers(plan.fetches[i].condition);
      reqs[i].redirect_check = redirect_check_of(requests, plan.fetches[i].key);
      reqs[i].max_body = http::max_body_of(plan.fetches[i].range, plan.fetches[i].max_bytes);
    }
    const auto name = [this](std::string_view key) { return describe(key); };
    http::Engine::global().perform_each(reqs, options_.retry, options_.engine, &counters_,
                                        [&](std::size_t f, http::Response&& r) {
      if (r.status == 404) return http::deliver(plan, f, std::nullopt, requests, name, sink);  // every part missing
      http::check_condition(r.status, r.headers, plan.fetches[f].condition, describe(plan.fetches[f].key));
      if (r.status == 416 && starts_at_end(r, reqs[f].range)) {
        r.status = 206;  // a read starting exactly at the end is empty, not an error
        r.body.clear();
      }
      check_status(r, reqs[f]);
      http::deliver(plan, f, std::move(r.body), requests, name, sink);
    });
  }

  std::string root_;
  TransferOptions options_;
  mutable http::Counters counters_;
};

}  // namespace

std::shared_ptr<Store> make_http_store(const std::string& url, const StoreOptions& options) {
  return std::make_shared<HttpStore>(url, parse_storage_options(options, "http").transfer);
}

}  // namespace lazycube

LAZYCUBE_REGISTER_BACKEND(http) {
  using namespace lazycube;
  registry.add({.role = BackendRole::Http,
                .schemes = {"http", "https"},
                .open = [](const ParsedUrl& url, const StoreOptions& options) {
                  std::string root = url.canonical();
                  while (root.size() > 8 && root.back() == '/') root.pop_back();
                  return Location{make_http_store(root, options), ""};
                },
                .vsi = [](const ParsedUrl& url, const StorageOptions&) { return VsiLocation{.path = "/vsicurl/" + url.canonical()}; },
                .describe = "http(s)://",
                .listing_order = 20});
}
