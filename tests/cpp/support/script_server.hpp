// A test server started by one of tests/servers/start_*.sh (or another program, e.g.
// gcs_token_server.py): it prints the port on stdout, then serves in the foreground (its PID is
// the server's). Started on 127.0.0.1, ready
// once the port accepts connections, stopped by PID (SIGTERM) at scope exit; never outlives the
// test process.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace lazycube::test {

class ScriptServer {
 public:
  // Runs `bash tests/servers/SCRIPT ARGS...`; throws std::runtime_error (with `why_not()`'s
  // text, when given) when it prints no port or the port does not accept within `wait_s`.
  ScriptServer(const std::string& script, const std::vector<std::string>& args, double wait_s = 5,
               const std::function<std::string()>& why_not = {})
      : ScriptServer(with_script(script, args), script, wait_s, why_not) {}
  // Runs the program `command[0]` (a path) with `command` as its argv; `name` for messages.
  ScriptServer(const std::vector<std::string>& command, const std::string& name, double wait_s = 5,
               const std::function<std::string()>& why_not = {}) {
    const std::string script = name;
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    std::vector<char*> argv;
    for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the test process
      ::dup2(fds[1], 1);
      ::close(fds[0]);
      ::close(fds[1]);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    std::string line;
    char c;
    while (::read(fds[0], &c, 1) == 1 && c != '\n') line += c;
    ::close(fds[0]);
    if (line.empty()) {
      stop();
      throw std::runtime_error(script + " printed no port");
    }
    port_ = std::stoi(line);
    for (int i = 0; i < wait_s * 100 && !accepting(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!accepting()) {
      stop();
      throw std::runtime_error(script + ": the server did not start" + (why_not ? ": " + why_not() : std::string()));
    }
  }
  ~ScriptServer() { stop(); }
  ScriptServer(const ScriptServer&) = delete;
  ScriptServer& operator=(const ScriptServer&) = delete;

  int port() const { return port_; }

 private:
  static std::vector<std::string> with_script(const std::string& script, const std::vector<std::string>& args) {
    std::vector<std::string> command{"/bin/bash", std::string(LAZYCUBE_SOURCE_DIR) + "/tests/servers/" + script};
    command.insert(command.end(), args.begin(), args.end());
    return command;
  }
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
  void stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
  }

  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace lazycube::test
