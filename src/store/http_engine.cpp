// The curl-multi fetch engine: one event-loop thread (epoll + curl_multi_socket_action) owns a
// CURLM and a pool of easy handles (connections stay alive in the multi handle's cache; HTTP/2
// is negotiated over TLS and streams are multiplexed with PIPEWAIT). Callers block in perform() on a condition variable
// while the loop runs their transfers, schedules retries on timers (never sleeping) and checks
// every body against Content-Length / Content-Range.
//
// A server that ignores Range and answers 200 with the whole object is accepted: the engine
// slices the requested bytes out locally (costly, but correct), and a range starting past the
// end of such an object becomes a synthesized 416.
#include "http_engine.hpp"

#include <curl/curl.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <list>
#include <mutex>
#include <random>
#include <thread>

#include "engine_fds.hpp"
#include "http_counters.hpp"
#include "http_util.hpp"
#include "lazycube/error.hpp"

namespace lazycube::http {

namespace {

using Clock = std::chrono::steady_clock;

struct Batch;
struct Transfer;

// How many transfers receive their bodies at once; the others, once their first bytes are
// here, wait paused in arrival order (their data waits in socket buffers, the server is held
// back by TCP flow control). Without it, a wave of requests sent together is served together,
// shares the link evenly, completes together and leaves the link idle for a round trip while
// the next wave's requests travel: at 50 ms, 256 in flight over 1 MiB chunks ran at 59 % of
// the zero-latency rate. Served roughly first come first served, completions spread out and
// every completion sends the next request while the queue still has work.
struct ReceiveGate {
  std::size_t limit = 0;  // 0: no limit
  std::size_t receiving = 0;
  std::deque<Transfer*> waiting;  // paused at their first body bytes, oldest first
};

// One request and its current attempt.
struct Transfer {
  enum class Receive { Idle, Receiving, Paused };
  Batch* batch = nullptr;
  ReceiveGate* gate = nullptr;
  Receive receive = Receive::Idle;
  std::size_t index = 0;
  const Request* req = nullptr;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  Buffer body;
  std::size_t len = 0;
  std::map<std::string, std::string> resp_headers;
  int attempts = 0;
  // Where this attempt goes: the request's URL, or the target of a redirect hop.
  std::string url;
  int hops = 0;
  // The current reply's status and the most body bytes it may carry (set from its status line:
  // Request::max_body, the range's length, EngineOptions::max_response_bytes, kMaxErrorBody).
  long status = 0;
  std::uint64_t bound = 0;
  std::string refused;  // why the body was refused (too large, no memory): the request fails
  Clock::time_point started;
  std::string last_error;  // why the previous attempt failed (for the final message)
  char errbuf[CURL_ERROR_SIZE] = {};
};

// One perform() call.
struct Batch {
  RetryPolicy retry;
  EngineOptions options;
  Counters* counters = nullptr;
  Clock::time_point deadline;
  std::vector<Response> results;
  std::vector<std::unique_ptr<Transfer>> transfers;
  std::deque<Transfer*> ready;  // waiting for a slot (first attempt or retry due)
  std::size_t in_flight = 0;
  std::size_t remaining = 0;
  bool failed = false;
  bool auth_failed = false;  // the first failure was a signer's AuthError: thrown as one
  std::string error;
  std::atomic<bool> cancelled{false};  // the caller's sink threw: start nothing more
  bool done = false;                   // guarded by the engine mutex
  std::deque<std::size_t> completed;   // final responses not yet handed over (engine mutex)
  std::condition_variable cv;
};

// The Range header's value after "bytes=" ("" for a full read).
std::string range_text(const ByteRange& range) {
  switch (range.kind) {
    case ByteRange::Kind::Full: return {};
    case ByteRange::Kind::Range: return std::to_string(range.offset) + "-" + std::to_string(range.offset + range.length - 1);
    case ByteRange::Kind::Offset: return std::to_string(range.offset) + "-";
    case ByteRange::Kind::Suffix: return "-" + std::to_string(range.length);
  }
  return {};
}

std::string describe_request(const Request& r) {
  std::string s = r.method + " " + redact_url(r.url);
  if (r.range.kind != ByteRange::Kind::Full) s += " (" + r.range.describe() + ")";
  return s;
}

const char* retry_cause(CURLcode rc) {
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT: return "timeout";
    case CURLE_PARTIAL_FILE: return "short_body";
    case CURLE_COULDNT_CONNECT:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR: return "connection";
    default: return nullptr;
  }
}

bool retryable_status(long s) {
  return s == 408 || s == 429 || s == 500 || s == 502 || s == 503 || s == 504;
}

// What bounds a reply's body, for messages.
std::string bound_reason(const Transfer& t) {
  const Request& r = *t.req;
  if (t.status >= 300) return "read of an error reply";
  if (t.status == 206 && (r.range.kind == ByteRange::Kind::Range || r.range.kind == ByteRange::Kind::Suffix))
    return "asked for (" + r.range.describe() + ")";
  if (r.max_body != 0 && !(t.status == 200 && r.range.kind != ByteRange::Kind::Full)) return "the object may hold";
  return "a reply may carry (storage option max_response_bytes)";
}

// The body bound of a reply with status `status` (see Transfer::bound).
std::uint64_t body_bound(const Transfer& t, long status) {
  const Request& r = *t.req;
  const std::uint64_t cap = t.batch->options.max_response_bytes;
  if (status >= 300) return std::min<std::uint64_t>(cap, kMaxErrorBody);
  if (status == 206 && (r.range.kind == ByteRange::Kind::Range || r.range.kind == ByteRange::Kind::Suffix))
    return std::min<std::uint64_t>(cap, r.range.length);
  // A 200 to a range request is the whole object (the server ignored Range): only the cap bounds it.
  if (r.max_body != 0 && !(status == 200 && r.range.kind != ByteRange::Kind::Full)) return std::min(cap, r.max_body);
  return cap;
}

std::size_t on_body(char* data, std::size_t, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  if (t->receive == Transfer::Receive::Idle && t->gate->limit != 0) {
    if (t->gate->receiving >= t->gate->limit) {
      t->receive = Transfer::Receive::Paused;  // libcurl keeps these bytes and offers them again
      t->gate->waiting.push_back(t);
      return CURL_WRITEFUNC_PAUSE;
    }
    t->receive = Transfer::Receive::Receiving;
    ++t->gate->receiving;
  }
  if (t->len + n > t->bound) {  // stop at once: never buffer past what was asked
    t->refused = "the server sent more than the " + std::to_string(t->bound) + " bytes " + bound_reason(*t) +
                 " (" + std::to_string(t->len + n) + " bytes received so far)";
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
  try {
    if (t->len + n > t->body.size())
      t->body.resize(std::min<std::uint64_t>(t->bound, std::max<std::uint64_t>(t->len + n, 2 * t->body.size())));
  } catch (const std::bad_alloc&) {
    t->refused = "out of memory receiving " + std::to_string(t->len + n) + " bytes";
    return 0;
  }
  std::memcpy(t->body.data() + t->len, data, n);
  t->len += n;
  return n;
}

std::size_t on_header(char* data, std::size_t, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, n);
  if (line.rfind("HTTP/", 0) == 0) {  // a new response (after 100-continue)
    t->resp_headers.clear();
    const auto sp = line.find(' ');
    t->status = sp == std::string_view::npos ? 0 : std::strtol(std::string(line.substr(sp + 1, 3)).c_str(), nullptr, 10);
    t->bound = body_bound(*t, t->status);
    return n;
  }
  auto colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  std::string name(line.substr(0, colon));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
    value.remove_suffix(1);
  t->resp_headers[name] = std::string(value);
  if (name == "content-length" && t->req->method != "HEAD" && t->status != 100) {
    const std::uint64_t cl = std::strtoull(std::string(value).c_str(), nullptr, 10);
    if (cl > t->bound) {  // refused before a byte of the body is read
      t->refused = "the server announced " + std::to_string(cl) + " bytes (Content-Length), more than the " +
                   std::to_string(t->bound) + " bytes " + bound_reason(*t) + " (0 bytes received)";
      return 0;  // aborts the transfer
    }
    try {
      if (cl > t->body.size()) t->body.resize(cl);
    } catch (const std::bad_alloc&) {
      t->refused = "out of memory for a body of " + std::to_string(cl) + " bytes";
      return 0;
    }
  }
  return n;
}

class CurlEngine final : public Engine {
 public:
  CurlEngine(std::size_t max_in_flight, std::size_t max_receiving)
      : max_in_flight_(std::max<std::size_t>(1, max_in_flight)), rng_(std::random_device{}()) {
    gate_.limit = max_receiving;
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (epoll_ < 0 || wake_ < 0) throw StoreError(std::string("cannot create the HTTP engine's event loop: ") + std::strerror(errno));
    own_fd(epoll_);
    own_fd(wake_);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = wake_;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev);
    make_multi();
    thread_ = std::thread([this] { loop(); });
  }

