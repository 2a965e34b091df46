// The gdal engine over real servers on loopback: nginx (/vsicurl/) and moto S3 (/vsis3/ with
// endpoint, key and secret mapped to per-path GDAL options); missing files, bad options, and
// corrupt or truncated files give typed errors naming the file.
#include <gtest/gtest.h>

#include <cstring>

#include "gdal_test_files.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "moto_fixture.hpp"
#include "nginx_server.hpp"

using namespace lazycube;
using lazycube::test::CleanCloudEnv;
using lazycube::test::message_of;
using lazycube::test::MotoServer;
using lazycube::test::NginxServer;
using lazycube::test::TempDir;
namespace fs = std::filesystem;

namespace {

// Every variable of `remote` equals the local file's, byte for byte (decoded values).
void expect_same_remote(const Dataset& local, const Dataset& remote) {
  ASSERT_EQ(local.variable_names(), remote.variable_names());
  for (const auto& name : local.variable_names()) {
    const NDArray a = local[name].read(), b = remote[name].read();
    ASSERT_EQ(a.dtype, b.dtype) << name;
    ASSERT_EQ(a.data.size(), b.data.size()) << name;
    EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size()), 0) << name;
  }
}

// Copies the files the remote tests serve into `dir`: the real files when the shared data is
// there, and the NetCDF-4 fixture when netCDF4-python is. Returns their names.
std::vector<std::string> stage_files(const fs::path& dir, std::string& skipped) {
  std::vector<std::string> names;
  const auto shared = lazycube::test::shared_data_dir();
  for (const char* f : {"eraint_uvz.nc", "era5-2mt-2019-03-uk.grib"}) {
    if (!shared.empty() && fs::exists(shared / "real" / f)) {
      fs::copy_file(shared / "real" / f, dir / f);
      names.push_back(f);
    } else {
      skipped += std::string(f) + " (no ../shared/data/real) ";
    }
  }
  std::string skip;
  if (!lazycube::test::make_netcdf4_fixture(dir, skip).empty()) names.push_back("fixture_nc4.nc");
  else skipped += skip;
  return names;
}

}  // namespace

TEST(GdalHttp, FilesOverNginxEqualLocal) {
  LAZYCUBE_REQUIRE_NGINX();
  TempDir www;
  std::string skipped;
  const auto names = stage_files(www.path(), skipped);
  if (names.empty()) GTEST_SKIP() << "no files to serve: " << skipped;
  if (!skipped.empty()) std::cerr << "[ note ] not served: " << skipped << "\n";
  NginxServer server(www.path());
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    OpenOptions o;
    o.storage_options = {{"retries", "3"}, {"timeout", "30"}};
    expect_same_remote(open((www.path() / name).string()), open(server.url() + "/" + name, o));
  }
  // A missing remote file: NotFound naming the URL.
  const std::string missing = server.url() + "/no_such_file.nc";
  const std::string msg = message_of<NotFound>([&] { open(missing); });
  EXPECT_NE(msg.find(missing), std::string::npos) << msg;
  // An option no HTTP store knows: StoreError naming it.
  OpenOptions bad;
  bad.storage_options = {{"no_such_option", "1"}};
  const std::string opt = message_of<StoreError>([&] { open(server.url() + "/" + names.front(), bad); });
  EXPECT_NE(opt.find("no_such_option"), std::string::npos) << opt;
}

TEST(GdalS3, FilesOverMotoEqualLocal) {
  std::string reason;
  MotoServer* moto = MotoServer::instance(reason);
  if (!moto) GTEST_SKIP() << reason;
  TempDir src, home;
  std::string skipped;
  const auto names = stage_files(src.path(), skipped);
  if (names.empty()) GTEST_SKIP() << "no files to serve: " << skipped;
  moto->upload(src.str(), "gdal");
  CleanCloudEnv env(home.str());
  moto->set_auth(true);
  struct AuthOff {
    MotoServer* m;
    ~AuthOff() { m->set_auth(false); }
  } auth_off{moto};
  const StoreOptions signed_options = {{"key", moto->key_id}, {"secret", moto->secret}, {"endpoint_url", moto->endpoint}};
  const std::string base = std::string("s3://") + MotoServer::kBucket + "/gdal/";
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    OpenOptions o;
    o.storage_options = signed_options;
    expect_same_remote(open((src.path() / name).string()), open(base + name, o));
  }
  OpenOptions o;
  o.storage_options = signed_options;
  const std::string missing = base + "missing.nc";
  const std::string msg = message_of<NotFound>([&] { open(missing, o); });
  EXPECT_NE(msg.find(missing), std::string::npos) << msg;
  // A wrong secret is refused (the secret never appears in the message).
  OpenOptions wrong = o;
  wrong.storage_options["secret"] = "wrong-secret-value";
  const std::string refused = message_of<StoreError>([&] { open(base + names.front(), wrong); });
  EXPECT_NE(refused.find(base + names.front()), std::string::npos) << refused;
  EXPECT_EQ(refused.find("wrong-secret-value"), std::string::npos) << refused;
  // Unknown option: StoreError naming it.
  OpenOptions bad = o;
  bad.storage_options["colour"] = "blue";
  const std::string opt = message_of<StoreError>([&] { open(base + names.front(), bad); });
  EXPECT_NE(opt.find("colour"), std::string::npos) << opt;
}

