// One fixture per store backend for the tests that run the same checks on every backend (the
// store contract suite, the writer's remote tests, the Icechunk remote tests): for a backend name
// ("file", "http", "s3", "gcs", "az"), a local folder served under a prefix, or an empty root to
// write under, with the URL and the options that read and write it. Built on the process-wide
// servers of the other fixtures: nginx (one for all folders, each a symlink under its root),
// moto (bucket MotoServer::kBucket; gs:// is its S3-compatible XML API through endpoint_url),
// Azurite (container AzuriteServer::kContainer).
#pragma once

#include <memory>
#include <set>
#include <string>

#include "azurite_server.hpp"
#include "gcs_token_fixture.hpp"
#include "lazycube/store/store.hpp"
#include "moto_fixture.hpp"
#include "nginx_server.hpp"
#include "test_support.hpp"

namespace lazycube::test {

// A root on one backend; `skip` says why the backend cannot run here ("" when it can).
struct BackendRoot {
  std::string url;     // the root's URL, without a trailing '/'
  StoreOptions read;   // reads it: anonymous on s3/gcs, SharedKey on az, nothing on file/http
  StoreOptions write;  // writes there, signed: s3/gcs HMAC key + secret (SigV4), az SharedKey
  bool lists = true;   // plain HTTP does not list
  MotoServer* moto = nullptr;  // s3, gcs: the server, to turn its signature checks on
  std::string skip;
  explicit operator bool() const { return skip.empty(); }
};

struct BackendChoices {
  // gs:// reads and writes with a service account's OAuth tokens (tests/servers/
  // gcs_token_server.py; moto does not check them) instead of anonymous reads and HMAC writes.
  bool gcs_service_account = false;
};

namespace detail {

// The process-wide nginx serving one temporary root; nullptr + `skip` when it cannot run.
struct SharedNginx {
  TempDir root;  // declared first: destroyed after the server
  std::unique_ptr<NginxServer> server;
  std::string reason;
  static SharedNginx& get() {
    static SharedNginx n;
    if (!n.server && n.reason.empty()) {
      n.reason = nginx_unavailable_reason();
      if (n.reason.empty()) {
        try {
          n.server = std::make_unique<NginxServer>(n.root.path());
        } catch (const std::exception& e) {
          n.reason = std::string("nginx unavailable: ") + e.what();
        }
      }
    }
    return n;
  }
};

// Once per process and (server, folder, prefix): true the first time.
inline bool first_upload(const std::string& server, const fs::path& dir, const std::string& prefix) {
  static std::set<std::string> done;
  return done.insert(server + "|" + dir.string() + "|" + prefix).second;
}

}  // namespace detail

// An empty root named `prefix` on `backend` (nothing uploaded; writes go under it).
inline BackendRoot backend_root(const std::string& backend, const std::string& prefix, const BackendChoices& how = {}) {
  BackendRoot r;
  if (backend == "file") {
    static TempDir files;
    fs::create_directories(files.path() / prefix);
    r.url = (files.path() / prefix).string();
    return r;
  }
  if (backend == "http") {
    auto& nginx = detail::SharedNginx::get();
    if (!nginx.server) {
      r.skip = nginx.reason;
      return r;
    }
    r.url = nginx.server->url() + "/" + prefix;
    r.lists = false;
    return r;
  }
  if (backend == "az") {
    auto* az = AzuriteServer::instance(r.skip);
    if (!az) return r;
    r.url = "az://" + std::string(AzuriteServer::kContainer) + "/" + prefix;
    r.read = r.write = {{"connection_string", az->connection_string()}};
    return r;
  }
  if (backend != "s3" && backend != "gcs") throw std::invalid_argument("no store backend fixture named " + backend);
  r.moto = MotoServer::instance(r.skip);
  if (!r.moto) return r;
  r.url = (backend == "s3" ? "s3://" : "gs://") + std::string(MotoServer::kBucket) + "/" + prefix;
  r.read = {{"endpoint_url", r.moto->endpoint}, {"anon", "true"}};
  r.write = {{"endpoint_url", r.moto->endpoint}, {"key", r.moto->key_id}, {"secret", r.moto->secret}};
  if (backend == "gcs" && how.gcs_service_account) {
    static std::unique_ptr<GcsServiceAccountKeys> keys;
    if (!keys) {
      if (r.skip = gcs_token_server_unavailable_reason(); !r.skip.empty()) return r;
      keys = std::make_unique<GcsServiceAccountKeys>(3600);
    }
    r.read = r.write = {{"endpoint_url", r.moto->endpoint}, {"token", keys->key_json().string()}};
  }
  return r;
}

// The local folder `dir` served by `backend` under `prefix` (uploaded once per process; file://
// reads the folder itself, nginx serves it through a symlink <root>/<prefix>).
inline BackendRoot serve_folder(const std::string& backend, const fs::path& dir, const std::string& prefix,
                                const BackendChoices& how = {}) {
  if (backend == "file") return BackendRoot{.url = dir.string()};
  BackendRoot r = backend_root(backend, prefix, how);
  if (!r) return r;
  if (backend == "http") {
    const fs::path link = detail::SharedNginx::get().root.path() / prefix;
    if (fs::is_directory(link) && !fs::is_symlink(link)) fs::remove(link);  // an empty backend_root
    if (!fs::is_symlink(link)) {
      fs::create_directories(link.parent_path());
      fs::create_directory_symlink(fs::absolute(dir), link);
    } else if (fs::read_symlink(link) != fs::absolute(dir)) {
      throw std::logic_error("http fixture: prefix " + prefix + " already serves " + fs::read_symlink(link).string());
    }
  } else if (backend == "az") {
    if (detail::first_upload("az", dir, prefix)) AzuriteServer::instance(r.skip)->upload_tree(AzuriteServer::kContainer, dir, prefix);
  } else if (detail::first_upload("moto", dir, prefix)) {
    r.moto->upload(dir.string(), prefix);
  }
  return r;
}

// `var`: serve_folder(...) of the arguments; the test skips with the reason when the backend
// cannot run here.
#define LAZYCUBE_SERVE_OR_SKIP(var, ...)                       \
  const auto var = ::lazycube::test::serve_folder(__VA_ARGS__); \
  if (!var) GTEST_SKIP() << var.skip

// Moto checks every request's signature while this lives.
class MotoSignatureChecks {
 public:
  explicit MotoSignatureChecks(const MotoServer* moto) : moto_(moto) { moto_->set_auth(true); }
  ~MotoSignatureChecks() { moto_->set_auth(false); }
  MotoSignatureChecks(const MotoSignatureChecks&) = delete;
  MotoSignatureChecks& operator=(const MotoSignatureChecks&) = delete;

 private:
  const MotoServer* moto_;
};

}  // namespace lazycube::test