  void make_multi() {
    multi_ = curl_multi_init();
    if (!multi_) throw StoreError("cannot initialise libcurl (curl_multi_init failed)");
    curl_multi_setopt(multi_, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, static_cast<long>(std::max<std::size_t>(64, 2 * max_in_flight_)));
    curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
  }

  // Idle keep-alive connections (EngineOptions::max_idle_connections): while transfers run,
  // every connection stays (closing the idle ones between two waves of a stream and opening
  // them again cost ~15 % of a request-bound epoch at 20 ms, more over TLS). Once the engine
  // has had nothing to do for kQuietTrim with more connections open than the allowance, they
  // are closed -- all of them: libcurl's cache can only be emptied as a whole (it closes an
  // idle connection only when another one is returned to it). Returns when to look again.
  std::optional<Clock::time_point> trim_idle_connections() {
    constexpr auto kQuietTrim = std::chrono::seconds(1);
    if (in_flight_ != 0 || !active_.empty() || !timers_.empty() || sockets_ <= idle_connections_) {
      quiet_since_.reset();
      return std::nullopt;
    }
    const auto now = Clock::now();
    if (!quiet_since_) quiet_since_ = now;
    if (now - *quiet_since_ < kQuietTrim) return *quiet_since_ + kQuietTrim;
    curl_multi_cleanup(multi_);  // closes the cached connections (close_owned_socket)
    curl_due_.reset();
    make_multi();
    quiet_since_.reset();
    return std::nullopt;
  }

