// A moto S3 server for the S3/GCS tests: started once per test process on a free loopback port
// with the PATH python3 (which has moto + boto3), loaded by tests/servers/moto_setup.py with the
// bundled ERA5 samples, and killed by PID at process exit. Tests skip (with the reason) only
// when `python3 -c 'import moto'` fails.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace lazycube::test {

// Sets (or unsets, with nullopt) an environment variable for a scope, restoring it after.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::optional<std::string>& value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = std::string(old);
    if (value) ::setenv(name_.c_str(), value->c_str(), 1);
    else ::unsetenv(name_.c_str());
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_.c_str(), old_->c_str(), 1);
    else ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// Clears every AWS_*/GOOGLE_*/AZURE_STORAGE_* variable the credential chains read, and points
// HOME at `home`.
class CleanCloudEnv {
 public:
  explicit CleanCloudEnv(const std::string& home) {
    for (const char* n : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                          "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_REGION", "AWS_DEFAULT_REGION",
                          "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "GOOGLE_OAUTH_ACCESS_TOKEN",
                          "GOOGLE_APPLICATION_CREDENTIALS",
                          "AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_TOKEN",
                          "AZURE_STORAGE_CONNECTION_STRING"})
      vars_.push_back(std::make_unique<ScopedEnv>(n, std::nullopt));
    vars_.push_back(std::make_unique<ScopedEnv>("HOME", home));
  }

 private:
  std::vector<std::unique_ptr<ScopedEnv>> vars_;
};

inline std::string run_capture(const std::string& cmd, int* status = nullptr) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = ::pclose(p);
  if (status) *status = st;
  return out;
}

class MotoServer {
 public:
  static constexpr const char* kBucket = "lazycube-test";
  std::string endpoint;  // http://127.0.0.1:PORT
  std::string key_id, secret;
  std::string session_key_id, session_secret, session_token;

  // The process's server, started on first use; nullptr with `skip_reason` set when moto is
  // not installed. Any other failure to start throws.
  static MotoServer* instance(std::string& skip_reason) {
    static std::string reason;
    static std::unique_ptr<MotoServer> server = start(reason);
    skip_reason = reason;
    return server.get();
  }

  // SigV4/IAM verification on every request (on) or none (off).
  void set_auth(bool on) const {
    int st = 0;
    run_capture("python3 " + script() + " auth " + (on ? "on " : "off ") + endpoint + " 2>&1", &st);
    if (st != 0) throw std::runtime_error("moto_setup.py auth failed");
  }

  // Uploads the tree at `src` under `prefix/` in `bucket` (with authentication off).
  void upload(const std::string& src, const std::string& prefix, const std::string& bucket = kBucket) const {
    int st = 0;
    const std::string out = run_capture("python3 " + script() + " upload " + endpoint + " " + bucket + " '" +
                                        src + "=" + prefix + "' 2>&1", &st);
    if (st != 0) throw std::runtime_error("moto_setup.py upload failed: " + out);
  }

  // Creates another bucket (with authentication off); an existing one is kept.
  void create_bucket(const std::string& bucket) const {
    int st = 0;
    const std::string out = run_capture("python3 " + script() + " bucket " + endpoint + " " + bucket + " 2>&1", &st);
    if (st != 0 && out.find("BucketAlready") == std::string::npos)
      throw std::runtime_error("moto_setup.py bucket failed: " + out);
  }

  ~MotoServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
  }

 private:
  pid_t pid_ = -1;

  static std::string script() { return std::string(LAZYCUBE_SOURCE_DIR) + "/tests/servers/moto_setup.py"; }

  static int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ::close(fd);
      throw std::runtime_error("no free port");
    }
    ::close(fd);
    return ntohs(a.sin_port);
  }

  // True when GET /moto-api/ answers 200.
  static bool answers(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    bool ok = false;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
      const std::string req = "GET /moto-api/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
      if (::send(fd, req.data(), req.size(), 0) == static_cast<ssize_t>(req.size())) {
        char buf[64] = {};
        ssize_t n = ::recv(fd, buf, sizeof buf - 1, 0);
        ok = n > 12 && std::string(buf, static_cast<std::size_t>(n)).find(" 200") != std::string::npos;
      }
    }
    ::close(fd);
    return ok;
  }

  // True (with `reason`) when the PATH python3 lacks moto or boto3. Asked only after the server
  // or its setup failed: the check is a Python start-up of its own, ~0.7 s per test process.
  static bool moto_missing(std::string& reason) {
    int st = 0;
    run_capture("python3 -c 'import moto, boto3' 2>&1", &st);
    if (st == 0) return false;
    reason = "moto is not installed for the PATH python3 (python3 -c 'import moto, boto3' fails)";
    return true;
  }

  static std::unique_ptr<MotoServer> start(std::string& reason) {
    int st = 0;
    auto s = std::make_unique<MotoServer>();
    const int port = free_port();
    s->endpoint = "http://127.0.0.1:" + std::to_string(port);
    const pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the test process
      if (::getppid() != parent) ::_exit(1);
      // Server log: $LAZYCUBE_MOTO_LOG when set (debugging), else nowhere.
      const char* log = std::getenv("LAZYCUBE_MOTO_LOG");
      FILE* devnull = std::fopen(log && *log ? log : "/dev/null", "w");
      if (devnull) {
        ::dup2(::fileno(devnull), 1);
        ::dup2(::fileno(devnull), 2);
      }
      const std::string p = std::to_string(port);
      ::execlp("python3", "python3", "-m", "moto.server", "-H", "127.0.0.1", "-p", p.c_str(), (char*)nullptr);
      ::_exit(127);
    }
    s->pid_ = pid;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!answers(port)) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {  // the server exited before answering
        s->pid_ = -1;
        if (moto_missing(reason)) return nullptr;
        throw std::runtime_error("the moto server exited at start (wait status " + std::to_string(status) +
                                 "; set LAZYCUBE_MOTO_LOG=FILE for its log)");
      }
      if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("moto did not start");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const std::string src = LAZYCUBE_SOURCE_DIR;
    const std::string out = run_capture("python3 " + script() + " setup " + s->endpoint + " " + kBucket + " " +
                                        src + "/data/era5_sample_v2.zarr=era5_v2.zarr " + src +
                                        "/data/era5_sample_v3.zarr=era5_v3.zarr", &st);
    if (st != 0) {
      if (moto_missing(reason)) return nullptr;  // e.g. boto3 absent beside moto
      throw std::runtime_error("moto_setup.py setup failed: " + out);
    }
    const auto j = nlohmann::json::parse(out);
    s->key_id = j.at("key_id");
    s->secret = j.at("secret");
    s->session_key_id = j.at("session_key_id");
    s->session_secret = j.at("session_secret");
    s->session_token = j.at("session_token");
    return s;
  }
};

#define LAZYCUBE_REQUIRE_MOTO(var)                                              \
  std::string var##_skip;                                                       \
  auto* var = ::lazycube::test::MotoServer::instance(var##_skip);               \
  if (!var) GTEST_SKIP() << var##_skip

}  // namespace lazycube::test
