// A private Azurite (Azure Blob Storage emulator) for the az:// tests
// (tests/servers/start_azurite.sh): started once per test process on 127.0.0.1 with a free port,
// its own account and key, killed by PID at exit. Blobs are uploaded with Put Blob over REST,
// signed by our SharedKey signer (Azurite checks the signature). Tests skip with the reason when
// Azurite is not installed (scripts/setup.sh installs it with npm into .tools/npm).
#pragma once

#include <curl/curl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <memory>
#include <thread>

#include "../../src/store/azure_protocol.hpp"
#include "../../src/store/http_util.hpp"
#include "test_support.hpp"

namespace lazycube::test {

inline std::string azurite_executable() {
  if (const char* e = std::getenv("LAZYCUBE_AZURITE")) return e;
  return std::string(LAZYCUBE_SOURCE_DIR) + "/.tools/npm/node_modules/.bin/azurite-blob";
}

// Why Azurite cannot run here, or "" when it can.
inline std::string azurite_unavailable_reason() {
  if (std::system("command -v node >/dev/null 2>&1") != 0) return "node is not installed (Azurite needs Node.js)";
  if (!fs::exists(azurite_executable()))
    return "Azurite is not installed at " + azurite_executable() + " (bash scripts/setup.sh --no-build installs it)";
  return "";
}

class AzuriteServer {
 public:
  static constexpr const char* kAccount = "lazycubeacct";
  // base64 of "lazycube-azurite-test-key-0123456789": the account's SharedKey.
  static constexpr const char* kKey = "bGF6eWN1YmUtYXp1cml0ZS10ZXN0LWtleS0wMTIzNDU2Nzg5";

  AzuriteServer() {
    int fds[2];
    if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
    const std::string script = std::string(LAZYCUBE_SOURCE_DIR) + "/tests/servers/start_azurite.sh";
    const std::string dir = (dir_.path() / "azurite").string();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the test process
      ::dup2(fds[1], 1);
      ::close(fds[0]);
      ::close(fds[1]);
      ::execl("/bin/bash", "bash", script.c_str(), dir.c_str(), kAccount, kKey, static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[1]);
    std::string line;
    char c;
    while (::read(fds[0], &c, 1) == 1 && c != '\n') line += c;
    ::close(fds[0]);
    if (line.empty()) {
      stop();
      throw std::runtime_error("start_azurite.sh printed no port");
    }
    port_ = std::stoi(line);
    for (int i = 0; i < 1500 && !accepting(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!accepting()) {
      stop();
      throw std::runtime_error("Azurite did not start within 15 s");
    }
  }
  ~AzuriteServer() { stop(); }

  // The process-wide server with container kContainer created; nullptr + `skip` (the reason)
  // when Azurite cannot run here.
  static constexpr const char* kContainer = "lazycube";
  static AzuriteServer* instance(std::string& skip) {
    static std::unique_ptr<AzuriteServer> server;
    static std::string reason = azurite_unavailable_reason();
    if (!server && reason.empty()) {
      try {
        auto started = std::make_unique<AzuriteServer>();
        started->create_container(kContainer);
        server = std::move(started);
      } catch (const std::exception& e) {
        reason = std::string("Azurite did not start: ") + e.what();
      }
    }
    skip = reason;
    return server.get();
  }
  AzuriteServer(const AzuriteServer&) = delete;
  AzuriteServer& operator=(const AzuriteServer&) = delete;

  // The account's Blob endpoint (path-style).
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_) + "/" + kAccount; }
  std::string connection_string(const std::string& key = kKey) const {
    return "DefaultEndpointsProtocol=http;AccountName=" + std::string(kAccount) + ";AccountKey=" + key +
           ";BlobEndpoint=" + endpoint() + ";";
  }

  // PUT `url` (container or blob) signed with SharedKey; returns the HTTP status.
  long put(const std::string& path_and_query, const std::string& body, bool blob,
           const std::vector<std::string>& extra_headers = {}) const {
    std::string url = endpoint() + "/" + path_and_query;
    std::vector<std::string> headers = {"x-ms-version: " + std::string(azure::kApiVersion),
                                        "Content-Length: " + std::to_string(body.size()),
                                        "Content-Type: application/octet-stream"};  // not curl's form type
    if (blob) headers.push_back("x-ms-blob-type: BlockBlob");
    headers.insert(headers.end(), extra_headers.begin(), extra_headers.end());
    azure::SharedKeySigner(kAccount, kKey).sign("PUT", url, headers);
    CURL* e = curl_easy_init();
    curl_slist* list = nullptr;
    for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
    curl_easy_setopt(e, CURLOPT_URL, url.c_str());
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "PUT");
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, list);
    std::string reply;
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &reply);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, +[](char* p, size_t s, size_t n, void* out) {
      static_cast<std::string*>(out)->append(p, s * n);
      return s * n;
    });
    long status = 0;
    if (const CURLcode rc = curl_easy_perform(e); rc == CURLE_OK) curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    else last_error_ = curl_easy_strerror(rc);
    if (status >= 300) last_error_ = reply;
    curl_slist_free_all(list);
    curl_easy_cleanup(e);
    return status;
  }

  // `public_read`: anonymous clients may read and list it.
  void create_container(const std::string& name, bool public_read = false) const {
    const long s = put(name + "?restype=container", "", false,
                       public_read ? std::vector<std::string>{"x-ms-blob-public-access: container"}
                                   : std::vector<std::string>{});
    if (s != 201 && s != 409) throw std::runtime_error("create container " + name + ": HTTP " + std::to_string(s) + " " + last_error_);
  }
  void upload(const std::string& container, const std::string& key, const std::string& body) const {
    const long s = put(container + "/" + http::percent_encode(key), body, true);
    if (s != 201) throw std::runtime_error("upload " + key + ": HTTP " + std::to_string(s) + " " + last_error_);
  }
  // Every file under `dir`, under `prefix/` in `container`.
  void upload_tree(const std::string& container, const fs::path& dir, const std::string& prefix) const {
    for (const auto& entry : fs::recursive_directory_iterator(dir))
      if (entry.is_regular_file())
        upload(container, prefix + "/" + fs::relative(entry.path(), dir).generic_string(), read_file(entry.path()));
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
  void stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
  }

  TempDir dir_;
  mutable std::string last_error_;
  pid_t pid_ = -1;
  int port_ = 0;
};

#define LAZYCUBE_REQUIRE_AZURITE()                                                   \
  if (auto reason = ::lazycube::test::azurite_unavailable_reason(); !reason.empty()) \
  GTEST_SKIP() << reason

}  // namespace lazycube::test
