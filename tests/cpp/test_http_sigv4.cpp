// SigV4 signing by the fetch engine (CURLOPT_AWS_SIGV4) against moto with signature checks on:
// a signed GET and ranged GET succeed, a wrong secret is a 403 SignatureDoesNotMatch naming no
// secret.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "../../src/store/http_engine.hpp"
#include "test_support.hpp"

using namespace lazycube;
using namespace lazycube::test;

namespace {

std::string run_capture(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  ::pclose(p);
  return out;
}

int free_port() {
  const std::string s = run_capture("/usr/bin/python3 -c 'import socket; s=socket.socket(); "
                                    "s.bind((\"127.0.0.1\", 0)); print(s.getsockname()[1])'");
  return s.empty() ? 0 : std::stoi(s);
}

}  // namespace

TEST(HttpSigV4, HttpSignedGetAgainstMoto) {
  if (std::system("python3 -c 'import moto, boto3' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "moto/boto3 not importable by the PATH python3";
  const int port = free_port();
  ASSERT_GT(port, 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    std::freopen("/dev/null", "w", stderr);
    std::freopen("/dev/null", "w", stdout);
    const std::string p = std::to_string(port);
    ::execlp("python3", "python3", "-m", "moto.server", "-H", "127.0.0.1", "-p", p.c_str(),
             static_cast<char*>(nullptr));
    ::_exit(127);
  }
  struct Killer {
    pid_t pid;
    ~Killer() {
      ::kill(pid, SIGTERM);
      int st;
      ::waitpid(pid, &st, 0);
    }
  } killer{pid};
  const std::string endpoint = "http://127.0.0.1:" + std::to_string(port);
  {  // wait until moto answers (connection refused is retried by the engine)
    http::Request ping;
    ping.url = endpoint + "/moto-api/";
    http::RetryPolicy patient;
    patient.max_attempts = 1000;
    patient.max_backoff_s = 0.1;
    patient.deadline_s = 20;
    ASSERT_EQ(http::Engine::global().perform({ping}, patient, {}, nullptr)[0].status, 200) << "moto did not start";
  }
  TempDir tmp;
  std::string content(5000, '\0');
  for (std::size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 7);
  write_file(tmp.path() / "obj", content);
  const std::string keys = run_capture("python3 " + std::string(LAZYCUBE_SOURCE_DIR) +
                                       "/tests/servers/moto_setup.py " + endpoint + " bucket dir/obj.bin " +
                                       (tmp.path() / "obj").string());
  const auto space = keys.find(' ');
  ASSERT_NE(space, std::string::npos) << keys;
  const std::string access = keys.substr(0, space), secret = keys.substr(space + 1, keys.find('\n') - space - 1);

  http::Request req;
  req.url = endpoint + "/bucket/dir/obj.bin";
  req.sigv4 = http::SigV4{"us-east-1", "s3", access, secret, ""};
  http::Request ranged = req;
  ranged.range = ByteRange::range(100, 50);
  http::Request unsigned_req = req;
  unsigned_req.sigv4.reset();
  http::RetryPolicy retry;
  retry.max_attempts = 2;
  auto res = http::Engine::global().perform({req, ranged, unsigned_req}, retry, {}, nullptr);
  ASSERT_EQ(res[0].status, 200);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(res[0].body.data()), res[0].body.size()), content);
  ASSERT_EQ(res[1].status, 206);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(res[1].body.data()), res[1].body.size()),
            content.substr(100, 50));
  EXPECT_EQ(res[2].status, 403);  // checking is on: an unsigned request is refused

  http::Request bad = req;
  bad.sigv4->secret_key = "wrong-secret-value";
  auto denied = http::Engine::global().perform({bad}, retry, {}, nullptr);
  EXPECT_EQ(denied[0].status, 403);
  EXPECT_EQ(denied[0].attempts, 1);
  const std::string body(reinterpret_cast<const char*>(denied[0].body.data()), denied[0].body.size());
  EXPECT_NE(body.find("SignatureDoesNotMatch"), std::string::npos) << body;
}
