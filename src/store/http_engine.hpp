// The process-wide HTTP fetch engine (internal: curl stays out of public headers).
// One curl-multi event loop per process, shared by every HTTP/S3/GCS store: keep-alive and
// HTTP/2 where offered, a cap on transfers in flight, connect/low-speed timeouts, retries with
// exponential backoff with equal jitter, Retry-After, per-request attempt cap and deadline.
// After fork() the child gets a fresh engine on first use.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lazycube/store/store.hpp"
#include "lazycube/util/buffer.hpp"

namespace lazycube::http {

// AWS Signature V4 for one request, done by libcurl (CURLOPT_AWS_SIGV4). Secrets never appear
// in messages.
struct SigV4 {
  std::string region = "us-east-1";
  std::string service = "s3";
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // adds x-amz-security-token when set
};

// Signs each attempt of a request just before it is sent (a retry is signed again: dates and
// tokens must be fresh): Azure SharedKey, a refreshed OAuth2 bearer token. `headers` holds the
// request's headers ("Name: value") including its Range header; the signer adds to them and may
// rewrite `url`. Runs on the engine's thread: keep it short (a token refresh is the exception);
// an exception fails the request with its message (no secrets in it); an AuthError stays one.
class Signer {
 public:
  virtual ~Signer() = default;
  virtual void sign(const std::string& method, std::string& url, std::vector<std::string>& headers) const = 0;
};

struct Request {
  std::string method = "GET";  // GET, HEAD, DELETE, or POST/PUT (with a body)
  std::string url;
  std::vector<std::string> headers;  // "Name: value" (a POST's Content-Type among them)
  std::string body;                  // POST/PUT: sent as is (an OAuth2 token exchange's form, an XML document)
  // POST/PUT: sent instead of `body` when not empty, without a copy (an upload's part); the
  // caller keeps the bytes alive until perform returns.
  ByteView payload;
  ByteRange range;                   // sent as a Range header unless Full
  std::optional<SigV4> sigv4;
  std::shared_ptr<const Signer> signer;  // per-attempt signing (see Signer); with sigv4: unused
  // The most body bytes a successful reply may carry when the caller knows it (an object's
  // declared size, a metadata bound); 0: the range's length for a range, else the engine's
  // max_response_bytes. Past it the transfer stops at once and the request fails.
  std::uint64_t max_body = 0;
  // Checks each redirect hop before it is followed: "" allows it, anything else is why not
  // (kerchunk allowed_prefixes). Empty: hops are checked by the engine's own rules only.
  std::function<std::string(const std::string& target_url)> redirect_check;
};

struct Response {
  long status = 0;  // final HTTP status (after retries)
  Buffer body;
  std::map<std::string, std::string> headers;  // lower-cased names
  int attempts = 0;
};

struct RetryPolicy {
  // `retries` option + 1. Ten retries: an epoch of 50,000 requests against a server failing
  // 17 % of them (503, 429, dropped connections) would lose a request to six failures in a row
  // about once per epoch with five; with ten, once in ~5,000 epochs.
  int max_attempts = 11;
  double initial_backoff_s = 0.05;  // equal jitter: sleep U(c/2, c), c = min(max, initial * 2^k)
  double max_backoff_s = 5.0;
  double deadline_s = 300.0;        // per request, across attempts
};

// Transfers the process-wide engine admits at once, all reads together. Above one read's own
// cap (EngineOptions::max_in_flight, the `max_concurrency` option): fetch-ahead keeps several
// reads going at once, and at an object store's 50 ms first-byte latency a stream of 256 KiB
// chunks needs ~100-200 requests in flight to run at local decode speed.
inline constexpr std::size_t kEngineMaxInFlight = 256;

// Transfers receiving their bodies at once, engine-wide (the rest wait paused in order of their
// first bytes: see ReceiveGate in http_engine.cpp). $LAZYCUBE_HTTP_MAX_RECEIVING overrides it
// for the process-wide engine; 0 lifts the limit.
inline constexpr std::size_t kEngineMaxReceiving = 32;

// Default cap of one reply's body (1 GiB, the codecs' own bound on a chunk without a declared
// size): far above any chunk, shard range or metadata document read whole.
inline constexpr std::uint64_t kDefaultMaxResponseBytes = std::uint64_t{1} << 30;

// Error replies (status >= 300) are read for their message only: at most this much.
inline constexpr std::uint64_t kMaxErrorBody = std::uint64_t{1} << 20;

// Keep-alive connections an engine keeps open once it has had nothing to do for a second, all
// hosts together (the `max_idle_connections` storage option): a DataLoader worker keeps at most
// this many sockets to a server between epochs, instead of one per transfer of its widest read.
// While transfers run every connection stays open (a wide read runs at full width without
// reconnecting).
inline constexpr std::size_t kDefaultMaxIdleConnections = 32;

// Redirect hops followed per request (each checked: http/https only; a signed request stays on
// its host; Request::redirect_check).
inline constexpr int kMaxRedirects = 5;

struct EngineOptions {
  // One read's cap. As many as the engine admits: with freed transfer bodies recycled (the
  // buffer pool), more requests in flight no longer cost fresh memory per wave, and a read of
  // 1,024 chunks of 1 MiB ran 1.5x faster at zero latency and 2x at 50 ms with 256 than with 64
  // (docs/benchmarks.md, issue 17).
  std::size_t max_in_flight = kEngineMaxInFlight;
  double connect_timeout_s = 10.0;
  double low_speed_time_s = 30.0;   // abort a transfer slower than 1 byte/s for this long
  double timeout_s = 0;             // whole-transfer timeout per attempt, 0 = none
  std::string ca_file;              // PEM bundle to verify TLS peers with ("" = system default)
  // The most bytes any reply may carry when nothing smaller bounds it (the `max_response_bytes`
  // storage option): an endless or lying body fails the request instead of exhausting memory.
  std::uint64_t max_response_bytes = kDefaultMaxResponseBytes;
  // Idle connections the engine keeps (process-wide: the latest read's value applies).
  std::size_t max_idle_connections = kDefaultMaxIdleConnections;
};

// Per-store counters (thread-safe), exposed through Store::stats().
class Counters;

class Engine {
 public:
  // The process-wide engine; re-created after fork(). Its engine-wide cap on transfers in
  // flight is $LAZYCUBE_HTTP_MAX_IN_FLIGHT (default kEngineMaxInFlight). Do not keep the reference across a
  // fork(): call global() for each operation.
  static Engine& global();
  // A private engine with its own event-loop thread (tests, special cases); `max_receiving`:
  // transfers receiving bodies at once (0: no limit).
  static std::unique_ptr<Engine> create(std::size_t max_in_flight = kEngineMaxInFlight,
                                        std::size_t max_receiving = kEngineMaxReceiving);
  virtual ~Engine() = default;

