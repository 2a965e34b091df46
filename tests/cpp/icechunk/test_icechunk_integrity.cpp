// Virtual chunk integrity: a virtual reference records the ETag or the last-modified time of
// the object it points into; reading checks it (If-Match / If-Unmodified-Since over HTTP and S3,
// the file's ETag and mtime locally). The object unchanged reads; the object replaced after the
// repository was written is an error naming its URL, never other bytes or fill values.
// Also the containers a repository's configuration declares: their settings under the user's.
#include <flatbuffers/flexbuffers.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "icechunk_test_writer.hpp"
#include "lazycube/error.hpp"
#include "lazycube/icechunk/repository.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "moto_fixture.hpp"
#include "nginx_server.hpp"

namespace lazycube {
namespace {

namespace fs = std::filesystem;
namespace w = test::icechunk_writer;
using test::message_of;

const std::string kChunk = "0123456789abcdef";  // 4 int32 values

std::string array_json() {
  return nlohmann::json{{"zarr_format", 3},
                        {"node_type", "array"},
                        {"shape", {4}},
                        {"data_type", "int32"},
                        {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {4}}}}}},
                        {"chunk_key_encoding", {{"name", "default"}}},
                        {"fill_value", -1},
                        {"codecs", {{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}}}}
      .dump();
}

// A repository whose array "v" has one virtual chunk: `url`, bytes [2, 18), with `etag` and
// `last_modified_s` recorded.
void write_repo(const fs::path& dir, const std::string& url, const std::string& etag, std::uint32_t last_modified_s,
                const std::vector<std::uint8_t>& config = {}) {
  fs::remove_all(dir);
  w::ManifestSpec m{{{0, 1}}, {}, ""};
  m.refs.push_back({w::Ref::Kind::Virtual, {0}, "", url, 2, kChunk.size(), etag, last_modified_s});
  w::write_repository(dir, {{"/", R"({"zarr_format": 3, "node_type": "group"})"}, {"/v", array_json(), true, {m}}},
                      {config});
}

// A repo file configuration as Icechunk 2 writes it (serde -> FlexBuffers) declaring one S3
// container.
std::vector<std::uint8_t> s3_container_config(const std::string& prefix, const std::string& endpoint, bool anonymous) {
  flexbuffers::Builder b;
  b.Map([&] {
    b.Int("inline_chunk_threshold_bytes", 12);
    b.Map("virtual_chunk_containers", [&] {
      b.Map(prefix.c_str(), [&] {
        b.Null("name");
        b.Map("store", [&] {
          b.Map("s3_compatible", [&] {
            b.Bool("allow_http", true);
            b.Bool("anonymous", anonymous);
            b.String("endpoint_url", endpoint);
            b.Bool("force_path_style", true);
            b.String("region", "us-east-1");
          });
        });
        b.String("url_prefix", prefix);
      });
    });
  });
  b.Finish();
  return b.GetBuffer();
}

std::string read_v(const fs::path& dir, const std::string& container, const StoreOptions& options = {}) {
  icechunk::IcechunkOptions o;
  o.virtual_chunk_containers = {{container, options}};
  auto store = icechunk::make_icechunk_store(icechunk::Repository::open(open_location(dir.string())), o);
  auto got = store->get("v/c/0");
  return got ? std::string(reinterpret_cast<const char*>(got->data()), got->size()) : "<missing>";
}

struct stat stat_of(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) throw std::runtime_error("stat failed: " + p.string());
  return st;
}

// Sets a file's mtime (whole seconds).
void set_mtime(const fs::path& p, std::time_t t) {
  const struct timespec times[2] = {{t, 0}, {t, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), times, 0), 0);
}

std::string md5_hex(const std::string& bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &n, EVP_md5(), nullptr);
  std::string out;
  char hex[3];
  for (unsigned int i = 0; i < n; ++i) {
    std::snprintf(hex, sizeof hex, "%02x", md[i]);
    out += hex;
  }
  return out;
}

#define EXPECT_CHANGED(statement, url)                                      \
  do {                                                                      \
    const std::string m = message_of<StoreError>([&] { statement; });      \
    EXPECT_NE(m.find(url), std::string::npos) << m;                         \
    EXPECT_NE(m.find("changed since it was referenced"), std::string::npos) << m; \
  } while (0)

