// The bundled ERA5 samples read over nginx (v2 with consolidated metadata; v3 sharded:
// suffix index reads and ranges) must equal the local read value for value, with and without
// injected faults.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "nginx_server.hpp"

using namespace lazycube;
using namespace lazycube::test;

namespace {

// Copies a bundled sample under www/, adding .zmetadata to a v2 store (HTTP cannot list).
fs::path stage(const std::string& name, const fs::path& www) {
  const fs::path src = fs::path(LAZYCUBE_SOURCE_DIR) / "data" / name, dst = www / name;
  fs::copy(src, dst, fs::copy_options::recursive);
  if (!fs::exists(dst / "zarr.json")) {
    nlohmann::json meta = nlohmann::json::object();
    for (auto& e : fs::recursive_directory_iterator(dst)) {
      const std::string f = e.path().filename().string();
      if (f == ".zarray" || f == ".zattrs" || f == ".zgroup")
        meta[fs::relative(e.path(), dst).generic_string()] = nlohmann::json::parse(read_file(e.path()));
    }
    write_file(dst / ".zmetadata", nlohmann::json{{"metadata", meta}, {"zarr_consolidated_format", 1}}.dump());
  }
  return dst;
}

void expect_same_over_http(const Dataset& local, const Dataset& remote) {
  ASSERT_EQ(local.variable_names(), remote.variable_names());
  for (const auto& name : local.variable_names()) {
    const NDArray a = local[name].read_raw(), b = remote[name].read_raw();
    ASSERT_EQ(a.shape, b.shape) << name;
    ASSERT_EQ(a.data.size(), b.data.size()) << name;
    EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size()), 0) << name;
    EXPECT_EQ(a.strings, b.strings) << name;
    // A selection reading part of the chunks.
    if (a.shape.size() == 3 && a.shape[0] > 2) {
      const NDArray c = local[name].isel({{local[name].dims()[0], Indexer(Slice{1, 3, 1})}}).read();
      const NDArray d = remote[name].isel({{remote[name].dims()[0], Indexer(Slice{1, 3, 1})}}).read();
      ASSERT_EQ(c.data.size(), d.data.size());
      EXPECT_EQ(std::memcmp(c.data.data(), d.data.data(), c.data.size()), 0) << name;
    }
  }
}

class HttpZarr : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(HttpZarr, HttpReadsLikeLocal) {
  LAZYCUBE_REQUIRE_NGINX();
  TempDir www;
  const fs::path local_path = stage(GetParam(), www.path());
  NginxServer server(www.path());
  const Dataset local = open(local_path.string());
  const Dataset remote = open(server.url() + "/" + GetParam());
  expect_same_over_http(local, remote);

  server.set_faults("p503 = 0.10, p429 = 0.05, pdrop = 0.02, ptrunc = 0.05");
  OpenOptions opts;
  opts.storage_options = {{"retries", "30"}, {"backoff", "0.002"}, {"max_backoff", "0.05"}};
  const Dataset faulty = open(server.url() + "/" + GetParam() + "/", opts);
  expect_same_over_http(local, faulty);
}

INSTANTIATE_TEST_SUITE_P(Http, HttpZarr, ::testing::Values("era5_sample_v2.zarr", "era5_sample_v3.zarr"),
                         [](const auto& info) { return info.param.substr(12, 2); });

TEST(HttpZarrBatching, HttpShardedReadCoalescesRequests) {
  LAZYCUBE_REQUIRE_NGINX();
  TempDir www;
  stage("era5_sample_v3.zarr", www.path());
  NginxServer server(www.path());
  const std::string url = server.url() + "/era5_sample_v3.zarr";
  auto count = [&](const StoreOptions& options) {
    const Location loc = open_location(url, options);
    const Dataset ds = open(loc);
    const std::uint64_t before = loc.store->stats().requests;
    for (const auto& name : ds.data_var_names()) ds[name].read_raw();
    return loc.store->stats().requests - before;
  };
  const std::uint64_t merged = count({});
  const std::uint64_t apart = count({{"coalesce_max", "0"}});
  EXPECT_LT(merged, apart) << "coalescing did not reduce the request count";
  EXPECT_GT(merged, 0u);
}

// Chunks are decoded while the rest still arrive (Store::get_each): a corrupt chunk among many
// is a CodecError naming it, the read stops, and the same dataset still reads its good
// variables and, after the chunk is restored, the whole array.
TEST(HttpZarrStreaming, HttpCorruptChunkAmongManyIsNamed) {
  LAZYCUBE_REQUIRE_NGINX();
  TempDir www;
  const fs::path dir = stage("era5_sample_v2.zarr", www.path());
  const fs::path chunk = dir / "t2m" / "0.1.1";
  const std::string good = read_file(chunk);
  write_file(chunk, good.substr(0, good.size() / 2));
  NginxServer server(www.path());
  const Dataset remote = open(server.url() + "/era5_sample_v2.zarr");
  try {
    remote["t2m"].read_raw();
    FAIL() << "a truncated chunk was read";
  } catch (const CodecError& e) {
    EXPECT_NE(std::string(e.what()).find("0.1.1"), std::string::npos) << e.what();
  }
  const Dataset local = open(dir.string());
  const NDArray a = local["u10"].read_raw(), b = remote["u10"].read_raw();
  ASSERT_EQ(a.data.size(), b.data.size());
  EXPECT_EQ(std::memcmp(a.data.data(), b.data.data(), a.data.size()), 0);
  write_file(chunk, good);
  const NDArray c = open(dir.string())["t2m"].read_raw(), d = remote["t2m"].read_raw();
  ASSERT_EQ(c.data.size(), d.data.size());
  EXPECT_EQ(std::memcmp(c.data.data(), d.data.data(), c.data.size()), 0);
}