  // Receives each final response of perform_each: the request's index and its response.
  using ResponseSink = std::function<void(std::size_t index, Response&& response)>;

  // Performs the requests concurrently (at most `options.max_in_flight` at once, engine-wide
  // cap too), retrying transient failures (408/429/500/502/503/504, resets, timeouts, short or
  // over-long bodies) per `retry`, and hands each final response to `sink` as soon as it is
  // complete: on the calling thread, one at a time, in completion order. HTTP errors that are
  // final (404, 403, ...) are delivered, not thrown. Throws StoreError, once the requests in
  // flight are done, when a request still fails after its last attempt or deadline, naming URL,
  // status, attempts and the server's error code/message. When `sink` throws, the requests not
  // yet started are dropped and the exception is rethrown once the ones in flight are done.
  // Delivering as they complete lets callers decode while later bodies arrive, and free (and so
  // reuse) each body's memory instead of holding every body of a large read at once.
  virtual void perform_each(const std::vector<Request>& requests, const RetryPolicy& retry,
                            const EngineOptions& options, Counters* counters, const ResponseSink& sink) = 0;

  // perform_each collected: one Response per request, in request order.
  std::vector<Response> perform(const std::vector<Request>& requests, const RetryPolicy& retry,
                                const EngineOptions& options, Counters* counters);
};

}  // namespace lazycube::http
