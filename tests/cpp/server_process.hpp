// A test server process that prints its port on its first stdout line and then serves until
// SIGTERM (tests/servers/start_nginx.sh, tests/servers/gcs_token_server.py): started with a pipe on
// its stdout, never outliving the test process, stopped by PID.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace lazycube::test {

class ServerProcess {
 public:
  // Runs argv[0] (a path) with `argv`; first_line() is its first line of output ("" when it
  // exited without one).
  explicit ServerProcess(const std::vector<std::string>& argv) {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the test process
      ::dup2(fds[1], 1);
      ::close(fds[0]);
      ::close(fds[1]);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    char c;
    while (::read(fds[0], &c, 1) == 1 && c != '\n') line_ += c;
    ::close(fds[0]);
  }
  ~ServerProcess() { stop(); }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  const std::string& first_line() const { return line_; }
  void stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
  }

 private:
  pid_t pid_ = -1;
  std::string line_;
};

}  // namespace lazycube::test