// gs:// (and gcs://) through /vsigs/ with the endpoint overridden to moto's S3-compatible XML API
// (anonymous: moto's checking off), as our own GCS store is tested.
TEST(GdalGcs, AnonymousReadThroughEndpointOverride) {
  std::string reason;
  MotoServer* moto = MotoServer::instance(reason);
  if (!moto) GTEST_SKIP() << reason;
  TempDir src, home;
  std::string skipped;
  const auto names = stage_files(src.path(), skipped);
  if (names.empty()) GTEST_SKIP() << "no files to serve: " << skipped;
  moto->upload(src.str(), "gdal-gs");
  CleanCloudEnv env(home.str());
  OpenOptions o;
  o.storage_options = {{"anon", "true"}, {"endpoint_url", moto->endpoint}};
  const std::string url = std::string("gs://") + MotoServer::kBucket + "/gdal-gs/" + names.back();
  const Dataset local = open((src.path() / names.back()).string());
  expect_same_remote(local, open(url, o));
  // gcs:// is the same scheme as gs:// (url_scheme.hpp), for the gdal engine too.
  expect_same_remote(local, open(std::string("gcs://") + MotoServer::kBucket + "/gdal-gs/" + names.back(), o));
  const std::string missing = std::string("gs://") + MotoServer::kBucket + "/gdal-gs/none.grib";
  const std::string msg = message_of<NotFound>([&] { open(missing, o); });
  EXPECT_NE(msg.find(missing), std::string::npos) << msg;
}

TEST(GdalErrors, CorruptTruncatedAndMissingFiles) {
  TempDir dir;
  // A file with a NetCDF suffix that is not NetCDF.
  const fs::path junk = dir.path() / "junk.nc";
  lazycube::test::write_file(junk, std::string(4096, 'x'));
  std::string msg = message_of<Error>([&] { open(junk.string()); });
  EXPECT_NE(msg.find(junk.string()), std::string::npos) << msg;
  // A NetCDF-4 (HDF5) file cut short.
  std::string skip;
  const std::string whole = lazycube::test::make_netcdf4_fixture(dir.path(), skip);
  if (!whole.empty()) {
    const fs::path cut = dir.path() / "cut.nc";
    lazycube::test::write_file(cut, lazycube::test::read_file(whole).substr(0, 3000));
    msg = message_of<Error>([&] { open(cut.string()); });
    EXPECT_NE(msg.find(cut.string()), std::string::npos) << msg;
  }
  // Missing local file: NotFound naming it.
  const std::string missing = (dir.path() / "missing.grib").string();
  msg = message_of<NotFound>([&] { open(missing); });
  EXPECT_NE(msg.find(missing), std::string::npos) << msg;
}

TEST(GdalErrors, TruncatedRealFileFailsWithTypedError) {
  LAZYCUBE_REQUIRE_REAL_FILE(path, "eraint_uvz.nc");
  TempDir dir;
  const fs::path cut = dir.path() / "eraint_cut.nc";
  const std::string bytes = lazycube::test::read_file(path);
  lazycube::test::write_file(cut, bytes.substr(0, bytes.size() / 2));
  // netCDF-C would read the lost half as zeros: opening refuses the file, naming it.
  std::string msg = message_of<CodecError>([&] { open(cut.string()); });
  EXPECT_NE(msg.find(cut.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  // Cut inside the header: GDAL cannot open it.
  lazycube::test::write_file(cut, bytes.substr(0, 1000));
  msg = message_of<Error>([&] { open(cut.string()); });
  EXPECT_NE(msg.find(cut.string()), std::string::npos) << msg;
}