TEST(IcechunkIntegrity, LocalFileEtagAndMtime) {
  test::TempDir tmp;
  const fs::path file = tmp.path() / "data" / "virtual.bin";
  test::write_file(file, "xx" + kChunk + "yy");
  set_mtime(file, 1'700'000'000);
  const std::string url = "file://" + file.string(), container = "file://" + (tmp.path() / "data").string();
  const fs::path repo = tmp.path() / "repo";

  // Last-modified: the same time or a later one reads; an earlier one is a changed object.
  write_repo(repo, url, "", 1'700'000'000);
  EXPECT_EQ(read_v(repo, container), kChunk);
  write_repo(repo, url, "", 1'699'999'999);
  EXPECT_CHANGED(read_v(repo, container), file.string());

  // ETag (object_store's local form: inode-mtime_us-size in hex), quoted or not.
  const struct stat st = stat_of(file);
  char etag[64];
  std::snprintf(etag, sizeof etag, "%llx-%llx-%llx", static_cast<unsigned long long>(st.st_ino),
                static_cast<unsigned long long>(st.st_mtim.tv_sec) * 1000000ull + st.st_mtim.tv_nsec / 1000,
                static_cast<unsigned long long>(st.st_size));
  write_repo(repo, url, etag, 0);
  EXPECT_EQ(read_v(repo, container), kChunk);
  write_repo(repo, url, std::string("\"") + etag + "\"", 1'700'000'000);
  EXPECT_EQ(read_v(repo, container), kChunk);

  // The object replaced after the repository was written: an error, for both conditions.
  test::write_file(file, "zz" + kChunk + "zz");
  set_mtime(file, 1'700'000'100);
  EXPECT_CHANGED(read_v(repo, container), file.string());
  write_repo(repo, url, "", 1'700'000'000);
  EXPECT_CHANGED(read_v(repo, container), file.string());
  // And a missing one: an error, never the fill value.
  fs::remove(file);
  auto missing = message_of<StoreError>([&] { read_v(repo, container); });
  EXPECT_NE(missing.find("does not exist"), std::string::npos) << missing;
}

TEST(IcechunkIntegrity, HttpEtagAndLastModified) {
  LAZYCUBE_REQUIRE_NGINX();
  test::TempDir tmp;
  const fs::path file = tmp.path() / "www" / "virtual.bin";
  test::write_file(file, "xx" + kChunk + "yy");
  set_mtime(file, 1'700'000'000);
  test::NginxServer nginx(tmp.path() / "www");
  const std::string url = nginx.url() + "/virtual.bin", container = nginx.url() + "/";
  const fs::path repo = tmp.path() / "repo";
  // nginx's ETag of a static file: "<mtime hex>-<size hex>".
  char etag[64];
  std::snprintf(etag, sizeof etag, "\"%llx-%llx\"", 1'700'000'000ull, static_cast<unsigned long long>(kChunk.size() + 4));

  write_repo(repo, url, etag, 0);
  EXPECT_EQ(read_v(repo, container), kChunk);
  write_repo(repo, url, "", 1'700'000'000);
  EXPECT_EQ(read_v(repo, container), kChunk);
  write_repo(repo, url, "", 1'699'999'000);  // recorded before the file's time: HTTP 412
  EXPECT_CHANGED(read_v(repo, container), url);

  test::write_file(file, "zz" + kChunk + "zzzz");  // replaced: new size and time
  set_mtime(file, 1'700'000'500);
  write_repo(repo, url, etag, 0);
  EXPECT_CHANGED(read_v(repo, container), url);
  write_repo(repo, url, "", 1'700'000'000);
  EXPECT_CHANGED(read_v(repo, container), url);
}

TEST(IcechunkIntegrity, S3EtagAndLastModifiedSigV4) {
  LAZYCUBE_REQUIRE_MOTO(moto);
  test::TempDir tmp;
  const std::string object = "xx" + kChunk + "yy";
  test::write_file(tmp.path() / "up" / "virtual.bin", object);
  moto->create_bucket("integrity");
  moto->upload((tmp.path() / "up").string(), "v1", "integrity");
  const std::time_t uploaded = std::time(nullptr);
  moto->set_auth(true);
  struct AuthOff {
    const test::MotoServer* m;
    ~AuthOff() { m->set_auth(false); }
  } auth_off{moto};
  const StoreOptions options{{"endpoint_url", moto->endpoint}, {"region_name", "us-east-1"},
                             {"key", moto->key_id}, {"secret", moto->secret}};
  const std::string url = "s3://integrity/v1/virtual.bin";
  const fs::path repo = tmp.path() / "repo";

  write_repo(repo, url, "\"" + md5_hex(object) + "\"", 0);
  EXPECT_EQ(read_v(repo, "s3://integrity/", options), kChunk);
  write_repo(repo, url, md5_hex(object), 0);  // unquoted, as some writers record it
  EXPECT_EQ(read_v(repo, "s3://integrity/", options), kChunk);
  write_repo(repo, url, "", static_cast<std::uint32_t>(uploaded + 3600));
  EXPECT_EQ(read_v(repo, "s3://integrity/", options), kChunk);
  write_repo(repo, url, "", static_cast<std::uint32_t>(uploaded - 3600));  // the object is newer
  EXPECT_CHANGED(read_v(repo, "s3://integrity/", options), url);

  // The repository declares the container (endpoint, region, anonymous): the user's
  // authorisation with credentials alone reads through the declared endpoint; without it the
  // error names the declared container.
  write_repo(repo, url, "", 0, s3_container_config("s3://integrity/", moto->endpoint, true));
  EXPECT_EQ(read_v(repo, "s3://integrity/", {{"key", moto->key_id}, {"secret", moto->secret}}), kChunk);
  auto refused = message_of<StoreError>([&] { read_v(repo, "s3://other/", options); });
  EXPECT_NE(refused.find("the repository declares it as 's3://integrity/'"), std::string::npos) << refused;
  // The settings of the declared container holding the chunk, under a broader authorisation.
  write_repo(repo, url, "", 0, s3_container_config("s3://integrity/v1/", moto->endpoint, false));
  EXPECT_EQ(read_v(repo, "s3://integrity/", {{"key", moto->key_id}, {"secret", moto->secret}}), kChunk);
  // The user's endpoint overrides the declared one.
  write_repo(repo, url, "", 0, s3_container_config("s3://integrity/", "http://127.0.0.1:9", false));
  EXPECT_EQ(read_v(repo, "s3://integrity/", options), kChunk);

  // Replaced after the repository was written.
  moto->set_auth(false);
  test::write_file(tmp.path() / "up" / "virtual.bin", "zz" + kChunk + "zz");
  moto->upload((tmp.path() / "up").string(), "v1", "integrity");
  moto->set_auth(true);
  write_repo(repo, url, "\"" + md5_hex(object) + "\"", 0);
  EXPECT_CHANGED(read_v(repo, "s3://integrity/", options), url);
}

}  // namespace
}  // namespace lazycube
