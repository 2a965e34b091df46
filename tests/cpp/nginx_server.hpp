// A private nginx for the HTTP tests (tests/servers/start_nginx.sh): started on 127.0.0.1 with
// a free port, stopped by PID at scope exit, faults set through PREFIX/faults.lua.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "server_process.hpp"
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
        process_({"/bin/bash", std::string(LAZYCUBE_SOURCE_DIR) + "/tests/servers/start_nginx.sh",
                  (dir_.path() / "nginx").string(), root.string(), tls ? "tls" : "plain"}) {
    const std::string prefix = (dir_.path() / "nginx").string(), line = process_.first_line();
    if (line.empty()) {
      stop();
      throw std::runtime_error("start_nginx.sh printed no port");
    }
    port_ = std::stoi(line);
    prefix_ = prefix;
    for (int i = 0; i < 500 && !accepting(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!accepting()) {
      stop();
      throw std::runtime_error("nginx did not start: " + read_file(prefix_ / "logs" / "error.log"));
    }
  }
  ~NginxServer() { stop(); }
  NginxServer(const NginxServer&) = delete;
  NginxServer& operator=(const NginxServer&) = delete;

  std::string url() const { return (tls_ ? "https" : "http") + std::string("://127.0.0.1:") + std::to_string(port_); }
  std::string ca_file() const { return (prefix_ / "tls" / "cert.pem").string(); }
  // `table` is the body of a Lua table, e.g. "p503 = 0.1, retry_after = 1" (see faults.lua).
  void set_faults(const std::string& table) { write_file(prefix_ / "faults.lua", "return {" + table + "}\n"); }
  // The access log: "CONNECTION_ID REQUESTS_ON_CONNECTION STATUS "REQUEST" RANGE BYTES PROTOCOL".
  std::string access_log() const { return read_file(prefix_ / "logs" / "access.log"); }
  // Requests nginx has logged so far (the log is written when each request ends).
  std::size_t logged_requests() const {
    const std::string log = read_file(prefix_ / "logs" / "access.log");
    return static_cast<std::size_t>(std::count(log.begin(), log.end(), '\n'));
  }

 private:
  bool accepting() const {
    int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(s);
    return ok;
  }
  void stop() { process_.stop(); }

  TempDir dir_;
  bool tls_ = false;
  ServerProcess process_;
  fs::path prefix_;
  int port_ = 0;
};

#define LAZYCUBE_REQUIRE_NGINX()                                               \
  if (auto reason = ::lazycube::test::nginx_unavailable_reason(); !reason.empty()) \
  GTEST_SKIP() << reason

}  // namespace lazycube::test
