// The HTTP-object Store: GET/HEAD objects, paginated listings (S3 ListObjectsV2 or Azure List
// Blobs), errors mapped to StoreError.
#include "object_store.hpp"

#include <algorithm>
#include <cstring>
#include <ctime>
#include <type_traits>

#include "lazycube/store/byte_range.hpp"
#include "http_coalesce.hpp"
#include "http_counters.hpp"
#include "http_util.hpp"
#include "lazycube/error.hpp"
#include "azure_protocol.hpp"
#include "s3_protocol.hpp"

namespace lazycube::cloud {

namespace {

std::string body_text(const Buffer& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

class ObjectStore final : public Store {
 public:
  explicit ObjectStore(ObjectStoreConfig c) : c_(std::move(c)) {}

  std::string url() const override {
    return c_.scheme + "://" + c_.bucket + (c_.prefix.empty() ? "" : "/" + c_.prefix);
  }

  StoreStats stats() const override { return counters_.snapshot(); }
  // One engine batch per read keeps every chunk's request in flight at once (as for http(s)://).
  bool prefers_batches() const override { return true; }

  std::optional<Buffer> get(std::string_view key, ByteRange range) override {
    Buffer out;
    if (!get_into(key, range, out)) return std::nullopt;
    return out;
  }

  bool get_into(std::string_view key, ByteRange range, Buffer& out) override { return fetch_into(key, range, 0, out); }

  // Straight into `out` unless the request asks what only get_each checks (a read condition).
  bool read_into(const ByteRequest& request, Buffer& out) override {
    if (!request.condition.empty()) return Store::read_into(request, out);
    return fetch_into(request.key, request.range, request.max_bytes, out);
  }

  // One GET into `out`, its body bounded by `max_bytes` (0: the engine's bound).
  bool fetch_into(std::string_view key, ByteRange range, std::uint64_t max_bytes, Buffer& out) {
    if (!absolute_suffix(key, range)) return false;
    if (range.kind == ByteRange::Kind::Range && range.length == 0) {
      auto n = size(key);  // a zero-length range has no Range header form: check existence
      if (!n) return false;
      detail::resolve_range(range, *n, describe(key));
      out.resize(0);
      return true;
    }
    auto req = object_request("GET", key, range);
    req.max_body = http::max_body_of(range, max_bytes);
    auto responses = perform({std::move(req)});
    const Got got = finish_get(key, range, responses[0], out);
    return got == Got::CheckEnd ? read_at_end(key, range, out) : got == Got::Bytes;
  }

  // Coalesces nearby ranges of one object (coalesce_gap / coalesce_max) into fewer requests,
  // then hands each request's bytes to `sink` as its (coalesced) request completes.
  void get_each(const std::vector<ByteRequest>& requests, const ByteSink& sink) override {
    std::vector<ByteRequest> batched;
    std::vector<std::size_t> index;  // batched[j] is requests[index[j]]
    for (std::size_t i = 0; i < requests.size(); ++i) {
      ByteRequest r = requests[i];
      if (!absolute_suffix(r.key, r.range)) {
        sink(i, std::nullopt);
      } else if (r.range.kind == ByteRange::Kind::Range && r.range.length == 0) {
        sink(i, get(r.key, r.range));
      } else {
        batched.push_back(std::move(r));
        index.push_back(i);
      }
    }
    if (batched.empty()) return;
    const auto plan = http::coalesce(batched, c_.transfer.coalesce_gap, c_.transfer.coalesce_max);
    std::vector<http::Request> fetches;
    for (const auto& f : plan.fetches) {
      fetches.push_back(object_request("GET", f.key, f.range));
      fetches.back().max_body = http::max_body_of(f.range, f.max_bytes);
      for (auto& h : http::condition_headers(f.condition)) fetches.back().headers.push_back(std::move(h));
    }
    const auto name = [this](std::string_view key) { return describe(key); };
    const ByteSink to_caller = [&](std::size_t j, std::optional<Buffer>&& bytes) { sink(index[j], std::move(bytes)); };
    std::vector<std::size_t> check_end;  // fetches answered 416 without the object's size
    redacted([&] {
      http::Engine::global().perform_each(fetches, c_.transfer.retry, c_.transfer.engine, &counters_,
                                          [&](std::size_t f, http::Response&& response) {
        Buffer b;
        http::check_condition(response.status, response.headers, plan.fetches[f].condition, describe(plan.fetches[f].key));
        const Got got = finish_get(plan.fetches[f].key, plan.fetches[f].range, response, b);
        if (got == Got::CheckEnd) check_end.push_back(f);
        else if (got == Got::Bytes) http::deliver(plan, f, std::move(b), batched, name, to_caller);
        else http::deliver(plan, f, std::nullopt, batched, name, to_caller);
      });
    });
    for (const std::size_t f : check_end) {
      Buffer b;
      if (read_at_end(plan.fetches[f].key, plan.fetches[f].range, b))
        http::deliver(plan, f, std::move(b), batched, name, to_caller);
      else
        http::deliver(plan, f, std::nullopt, batched, name, to_caller);
    }
  }

  std::optional<std::uint64_t> size(std::string_view key) override {
    auto head_reply = head(key);
    if (!head_reply) return std::nullopt;
    const http::Response& r = *head_reply;
    auto it = r.headers.find("content-length");
    if (it == r.headers.end())
      throw StoreError(describe(key) + ": HEAD response without Content-Length");
    try {
      return std::stoull(it->second);
    } catch (const std::exception&) {
      throw StoreError(describe(key) + ": bad Content-Length '" + it->second + "'");
    }
  }

  ObjectVersion version(std::string_view key) override {
    http::Response r = head_reply(key);
    return http::object_version(r.status, r.headers, static_cast<std::int64_t>(std::time(nullptr)));
  }

  // The HEAD reply for `key`; nullopt when it does not exist, StoreError on other failures.
  std::optional<http::Response> head(std::string_view key) {
    http::Response r = head_reply(key);
    if (r.status == 404) return std::nullopt;
    return r;
  }

  // The HEAD reply for `key`, a 404 included (its caching headers say how long the absence
  // holds); StoreError on other failures.
  http::Response head_reply(std::string_view key) {
    auto responses = perform({object_request("HEAD", key, ByteRange::full())});
    auto& r = responses[0];
    if (r.status == 404) return std::move(r);
    if (r.status != 200) {
      // HEAD errors carry no body: ask again with a one-byte GET to learn the server's error code.
      auto again = perform({object_request("GET", key, ByteRange::range(0, 1))});
      if (again[0].status == 404) return std::move(again[0]);
      if (again[0].status >= 400 && again[0].status != 416) fail(again[0], describe(key));
      fail(r, describe(key));
    }
    return std::move(r);
  }

  // Writable with a bucket or container in the URL (an account-wide store addresses objects by
  // container-qualified keys for reading kerchunk targets only).
  bool writable() const override { return !c_.bucket.empty(); }

  void put(std::string_view key, ByteView bytes) override {
    if (!writable()) Store::put(key, bytes);
    const std::uint64_t part = c_.transfer.part_size;
    if (bytes.size() <= part) {
      auto req = upload_request("PUT", object_url(key), bytes);
      if (c_.dialect == ListDialect::Azure) req.headers.push_back("x-ms-blob-type: BlockBlob");
      check_written(perform({std::move(req)})[0], key);
    } else if (c_.dialect == ListDialect::Azure) {
      put_block_list(key, bytes, part);
    } else {
      put_multipart(key, bytes, part);
    }
  }

  void remove(std::string_view key) override {
    if (!writable()) Store::remove(key);
    const auto r = perform({base_request("DELETE", object_url(key))})[0];
    if (r.status != 404 && (r.status < 200 || r.status > 299)) fail(r, "removing " + describe(key));
  }

  std::vector<std::string> list(std::string_view prefix) override {
    std::vector<std::string> keys;
    const std::string rel = dir_prefix(prefix);
    list_objects(rel, false, [&](std::string key, bool) { keys.push_back(std::move(key)); });
    std::sort(keys.begin(), keys.end());
    return keys;
  }

  std::vector<std::string> list_dir(std::string_view prefix) override {
    std::vector<std::string> names;
    const std::string rel = dir_prefix(prefix);
    list_objects(rel, true, [&](std::string key, bool) {
      std::string name = key.substr(rel.size());
      while (!name.empty() && name.back() == '/') name.pop_back();
      if (!name.empty()) names.push_back(std::move(name));
    });
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
  }

 private:
  static std::string dir_prefix(std::string_view prefix) {
    std::string p(prefix);
    while (!p.empty() && p.front() == '/') p.erase(0, 1);
    if (!p.empty() && p.back() != '/') p += '/';
    return p;
  }

  std::string full_key(std::string_view key) const {
    std::string k(key);
    while (!k.empty() && k.front() == '/') k.erase(0, 1);
    return c_.prefix.empty() ? k : c_.prefix + "/" + k;
  }

  http::Request base_request(const std::string& method, std::string url) const {
    http::Request req;
    req.method = method;
    req.url = std::move(url);
    req.headers = c_.headers;
    req.sigv4 = c_.sigv4;
    req.signer = c_.signer;
    return req;
  }

  std::string object_url(std::string_view key) const {
    return c_.base_url + "/" + http::percent_encode(full_key(key), true);
  }

  http::Request object_request(const std::string& method, std::string_view key, ByteRange range) const {
    auto req = base_request(method, object_url(key));
    req.range = range;
    return req;
  }

  // A PUT or POST carrying `payload` (not copied: the caller's bytes stay alive through
  // perform), or `text` (owned by the request). Content-Length is explicit: Azure's SharedKey
  // signs it.
  http::Request upload_request(const std::string& method, std::string url, ByteView payload,
                               const std::string& content_type = "application/octet-stream",
                               std::string text = {}) const {
    auto req = base_request(method, std::move(url));
    req.payload = payload;
    req.body = std::move(text);
    req.headers.push_back("Content-Type: " + content_type);
    req.headers.push_back("Content-Length: " + std::to_string(payload.empty() ? req.body.size() : payload.size()));
    return req;
  }

  void check_written(const http::Response& r, std::string_view key) const {
    if (r.status < 200 || r.status > 299) fail(r, "writing " + describe(key));
    // S3 may answer a CompleteMultipartUpload 200 with an <Error> body.
    const auto err = s3::parse_error_body(body_text(r.body));
    if (!err.code.empty()) fail(r, "writing " + describe(key));
  }

  static std::vector<ByteView> parts_of(ByteView bytes, std::uint64_t part) {
    std::vector<ByteView> parts;
    for (std::uint64_t at = 0; at < bytes.size(); at += part)
      parts.push_back(bytes.subspan(at, std::min<std::uint64_t>(part, bytes.size() - at)));
    return parts;
  }

  // S3 (and GCS's XML API): initiate, upload the parts concurrently, complete with their ETags;
  // any failure aborts the upload, so no invisible parts are left billed.
  void put_multipart(std::string_view key, ByteView bytes, std::uint64_t part) {
    const std::string url = object_url(key);
    const auto init = perform({upload_request("POST", url + "?uploads=", {})})[0];
    check_written(init, key);
    std::size_t from = 0;
    const std::string upload_id = s3::xml_element(body_text(init.body), "UploadId", from);
    if (upload_id.empty()) throw StoreError("writing " + describe(key) + ": the multipart upload got no UploadId");
    const std::string id_query = "uploadId=" + http::percent_encode(upload_id, false);
    try {
      const auto parts = parts_of(bytes, part);
      std::vector<http::Request> puts;
      for (std::size_t i = 0; i < parts.size(); ++i)
        puts.push_back(upload_request("PUT", url + "?partNumber=" + std::to_string(i + 1) + "&" + id_query, parts[i]));
      std::vector<std::string> etags(parts.size());
      redacted([&] {
        http::Engine::global().perform_each(puts, c_.transfer.retry, c_.transfer.engine, &counters_,
                                            [&](std::size_t i, http::Response&& r) {
          check_written(r, key);
          const auto it = r.headers.find("etag");
          if (it == r.headers.end())
            throw StoreError("writing " + describe(key) + ": part " + std::to_string(i + 1) + " got no ETag");
          etags[i] = it->second;
        });
      });
      check_written(perform({upload_request("POST", url + "?" + id_query, {}, "application/xml",
                                            s3::complete_multipart_xml(etags))})[0],
                    key);
    } catch (...) {
      try {
        perform({base_request("DELETE", url + "?" + id_query)});
      } catch (const StoreError&) {
      }
      throw;
    }
  }

  // Azure: Put Block for each part (uncommitted blocks are dropped by the service after a week),
  // then Put Block List commits them in order.
  void put_block_list(std::string_view key, ByteView bytes, std::uint64_t part) {
    const std::string url = object_url(key);
    const auto parts = parts_of(bytes, part);
    std::vector<std::string> ids;
    std::vector<http::Request> puts;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      ids.push_back(azure::block_id(i));
      puts.push_back(upload_request("PUT", url + "?comp=block&blockid=" + http::percent_encode(ids.back(), false), parts[i]));
    }
    redacted([&] {
      http::Engine::global().perform_each(puts, c_.transfer.retry, c_.transfer.engine, &counters_,
                                          [&](std::size_t, http::Response&& r) { check_written(r, key); });
    });
    check_written(
        perform({upload_request("PUT", url + "?comp=blocklist", {}, "application/xml", azure::block_list_xml(ids))})[0], key);
  }

  std::vector<http::Response> perform(const std::vector<http::Request>& requests) {
    return redacted([&] { return http::Engine::global().perform(requests, c_.transfer.retry, c_.transfer.engine, &counters_); });
  }

  // Runs `fetch`, keeping secrets out of the messages of the store errors it throws.
  template <class Fetch>
  std::invoke_result_t<Fetch> redacted(Fetch&& fetch) {
    try {
      return fetch();
    } catch (const AuthError& e) {
      throw AuthError(s3::redact(e.what(), c_.secrets));
    } catch (const NotFound& e) {
      throw NotFound(s3::redact(e.what(), c_.secrets));
    } catch (const StoreError& e) {
      throw StoreError(s3::redact(e.what(), c_.secrets));
    }
  }

  // A GET's outcome: bytes in `out`, a missing object, or a 416 that does not say whether the
  // read starts exactly at the object's end (S3 and Azure send no "bytes */N"): read_at_end.
  enum class Got { Bytes, Missing, CheckEnd };

  Got finish_get(std::string_view key, const ByteRange& range, http::Response& r, Buffer& out) {
    if (r.status == 404) return Got::Missing;
    if (r.status == 416) {
      // Range not satisfiable: an empty object read from 0 / by suffix is empty. Otherwise the
      // file store's rule (detail::resolve_range): a read starting exactly at the end is empty,
      // one starting past it an error. The size comes from the reply when it says it (else a
      // HEAD, after the batch: read_at_end).
      if (range.kind == ByteRange::Kind::Suffix || range.offset == 0) {
        out.resize(0);
        return Got::Bytes;
      }
      const std::optional<std::uint64_t> n = unsatisfied_size(r);
      if (!n) return Got::CheckEnd;
      if (detail::resolve_range(range, *n, describe(key)).length != 0)
        throw StoreError(describe(key) + ": HTTP 416 for " + range.describe() + " of an object of " +
                         std::to_string(*n) + " bytes");
      out.resize(0);
      return Got::Bytes;
    }
    if (r.status == 200 && range.kind != ByteRange::Kind::Full) {
      // The server ignored the Range header: cut the range out of the whole object.
      auto rr = detail::resolve_range(range, r.body.size(), describe(key));
      out.resize(rr.length);
      if (rr.length) std::memmove(out.data(), r.body.data() + rr.offset, rr.length);
      return Got::Bytes;
    }
    if (r.status != 200 && r.status != 206) fail(r, describe(key));
    out = std::move(r.body);
    return Got::Bytes;
  }

  // After a 416 without the object's size: empty when `range` starts exactly at the end
  // (asked with HEAD), else StoreError; false when the object is gone.
  bool read_at_end(std::string_view key, const ByteRange& range, Buffer& out) {
    const auto n = size(key);
    if (!n) return false;
    if (*n != range.offset)
      throw StoreError(describe(key) + ": " + range.describe() + " starts past the end of the object (" +
                       std::to_string(*n) + " bytes)");
    out.resize(0);
    return true;
  }

  // The object size a 416 reply states: Content-Range "bytes */N", or S3's <ActualObjectSize>.
  static std::optional<std::uint64_t> unsatisfied_size(const http::Response& r) {
    if (auto it = r.headers.find("content-range"); it != r.headers.end())
      if (auto n = http::parse_unsatisfied_range(it->second)) return n;
    std::size_t from = 0;
    const std::string text = s3::xml_element(body_text(r.body), "ActualObjectSize", from);
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    try {
      return std::stoull(text);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  // Servers without suffix ranges (Azure: no "bytes=-N"): the suffix becomes an absolute range
  // of the object's size (one HEAD). False when the object is missing.
  bool absolute_suffix(std::string_view key, ByteRange& range) {
    if (c_.suffix_ranges || range.kind != ByteRange::Kind::Suffix) return true;
    const auto n = size(key);
    if (!n) return false;
    const std::uint64_t len = std::min<std::uint64_t>(range.length, *n);
    range = len == 0 ? ByteRange::range(0, 0) : ByteRange::range(*n - len, len);
    return true;
  }

  [[noreturn]] void fail(const http::Response& r, const std::string& what) const {
    auto err = s3::parse_error_body(body_text(r.body));
    if (auto it = r.headers.find("x-ms-error-code"); err.code.empty() && it != r.headers.end()) err.code = it->second;
    // 401/403, and the 400s S3 answers for bad session tokens or malformed credentials.
    const bool auth = r.status == 401 || r.status == 403 ||
                      (r.status == 400 && (err.code == "InvalidToken" || err.code == "ExpiredToken" ||
                                           err.code == "TokenRefreshRequired" ||
                                           err.code == "AuthorizationHeaderMalformed"));
    std::string msg = auth ? "authentication failed for " + what + ": HTTP " : what + ": HTTP ";
    msg += std::to_string(r.status);
    if (!err.code.empty()) msg += " " + err.code;
    if (!err.message.empty()) msg += " (" + err.message + ")";
    if (auth) msg += " [credentials: " + c_.auth_description + "]";
    msg = s3::redact(std::move(msg), c_.secrets);
    if (auth) throw AuthError(msg);
    if (r.status == 404) throw NotFound(msg);
    throw StoreError(msg);
  }

  // The URL of one listing page (ListObjectsV2 or List Blobs).
  std::string list_page_url(const std::string& prefix, bool delimited, const std::string& token) const {
    if (c_.dialect == ListDialect::Azure)
      return c_.base_url + azure::list_page_query(prefix, delimited, token, c_.transfer.list_page_size);
    // Query parameters in sorted order (as SigV4's canonical form wants them).
    std::string q;
    auto add = [&](const char* k, const std::string& v) {
      q += q.empty() ? '?' : '&';
      q += k;
      q += '=';
      q += http::percent_encode(v, false);
    };
    if (!token.empty()) add("continuation-token", token);
    if (delimited) add("delimiter", "/");
    q += "&list-type=2";
    if (q[0] == '&') q[0] = '?';
    if (c_.transfer.list_page_size > 0) add("max-keys", std::to_string(c_.transfer.list_page_size));
    if (!prefix.empty()) add("prefix", prefix);
    return c_.base_url + "/" + q;
  }

  // Every page of the listing; calls `emit(key_or_prefix, is_prefix)` with keys relative to the
  // store root.
  template <class Emit>
  void list_objects(const std::string& rel_prefix, bool delimited, Emit&& emit) {
    if (c_.bucket.empty()) throw StoreError("listing " + url() + " needs a container in the URL");
    const std::string root = c_.prefix.empty() ? std::string() : c_.prefix + "/";
    const std::string prefix = root + rel_prefix;
    std::string token;
    for (int page_no = 0;; ++page_no) {
      auto responses = perform({base_request("GET", list_page_url(prefix, delimited, token))});
      auto& r = responses[0];
      const std::string what = "listing " + url() + (rel_prefix.empty() ? "/" : "/" + rel_prefix);
      if (r.status != 200) fail(r, what);
      auto page = c_.dialect == ListDialect::Azure ? azure::parse_list_page(body_text(r.body))
                                                   : s3::parse_list_page(body_text(r.body));
      for (auto& k : page.keys)
        if (k.size() > root.size() && k.compare(0, root.size(), root) == 0) emit(k.substr(root.size()), false);
      for (auto& p : page.prefixes)
        if (p.size() > root.size() && p.compare(0, root.size(), root) == 0) emit(p.substr(root.size()), true);
      if (!page.truncated) break;
      if (page.next_token == token || page_no > 1000000)
        throw StoreError(what + ": listing does not advance (continuation token or marker repeats)");
      token = std::move(page.next_token);
    }
  }

  ObjectStoreConfig c_;
  mutable http::Counters counters_;
};

}  // namespace

std::pair<std::string, std::string> bucket_and_prefix(const ParsedUrl& url) {
  const std::string& rest = url.rest;
  const auto slash = rest.find('/');
  std::string bucket = rest.substr(0, slash);
  std::string prefix = slash == std::string::npos ? std::string() : rest.substr(slash + 1);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  while (!prefix.empty() && prefix.front() == '/') prefix.erase(0, 1);
  if (bucket.empty()) throw StoreError("no bucket in '" + url.canonical() + "'");
  return {std::move(bucket), std::move(prefix)};
}

std::shared_ptr<Store> make_object_store(ObjectStoreConfig config) {
  return std::make_shared<ObjectStore>(std::move(config));
}

}  // namespace lazycube::cloud