  ~CurlEngine() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wakeup();
    thread_.join();
    for (CURL* e : pool_) curl_easy_cleanup(e);
    curl_multi_cleanup(multi_);
    disown_fd(wake_);
    disown_fd(epoll_);
    ::close(wake_);
    ::close(epoll_);
  }

  void perform_each(const std::vector<Request>& requests, const RetryPolicy& retry, const EngineOptions& options,
                    Counters* counters, const ResponseSink& sink) override {
    Batch b;
    b.retry = retry;
    b.options = options;
    b.counters = counters;
    b.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(retry.deadline_s > 0 ? retry.deadline_s : 1e9));
    b.results.resize(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const Request& r = requests[i];
      if (r.range.kind == ByteRange::Kind::Range && r.range.length == 0) {  // nothing to fetch
        b.results[i].status = 206;
        b.completed.push_back(i);
        continue;
      }
      auto t = std::make_unique<Transfer>();
      t->batch = &b;
      t->gate = &gate_;
      t->index = i;
      t->req = &r;
      b.ready.push_back(t.get());
      b.transfers.push_back(std::move(t));
    }
    b.remaining = b.transfers.size();
    if (b.remaining == 0) {
      b.done = true;
    } else {
      {
        std::lock_guard lock(mutex_);
        incoming_.push_back(&b);
      }
      wakeup();
    }
    // Hand over responses as the loop thread completes them; `b` lives until it is done.
    std::exception_ptr sink_error;
    std::unique_lock lock(mutex_);
    for (;;) {
      b.cv.wait(lock, [&] { return b.done || !b.completed.empty(); });
      if (b.completed.empty()) break;  // done, everything handed over
      std::deque<std::size_t> ready;
      ready.swap(b.completed);
      lock.unlock();
      for (const std::size_t i : ready) {
        Response response = std::move(b.results[i]);
        if (sink_error) continue;  // dropped
        try {
          sink(i, std::move(response));
        } catch (...) {
          sink_error = std::current_exception();
          b.cancelled = true;
          purge_timers_ = true;
          wakeup();
        }
      }
      lock.lock();
    }
    lock.unlock();
    if (sink_error) std::rethrow_exception(sink_error);
    if (b.failed && b.auth_failed) throw AuthError(b.error);
    if (b.failed) throw StoreError(b.error);
  }

 private:
  // Wakes the loop thread (new work, cancellation, stop). Any thread.
  void wakeup() {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(wake_, &one, sizeof one);
  }

  // ---- loop thread only ----
  // libcurl's socket interface: it tells which sockets to watch (on_socket) and when it next
  // needs a call (on_timer), and each call handles only the transfers whose sockets are ready.
  // curl_multi_perform instead visits every transfer on every turn (a poll() per transfer): with
  // hundreds in flight, most of them waiting for their first byte, that was most of the loop's
  // time.
  static int on_socket(CURL*, curl_socket_t s, int what, void* self, void*) {
    auto* engine = static_cast<CurlEngine*>(self);
    epoll_event ev{};
    ev.data.fd = s;
    if (what == CURL_POLL_REMOVE) {
      epoll_ctl(engine->epoll_, EPOLL_CTL_DEL, s, &ev);
      return 0;
    }
    ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
    if (epoll_ctl(engine->epoll_, EPOLL_CTL_MOD, s, &ev) != 0 && errno == ENOENT)
      epoll_ctl(engine->epoll_, EPOLL_CTL_ADD, s, &ev);
    return 0;
  }

  static int on_timer(CURLM*, long timeout_ms, void* self) {
    auto* engine = static_cast<CurlEngine*>(self);
    engine->curl_due_ = timeout_ms < 0 ? std::nullopt
                                       : std::optional(Clock::now() + std::chrono::milliseconds(timeout_ms));
    return 0;
  }

  void collect_done() {
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      void* p = nullptr;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &p);
      on_done(static_cast<Transfer*>(p), m->data.result);
    }
  }

  void loop() {
    constexpr int kMaxEvents = 256;
    epoll_event events[kMaxEvents];
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        if (stop_) break;
        for (Batch* b : incoming_) {
          active_.push_back(b);
          idle_connections_ = b->options.max_idle_connections;
        }
        incoming_.clear();
      }
      fire_timers();
      start_transfers();
      int running = 0;
      if (curl_due_ && *curl_due_ <= Clock::now()) {
        curl_due_.reset();
        curl_multi_socket_action(multi_, CURL_SOCKET_TIMEOUT, 0, &running);
        collect_done();
      }
      int timeout_ms = 1000;
      auto until = [&](Clock::time_point when) {
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(when - Clock::now()).count();
        timeout_ms = static_cast<int>(std::clamp<long long>(ms + 1, 0, timeout_ms));
      };
      if (curl_due_) until(*curl_due_);
      if (!timers_.empty()) until(timers_.begin()->first);
      if (auto when = trim_idle_connections()) until(*when);
      // Requests waiting for a slot that has opened: start them before sleeping.
      if (in_flight_ < max_in_flight_ && has_ready()) timeout_ms = 0;
      const int n = epoll_wait(epoll_, events, kMaxEvents, timeout_ms);
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == wake_) {
          std::uint64_t count = 0;
          [[maybe_unused]] const auto r = ::read(wake_, &count, sizeof count);
          continue;
        }
        int flags = 0;
        if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) flags |= CURL_CSELECT_IN;
        if (events[i].events & EPOLLOUT) flags |= CURL_CSELECT_OUT;
        if (events[i].events & EPOLLERR) flags |= CURL_CSELECT_ERR;
        curl_multi_socket_action(multi_, fd, flags, &running);
      }
      collect_done();
    }
  }

  // Whether an admitted batch has a request waiting for a slot it may take.
  bool has_ready() const {
    for (const Batch* b : active_)
      if (!b->ready.empty() && (b->failed || b->cancelled || b->in_flight < std::max<std::size_t>(1, b->options.max_in_flight)))
        return true;
    return false;
  }

  void fire_timers() {
    // Retries of a cancelled or failed batch are not waited out: due now, they are dropped by
    // start_transfers (a stopped fetch-ahead round, or a read that has its error, ends at once).
    if (purge_timers_.exchange(false))
      for (auto it = timers_.begin(); it != timers_.end();) {
        Batch* b = it->second->batch;
        if (!(b->cancelled || b->failed)) {
          ++it;
          continue;
        }
        b->ready.push_front(it->second);
        it = timers_.erase(it);
      }
    const auto now = Clock::now();
    while (!timers_.empty() && timers_.begin()->first <= now) {
      Transfer* t = timers_.begin()->second;
      timers_.erase(timers_.begin());
      // A due retry goes before the requests not yet started: it is the oldest, and at the
      // back of a long batch it would start last and stretch the batch's tail.
      t->batch->ready.push_front(t);
    }
  }

  void start_transfers() {
    bool progress = true;
    while (progress && in_flight_ < max_in_flight_) {
      progress = false;
      for (auto it = active_.begin(); it != active_.end() && in_flight_ < max_in_flight_;) {
        Batch* b = *it;
        ++it;  // finish() may remove b from active_
        if (b->ready.empty()) continue;
        if (b->failed || b->cancelled) {  // drop what has not started yet
          Transfer* t = b->ready.front();
          b->ready.pop_front();
          finish(t);
          progress = true;
          continue;
        }
        if (b->in_flight >= std::max<std::size_t>(1, b->options.max_in_flight)) continue;
        Transfer* t = b->ready.front();
        b->ready.pop_front();
        start(t);
        progress = true;
      }
    }
  }

  CURL* take_handle() {
    if (!pool_.empty()) {
      CURL* e = pool_.back();
      pool_.pop_back();
      return e;
    }
    return curl_easy_init();
  }

  void start(Transfer* t) {
    Batch& b = *t->batch;
    const Request& r = *t->req;
    const auto now = Clock::now();
    if (now >= b.deadline) {
      fail(t, describe_request(r) + ": deadline of " + std::to_string(b.retry.deadline_s) + " s passed after " +
                  std::to_string(t->attempts) + " attempt(s)" +
                  (t->last_error.empty() ? "" : "; last error: " + t->last_error));
      return;
    }
    // A signer sees (and signs) the final URL and headers, Range included.
    if (t->url.empty()) t->url = r.url;
    std::string url = t->url;
    std::vector<std::string> signed_headers;
    if (r.signer && !r.sigv4) {
      signed_headers = r.headers;
      if (const std::string range = range_text(r.range); !range.empty()) signed_headers.push_back("Range: bytes=" + range);
      try {
        r.signer->sign(r.method, url, signed_headers);
      } catch (const AuthError& ex) {
        if (!b.failed) b.auth_failed = true;
        fail(t, describe_request(r) + ": " + ex.what());
        return;
      } catch (const std::exception& ex) {
        fail(t, describe_request(r) + ": " + ex.what());
        return;
      }
    }
    CURL* e = t->easy = take_handle();
    if (!e) {
      fail(t, describe_request(r) + ": cannot create a curl handle");
      return;
    }
    ++t->attempts;
    t->len = 0;
    t->status = 0;
    t->bound = b.options.max_response_bytes;
    t->refused.clear();
    t->resp_headers.clear();
    t->errbuf[0] = 0;
    t->started = now;
    curl_easy_setopt(e, CURLOPT_URL, url.c_str());
    curl_easy_setopt(e, CURLOPT_PRIVATE, t);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_owned_socket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, &sockets_);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, close_owned_socket);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, &sockets_);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->errbuf);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
    // Waiting to multiplex only pays where HTTP/2 can be negotiated (TLS): over plain http it
    // made every request to a new host wait for the first one's response (an open's metadata
    // probes went one round trip after another).
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, url.starts_with("https://") ? 1L : 0L);
    // 128 KiB reads instead of 16 KiB: a quarter fewer CPU cycles per byte on a fast link.
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 128L * 1024);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(b.options.connect_timeout_s * 1000));
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, std::max(1L, static_cast<long>(b.options.low_speed_time_s)));
    double left_ms = std::chrono::duration<double, std::milli>(b.deadline - now).count();
    if (b.options.timeout_s > 0) left_ms = std::min(left_ms, b.options.timeout_s * 1000);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, std::max(1L, static_cast<long>(left_ms)));
    if (r.method == "HEAD") curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    if (r.method == "POST" || r.method == "PUT") {  // the body stays in *t->req until the transfer is released
      const bool view = !r.payload.empty();
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(view ? r.payload.size() : r.body.size()));
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, view ? static_cast<const void*>(r.payload.data()) : r.body.data());
      if (r.method == "PUT") curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "PUT");
    } else if (r.method == "DELETE") {
      curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
    }
    if (!b.options.ca_file.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, b.options.ca_file.c_str());
    const bool signer = r.signer && !r.sigv4;
    if (const std::string range = range_text(r.range); !range.empty() && !signer)
      curl_easy_setopt(e, CURLOPT_RANGE, range.c_str());  // copied by libcurl
    curl_slist_free_all(t->headers);
    t->headers = nullptr;
    for (const auto& h : signer ? signed_headers : r.headers) t->headers = curl_slist_append(t->headers, h.c_str());
    // No "Expect: 100-continue" before a large body: one more round trip per part uploaded.
    // (Not with SigV4: libcurl would sign the empty header it then does not send.)
    if ((r.method == "POST" || r.method == "PUT") && !r.sigv4) t->headers = curl_slist_append(t->headers, "Expect:");
    if (r.sigv4) {
      const SigV4& s = *r.sigv4;
      const std::string provider = "aws:amz:" + s.region + ":" + s.service;
      curl_easy_setopt(e, CURLOPT_AWS_SIGV4, provider.c_str());
      curl_easy_setopt(e, CURLOPT_USERNAME, s.access_key.c_str());
      curl_easy_setopt(e, CURLOPT_PASSWORD, s.secret_key.c_str());
      t->headers = curl_slist_append(t->headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
      if (!s.session_token.empty())
        t->headers = curl_slist_append(t->headers, ("x-amz-security-token: " + s.session_token).c_str());
    }
    // Redirects are followed by on_done, one checked hop at a time (never by libcurl, which
    // would check none of them).
    if (t->headers) curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
    curl_multi_add_handle(multi_, e);
    ++in_flight_;
    ++b.in_flight;
  }

  void release(Transfer* t) {
    if (t->receive == Transfer::Receive::Receiving) {
      --gate_.receiving;
    } else if (t->receive == Transfer::Receive::Paused) {  // failed or timed out while waiting
      gate_.waiting.erase(std::find(gate_.waiting.begin(), gate_.waiting.end(), t));
    }
    t->receive = Transfer::Receive::Idle;
    curl_multi_remove_handle(multi_, t->easy);
    curl_easy_reset(t->easy);  // drops pointers into *t (error buffer, headers); keeps its connection cache
    pool_.push_back(t->easy);
    t->easy = nullptr;
    curl_slist_free_all(t->headers);
    t->headers = nullptr;
    --in_flight_;
    --t->batch->in_flight;
    admit_waiting();
  }

  // Lets the oldest paused transfers receive while the gate has room. Unpausing may deliver
  // their held bytes at once (on_body runs inside curl_easy_pause).
  void admit_waiting() {
    while (!gate_.waiting.empty() && gate_.receiving < gate_.limit) {
      Transfer* t = gate_.waiting.front();
      gate_.waiting.pop_front();
      t->receive = Transfer::Receive::Receiving;
      ++gate_.receiving;
      curl_easy_pause(t->easy, CURLPAUSE_CONT);
    }
  }

  void on_done(Transfer* t, CURLcode rc) {
    long status = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    std::string location;
    if (char* target = nullptr; curl_easy_getinfo(t->easy, CURLINFO_REDIRECT_URL, &target) == CURLE_OK && target)
      location = target;
    release(t);
    Batch& b = *t->batch;
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t->started).count();
    if (b.counters) b.counters->attempt(t->len, ms);
    const Request& r = *t->req;
    if (!t->refused.empty()) {  // a hostile or broken reply: never retried, never buffered further
      t->body = Buffer();
      return fail(t, describe_request(r) + ": " + t->refused);
    }
    if (rc == CURLE_OK && !location.empty() && (status == 301 || status == 302 || status == 303 || status == 307 ||
                                                status == 308) && (r.method == "GET" || r.method == "HEAD") && !r.sigv4)
      return follow(t, location);
    if (rc != CURLE_OK) {
      std::string what = std::string("curl error ") + std::to_string(static_cast<int>(rc)) + " (" +
                         (t->errbuf[0] ? t->errbuf : curl_easy_strerror(rc)) + ")";
      if (const char* cause = retry_cause(rc)) return retry_later(t, cause, what, std::nullopt);
      return fail(t, describe_request(r) + " failed: " + what);
    }
    if (retryable_status(status)) {
      std::string what = "HTTP " + std::to_string(status);
      std::string server = server_error(std::string_view(reinterpret_cast<const char*>(t->body.data()), t->len));
      if (!server.empty()) what += " " + server;
      std::optional<double> after;
      if (auto it = t->resp_headers.find("retry-after"); it != t->resp_headers.end())
        after = parse_retry_after(it->second);
      return retry_later(t, "http_" + std::to_string(status), what, after);
    }
    if ((status == 200 || status == 206) && r.method != "HEAD") {
      std::string problem = check_body(t, status);
      if (!problem.empty()) {
        if (problem[0] == '!') return fail(t, describe_request(r) + ": " + problem.substr(1));
        return retry_later(t, "body_length", problem, std::nullopt);
      }
    }
    if (status >= 400 && status != 404 && status != 416 && b.counters) b.counters->error();
    Response& out = b.results[t->index];
    out.status = status;
    t->body.resize(t->len);
    out.body = std::move(t->body);
    out.headers = std::move(t->resp_headers);
    out.attempts = t->attempts;
    if (status == 200 && r.range.kind != ByteRange::Kind::Full) slice_full_reply(out, r.range);
    {
      std::lock_guard lock(mutex_);
      b.completed.push_back(t->index);
    }
    b.cv.notify_all();
    finish(t);
  }

  // A redirect hop, checked as the first URL was: http(s) only, a signed request stays on its
  // host (its signature or token is not for another), the caller's check (kerchunk
  // allowed_prefixes), at most kMaxRedirects hops. A refused hop fails the request naming the
  // original URL and the target.
  void follow(Transfer* t, const std::string& target) {
    const Request& r = *t->req;
    const std::string refused = describe_request(r) + ": redirect to " + redact_url(target) + " refused: ";
    if (t->hops >= kMaxRedirects) return fail(t, refused + "more than " + std::to_string(kMaxRedirects) + " redirects");
    if (!(target.starts_with("http://") || target.starts_with("https://")))
      return fail(t, refused + "only http and https targets are followed");
    if (r.signer && host_of(target) != host_of(t->url.empty() ? r.url : t->url))
      return fail(t, refused + "a signed request is not sent to another host");
    if (r.redirect_check) {
      std::string why;
      try {
        why = r.redirect_check(target);
      } catch (const std::exception& e) {
        why = e.what();
      }
      if (!why.empty()) return fail(t, refused + why);
    }
    t->url = target;
    ++t->hops;
    --t->attempts;  // a hop is not a failed attempt
    t->body = Buffer();
    t->batch->ready.push_front(t);
  }

  // "" when the body is what the headers promised; a retryable description otherwise, or one
  // starting with '!' for a reply that is wrong rather than cut short.
  static std::string check_body(Transfer* t, long status) {
    const auto& h = t->resp_headers;
    if (auto it = h.find("content-length"); it != h.end()) {
      const std::uint64_t cl = std::strtoull(it->second.c_str(), nullptr, 10);
      if (cl != t->len)
        return "body of " + std::to_string(t->len) + " bytes but Content-Length " + std::to_string(cl);
    }
    if (status != 206) return {};
    auto it = h.find("content-range");
    // Azurite answers a read starting exactly at the end with an empty 206 "bytes N-(N-1)/N":
    // the empty read file:// and http:// give (a real server says 416 "bytes */N").
    const ByteRange& asked = t->req->range;
    if (it != h.end() && t->len == 0 && asked.offset > 0 &&
        (asked.kind == ByteRange::Kind::Range || asked.kind == ByteRange::Kind::Offset) &&
        it->second == "bytes " + std::to_string(t->req->range.offset) + "-" +
                           std::to_string(t->req->range.offset - 1) + "/" + std::to_string(t->req->range.offset))
      return {};
    auto cr = it == h.end() ? std::nullopt : parse_content_range(it->second);
    if (!cr) return "!206 reply without a valid Content-Range";
    const std::uint64_t n = cr->last - cr->first + 1;
    if (n != t->len)
      return "body of " + std::to_string(t->len) + " bytes but Content-Range " + it->second;
    const ByteRange& want = t->req->range;
    const bool at_end = cr->total && cr->last + 1 == *cr->total;
    bool ok = true;
    switch (want.kind) {
      case ByteRange::Kind::Full: ok = cr->first == 0 && at_end; break;
      case ByteRange::Kind::Range: ok = cr->first == want.offset && (n == want.length || (n < want.length && at_end)); break;
      case ByteRange::Kind::Offset: ok = cr->first == want.offset && (at_end || !cr->total); break;
      case ByteRange::Kind::Suffix: ok = at_end && n == std::min<std::uint64_t>(want.length, *cr->total); break;
    }
    if (!ok) return "!server answered Content-Range " + it->second + " to a request for " + want.describe();
    return {};
  }

  // The server ignored Range and sent the whole object: keep the requested bytes.
  static void slice_full_reply(Response& out, const ByteRange& want) {
    const std::uint64_t size = out.body.size();
    std::uint64_t off = 0, n = size;
    if (want.kind == ByteRange::Kind::Suffix) {
      n = std::min(want.length, size);
      off = size - n;
    } else {
      if (want.offset > size || (want.offset == size && size != 0 && want.kind == ByteRange::Kind::Range)) {
        out.status = 416;
        out.headers["content-range"] = "bytes */" + std::to_string(size);
        out.body.clear();
        return;
      }
      off = want.offset;
      n = want.kind == ByteRange::Kind::Range ? std::min(want.length, size - off) : size - off;
    }
    if (off != 0 && n != 0) std::memmove(out.body.data(), out.body.data() + off, n);
    out.body.resize(n);
    out.status = 206;
    out.headers["content-range"] =
        "bytes " + std::to_string(off) + "-" + std::to_string(off + n - 1) + "/" + std::to_string(size);
  }

  void retry_later(Transfer* t, const std::string& cause, const std::string& what, std::optional<double> retry_after) {
    Batch& b = *t->batch;
    t->last_error = what;
    const std::string who = describe_request(*t->req);
    if (t->attempts >= std::max(1, b.retry.max_attempts))
      return fail(t, who + " failed after " + std::to_string(t->attempts) + " attempt(s): " + what);
    if (b.failed || b.cancelled) return finish(t);
    // Equal jitter, U(cap/2, cap): a read fails when any of its requests runs out of attempts,
    // and with full jitter, U(0, cap), the shortest total wait of a few hundred requests was near
    // zero (a 0.5 s server restart failed every read of 240 objects). Half of each step is now
    // waited for sure: the default policy rides out 0.775 s of refused connections.
    const double cap = std::max(0.0, std::min(b.retry.max_backoff_s,
                                              b.retry.initial_backoff_s * std::ldexp(1.0, t->attempts - 1)));
    double delay = std::uniform_real_distribution<double>(cap / 2, cap)(rng_);
    if (retry_after) delay = std::max(delay, *retry_after);
    const auto when = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(delay));
    if (when >= b.deadline)
      return fail(t, who + " failed after " + std::to_string(t->attempts) + " attempt(s): " + what +
                         " (no time left before the " + std::to_string(b.retry.deadline_s) + " s deadline to retry)");
    if (b.counters) b.counters->retry(cause);
    timers_.emplace(when, t);
  }

  void fail(Transfer* t, const std::string& message) {
    Batch& b = *t->batch;
    if (!b.failed) {
      b.failed = true;
      b.error = message;
      purge_timers_ = true;
    }
    if (b.counters) b.counters->error();
    finish(t);
  }

  void finish(Transfer* t) {
    Batch* b = t->batch;
    if (--b->remaining != 0) return;
    active_.remove(b);
    std::lock_guard lock(mutex_);
    b->done = true;
    b->cv.notify_all();
  }

  const std::size_t max_in_flight_;
  ReceiveGate gate_;  // loop thread only
  CURLM* multi_ = nullptr;
  int epoll_ = -1;
  int wake_ = -1;  // eventfd: wakeup() makes epoll_wait return
  std::optional<Clock::time_point> curl_due_;  // when libcurl wants its timeout call (loop thread)
  std::thread thread_;
  std::mutex mutex_;
  bool stop_ = false;
  std::vector<Batch*> incoming_;
  // loop thread only
  std::list<Batch*> active_;
  std::multimap<Clock::time_point, Transfer*> timers_;
  std::atomic<bool> purge_timers_{false};  // a batch was cancelled or failed: fire_timers drops its retries
  std::vector<CURL*> pool_;
  std::size_t in_flight_ = 0;
  std::size_t idle_connections_ = kDefaultMaxIdleConnections;  // the latest batch's allowance
  std::size_t sockets_ = 0;  // connections open (open_owned_socket / close_owned_socket count them)
  std::optional<Clock::time_point> quiet_since_;  // since when nothing has run (trim_idle_connections)
  std::mt19937_64 rng_;
};

