// A private Azurite (Azure Blob Storage emulator) for the az:// tests
// (tests/servers/start_azurite.sh): started once per test process on 127.0.0.1 with a free port,
// its own account and key, killed by PID at exit. Blobs are uploaded with Put Blob over REST,
// signed by our SharedKey signer (Azurite checks the signature). Tests skip with the reason when
// Azurite is not installed (scripts/setup.sh installs it with npm into .tools/npm).
#pragma once

#include <curl/curl.h>

#include <memory>

#include "store/azure_protocol.hpp"
#include "store/http_util.hpp"
#include "script_server.hpp"
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

  AzuriteServer() : server_("start_azurite.sh", {(dir_.path() / "azurite").string(), kAccount, kKey}, 15) {}

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

  // The account's Blob endpoint (path-style).
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(server_.port()) + "/" + kAccount; }
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
  TempDir dir_;
  mutable std::string last_error_;
  ScriptServer server_;
};

#define LAZYCUBE_REQUIRE_AZURITE()                                                   \
  if (auto reason = ::lazycube::test::azurite_unavailable_reason(); !reason.empty()) \
  GTEST_SKIP() << reason

}  // namespace lazycube::test
