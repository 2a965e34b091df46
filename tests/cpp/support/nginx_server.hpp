// A private nginx for the HTTP tests (tests/servers/start_nginx.sh): started on 127.0.0.1 with
// a free port, stopped by PID at scope exit, faults set through PREFIX/faults.lua.
#pragma once

#include <chrono>
#include <optional>
#include <thread>

#include "lazycube/store/store.hpp"
#include "script_server.hpp"
#include "test_support.hpp"

namespace lazycube::test {

// Why nginx cannot run here, or "" when it can.
inline std::string nginx_unavailable_reason() {
  if (!fs::exists("/usr/sbin/nginx") && std::system("command -v nginx >/dev/null 2>&1") != 0)
    return "nginx is not installed (apt-get install nginx)";
  if (!fs::exists("/usr/lib/nginx/modules/ngx_http_lua_module.so") ||
      !fs::exists("/usr/lib/nginx/modules/ndk_http_module.so"))
    return "the nginx lua module is not installed (apt-get install libnginx-mod-http-lua)";
  return "";
}

class NginxServer {
 public:
  // `tls`: HTTPS + HTTP/2 with a self-signed certificate (ca_file()).
  explicit NginxServer(const fs::path& root, bool tls = false)
      : tls_(tls),
        root_(root),
        prefix_(dir_.path() / "nginx") {
    server_.emplace("start_nginx.sh", std::vector<std::string>{prefix_.string(), root.string(), tls ? "tls" : "plain"},
                    5, [this] { return read_file(prefix_ / "logs" / "error.log"); });
    port_ = server_->port();
  }
  NginxServer(const NginxServer&) = delete;
  NginxServer& operator=(const NginxServer&) = delete;

  std::string url() const { return (tls_ ? "https" : "http") + std::string("://127.0.0.1:") + std::to_string(port_); }
  int port() const { return port_; }
  std::string ca_file() const { return (prefix_ / "tls" / "cert.pem").string(); }
  // `table` is the body of a Lua table, e.g. "p503 = 0.1, retry_after = 1" (see faults.lua).
  void set_faults(const std::string& table) { write_file(prefix_ / "faults.lua", "return {" + table + "}\n"); }
  // Stops nginx (SIGTERM: a fast shutdown that cuts the connections in flight); returns once it
  // has exited. Requests meanwhile find the port closed.
  void stop() { server_.reset(); }
  // Starts a stopped nginx again with the same configuration, port and fault file; returns once
  // it accepts connections. It is stopped when the calling thread ends (PR_SET_PDEATHSIG): call
  // it from a thread that outlives its use.
  void start_again() {
    const std::string start = "echo " + std::to_string(port_) + "; PATH=\"$PATH:/usr/sbin\" exec nginx -p '" +
                              prefix_.string() + "/' -c nginx.conf";
    server_.emplace(std::vector<std::string>{"/bin/bash", "-c", start}, "nginx", 5,
                    [this] { return read_file(prefix_ / "logs" / "error.log"); });
  }
  // The access log: "CONNECTION_ID REQUESTS_ON_CONNECTION STATUS "REQUEST" RANGE BYTES PROTOCOL".
  std::string access_log() const { return read_file(prefix_ / "logs" / "access.log"); }
  // The access log once every request that ended before this call is in it: a GET of a fresh
  // path (written under the root, read through lazycube's own store) is logged after them.
  std::string settled_access_log() {
    const std::string mark = "settle-mark-" + std::to_string(marks_++);
    write_file(root_ / mark, "m");
    open_location(url()).store->get(mark);
    std::string log;
    while ((log = access_log()).find("/" + mark + " ") == std::string::npos)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return log;
  }
  // Requests nginx has logged so far (the log is written when each request ends).
  std::size_t logged_requests() const {
    const std::string log = read_file(prefix_ / "logs" / "access.log");
    return static_cast<std::size_t>(std::count(log.begin(), log.end(), '\n'));
  }

 private:
  TempDir dir_;
  bool tls_ = false;
  fs::path root_;
  int marks_ = 0;
  fs::path prefix_;
  std::optional<ScriptServer> server_;
  int port_ = 0;
};

#define LAZYCUBE_REQUIRE_NGINX()                                               \
  if (auto reason = ::lazycube::test::nginx_unavailable_reason(); !reason.empty()) \
  GTEST_SKIP() << reason

}  // namespace lazycube::test