// The process-wide engine. After fork() the child forgets the parent's engine (its loop thread
// does not exist in the child, and its mutexes may be held): a new one is built on first use.
std::mutex* g_mutex = new std::mutex;
Engine* g_engine = nullptr;

void forget_engine_in_child() {
  g_mutex = new std::mutex;  // the old one may have been locked by another thread at fork time
  g_engine = nullptr;        // leaked on purpose: its thread and connections belong to the parent
  close_owned_fds_in_child();  // the child's copies of them: unusable here, never to stay open
}

void init_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    pthread_atfork(nullptr, nullptr, forget_engine_in_child);
  });
}

}  // namespace

std::vector<Response> Engine::perform(const std::vector<Request>& requests, const RetryPolicy& retry,
                                      const EngineOptions& options, Counters* counters) {
  std::vector<Response> out(requests.size());
  perform_each(requests, retry, options, counters, [&](std::size_t i, Response&& r) { out[i] = std::move(r); });
  return out;
}

Engine& Engine::global() {
  init_once();
  std::lock_guard lock(*g_mutex);
  if (!g_engine) {
    std::size_t cap = kEngineMaxInFlight;
    if (const char* env = std::getenv("LAZYCUBE_HTTP_MAX_IN_FLIGHT"); env && std::atol(env) > 0)
      cap = static_cast<std::size_t>(std::atol(env));
    std::size_t receiving = kEngineMaxReceiving;
    if (const char* env = std::getenv("LAZYCUBE_HTTP_MAX_RECEIVING"); env && std::atol(env) >= 0)
      receiving = static_cast<std::size_t>(std::atol(env));
    g_engine = new CurlEngine(cap, receiving);  // never destroyed: stores may still use it at exit
  }
  return *g_engine;
}

std::unique_ptr<Engine> Engine::create(std::size_t max_in_flight, std::size_t max_receiving) {
  init_once();
  return std::make_unique<CurlEngine>(max_in_flight, max_receiving);
}

}  // namespace lazycube::http
