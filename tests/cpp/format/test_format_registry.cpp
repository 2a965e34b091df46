// The format registry (lazycube/format/registry.hpp): every format registered once, recognised
// from the URL or from the one sniffing round, options checked by the format that owns them, and
// a remote open whose probes (absences included) the persistent cache keeps.
#include <gtest/gtest.h>

#include <mutex>
#include <sstream>
#include <nlohmann/json.hpp>

#include "gdal_test_files.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/format/registry.hpp"
#include "nginx_server.hpp"
#include "test_support.hpp"

namespace lazycube {
namespace {

using nlohmann::json;
using test::message_of;
using test::TempDir;

const std::string kSample = std::string(LAZYCUBE_SOURCE_DIR) + "/data/era5_sample_v2.zarr";

std::vector<std::string> engines() {
  std::vector<std::string> out;
  for (const auto& f : format::registry().formats()) out.push_back(f.engine);
  return out;
}

// A store over another that counts the rounds of requests (get_each calls) and the keys asked.
class CountingStore final : public Store {
 public:
  explicit CountingStore(std::shared_ptr<Store> inner) : inner_(std::move(inner)) {}
  std::string url() const override { return inner_->url(); }
  std::optional<Buffer> get(std::string_view key, ByteRange range) override {
    auto r = get_many({{std::string(key), range}});
    return std::move(r[0]);
  }
  void get_each(const std::vector<ByteRequest>& requests, const ByteSink& sink) override {
    {
      std::lock_guard lock(mu);
      ++rounds;
      for (const auto& r : requests) keys.push_back(r.key);
    }
    inner_->get_each(requests, sink);
  }
  std::optional<std::uint64_t> size(std::string_view key) override { return inner_->size(key); }
  std::vector<std::string> list(std::string_view prefix) override { return inner_->list(prefix); }
  std::vector<std::string> list_dir(std::string_view prefix) override { return inner_->list_dir(prefix); }
  bool prefers_batches() const override { return true; }  // as a network store

  std::mutex mu;
  int rounds = 0;
  std::vector<std::string> keys;

 private:
  std::shared_ptr<Store> inner_;
};

TEST(FormatRegistry, EveryFormatOnceInSniffingOrder) {
  EXPECT_EQ(engines(), (std::vector<std::string>{"kerchunk", "icechunk", "gdal", "zarr"}));
  const std::string text = format::engines_text();
  for (const auto& e : engines()) EXPECT_NE(text.find("'" + e + "'"), std::string::npos) << text;
  format::Registry r;
  r.add({.engine = "x"});
  EXPECT_THROW(r.add({.engine = "x"}), UsageError);
}

TEST(FormatRegistry, UrlsAFormatClaimsByThemselves) {
  TempDir tmp;
  test::write_file(tmp.path() / "refs.json", R"({"version": 1, "refs": {".zgroup": "{\"zarr_format\": 2}"}})");
  const auto engine_of = [](const std::string& url, std::string_view engine = {}) {
    const format::Format* f = format::url_format(url, engine);
    return f ? f->engine : std::string("(store)");
  };
  EXPECT_EQ(engine_of("https://host/a/file.nc"), "gdal");
  EXPECT_EQ(engine_of("s3://b/x.GRIB2?versionId=1"), "gdal");
  EXPECT_EQ(engine_of("reference://https://host/refs.json"), "kerchunk");
  EXPECT_EQ(engine_of("https://host/refs.json"), "kerchunk");  // read to tell; a store if it is none
  EXPECT_EQ(engine_of((tmp.path() / "refs.json").string()), "kerchunk");
  EXPECT_EQ(engine_of(kSample), "(store)");
  EXPECT_EQ(engine_of(kSample, "zarr"), "(store)");
  EXPECT_EQ(engine_of(kSample, "gdal"), "gdal");
  const auto m = message_of<UsageError>([&] { format::url_format(kSample, "netcdf"); });
  EXPECT_NE(m.find("unknown engine 'netcdf'"), std::string::npos) << m;
  EXPECT_NE(m.find("'zarr'"), std::string::npos) << m;
}

TEST(FormatRegistry, OptionsAreCheckedByTheFormatThatOwnsThem) {
  OpenOptions o;
  o.format_options = {{"consolidate", true}};
  auto m = message_of<UsageError>([&] { open(kSample, o); });
  EXPECT_NE(m.find("unknown format option 'consolidate'"), std::string::npos) << m;
  EXPECT_NE(m.find("consolidated (zarr)"), std::string::npos) << m;
  EXPECT_NE(m.find("branch (icechunk)"), std::string::npos) << m;
  o.format_options = {{"consolidated", "yes"}};
  m = message_of<UsageError>([&] { open(kSample, o); });
  EXPECT_NE(m.find("format option 'consolidated' takes true, false or null, not \"yes\""), std::string::npos) << m;
  o.format_options = {{"branch", 3}};
  m = message_of<UsageError>([&] { open(kSample, o); });
  EXPECT_NE(m.find("format option 'branch' takes a string, not 3"), std::string::npos) << m;
  o.format_options = {{"virtual_chunk_containers", {{"s3://b/", {{"anon", true}}}}}};
  m = message_of<UsageError>([&] { open(kSample, o); });
  EXPECT_NE(m.find("option 'anon' of 's3://b/' must be a string"), std::string::npos) << m;
  o.format_options = json::array();
  m = message_of<UsageError>([&] { open(kSample, o); });
  EXPECT_NE(m.find("format options must be a JSON object"), std::string::npos) << m;
  // A key of another format than the one that reads the URL.
  o.format_options = {{"snapshot", "ABC"}};
  m = message_of<UsageError>([&] { open(kSample, o); });
  EXPECT_NE(m.find("format option 'snapshot' = \"ABC\" applies to Icechunk repositories only; " + kSample +
                   " is not one (it reads as Zarr stores)"),
            std::string::npos)
      << m;
  // Zarr's own key, honoured.
  o.format_options = {{"consolidated", false}};
  EXPECT_EQ(open(kSample, o).data_var_names(), open(kSample).data_var_names());
}

// Opening a store costs one round of requests: every format's probes together, the consolidated
// metadata among them (decoding the coordinates then reads chunks: not counted here).
TEST(FormatRegistry, AStoreIsSniffedInOneRound) {
  auto counting = std::make_shared<CountingStore>(open_location(kSample).store);
  const format::Contents contents = format::open(Location{counting, ""}, {});
  EXPECT_EQ(contents.zarr_format, 2);
  EXPECT_EQ(contents.arrays.size(), open(kSample).variable_names().size());
  EXPECT_EQ(counting->rounds, 1);
  for (const char* key : {"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata", "repo", "refs/branch.main/ref.json"})
    EXPECT_NE(std::find(counting->keys.begin(), counting->keys.end(), key), counting->keys.end()) << key;
  EXPECT_EQ(counting->keys.size(), 7u);
  // A group below the URL: Zarr's probes at the node, Icechunk's at the root.
  auto below = std::make_shared<CountingStore>(open_location(std::string(LAZYCUBE_SOURCE_DIR) + "/data").store);
  format::Request r;
  r.group = "era5_sample_v2.zarr";
  EXPECT_EQ(format::open(Location{below, ""}, r).arrays.size(), contents.arrays.size());
  EXPECT_EQ(below->rounds, 1);
  EXPECT_NE(std::find(below->keys.begin(), below->keys.end(), "era5_sample_v2.zarr/.zmetadata"), below->keys.end());
  EXPECT_NE(std::find(below->keys.begin(), below->keys.end(), "repo"), below->keys.end());
}

TEST(FormatRegistry, ReferenceSetsAreALayerOverTheirTargets) {
  TempDir tmp;
  const json refs = {{"version", 1},
                     {"refs",
                      {{".zgroup", R"({"zarr_format": 2})"},
                       {"x/.zarray", json({{"zarr_format", 2}, {"shape", {2}}, {"chunks", {2}}, {"dtype", "<i2"},
                                           {"compressor", nullptr}, {"filters", nullptr}, {"fill_value", nullptr},
                                           {"order", "C"}})
                                         .dump()},
                       {"x/.zattrs", R"({"_ARRAY_DIMENSIONS": ["i"]})"},
                       {"x/0", "base64:BwAJAA=="}}}};  // int16 7, 9
  test::write_file(tmp.path() / "refs.json", refs.dump());
  for (const std::string& url : {(tmp.path() / "refs.json").string(), "reference://" + (tmp.path() / "refs.json").string()}) {
    const NDArray x = open(url)["x"].read();
    const auto v = x.values<std::int16_t>();
    EXPECT_EQ(std::vector<std::int16_t>(v.begin(), v.end()), (std::vector<std::int16_t>{7, 9})) << url;
  }
  // The reference set's store is not a plain store.
  const auto m = message_of<UsageError>([&] { open_location("reference://" + (tmp.path() / "refs.json").string()); });
  EXPECT_NE(m.find("a format rather than a store"), std::string::npos) << m;
  // A JSON file that is none says so.
  test::write_file(tmp.path() / "plain.json", R"({"a": 1})");
  const auto n = message_of<NotFound>([&] { open((tmp.path() / "plain.json").string()); });
  EXPECT_NE(n.find("not a kerchunk reference set"), std::string::npos) << n;
}

TEST(FormatRegistry, GdalFilesAreRecognisedBySuffixAndSignature) {
  TempDir tmp;
  std::string skip;
  const std::string nc = test::make_netcdf4_fixture(tmp.path(), skip);
  if (nc.empty()) GTEST_SKIP() << skip;
  const auto by_suffix = open(nc).data_var_names();
  EXPECT_FALSE(by_suffix.empty());
  std::filesystem::copy_file(nc, tmp.path() / "no_suffix");
  EXPECT_EQ(open((tmp.path() / "no_suffix").string()).data_var_names(), by_suffix);
  OpenOptions o;
  o.format_options = {{"consolidated", true}};
  const auto m = message_of<UsageError>([&] { open(nc, o); });
  EXPECT_NE(m.find("format option 'consolidated' = true applies to Zarr stores only"), std::string::npos) << m;
}

// engine= names any registered format: it is used without recognition.
TEST(FormatRegistry, AnEngineNamesAnyRegisteredFormat) {
  TempDir tmp;
  test::write_file(tmp.path() / "refs.txt",  // a reference set without the .json suffix
                   R"({"version": 1, "refs": {".zgroup": "{\"zarr_format\": 2}", ".zattrs": "{\"title\": \"r\"}"}})");
  OpenOptions o;
  o.engine = "kerchunk";
  EXPECT_EQ(open((tmp.path() / "refs.txt").string(), o).attrs().at("title"), "r");
  o.engine = "zarr";
  EXPECT_EQ(open(kSample, o).data_var_names(), open(kSample).data_var_names());
  o.engine = "icechunk";
  const auto m = message_of<NotFound>([&] { open(kSample, o); });
  EXPECT_NE(m.find("no Icechunk repository"), std::string::npos) << m;
  LAZYCUBE_REQUIRE_SHARED_DATA(shared);
  const auto repo = shared / "icechunk-fixtures" / "test-repo-v2";
  if (!std::filesystem::exists(repo)) GTEST_SKIP() << "Icechunk fixtures not found: " << repo.string();
  OpenOptions g;
  g.group = "group1/small_chunks";
  const auto names = open(repo.string(), g).data_var_names();
  g.engine = "icechunk";
  EXPECT_EQ(open(repo.string(), g).data_var_names(), names);
}

// A remote open through the persistent cache: the first sends the sniffing round (HEADs of the
// probes in one go, then the objects that exist); a second one, the server having declared its
// answers fresh (404s included), sends nothing at all.
TEST(FormatRegistry, RemoteSniffingIsKeptByThePersistentCache) {
  LAZYCUBE_REQUIRE_NGINX();
  TempDir cache, www;  // the server writes its log marks into its root: a copy, not the repository
  std::filesystem::copy(kSample, www.path() / "era5_sample_v2.zarr", std::filesystem::copy_options::recursive);
  test::NginxServer server(www.path());
  server.set_faults("cache_control = 'public, max-age=3600'");
  OpenOptions o;
  o.storage_options = {{"cache_dir", cache.str()}};
  const std::string url = server.url() + "/era5_sample_v2.zarr";
  const auto names = open(url, o).data_var_names();
  const std::string first = server.settled_access_log();
  EXPECT_NE(first.find("\"HEAD /era5_sample_v2.zarr/repo "), std::string::npos) << first;
  EXPECT_NE(first.find("\"HEAD /era5_sample_v2.zarr/zarr.json "), std::string::npos) << first;
  EXPECT_EQ(open(url, o).data_var_names(), names);
  // Not one request (but the log's own settle marks).
  const auto without_marks = [](const std::string& log) {
    std::string out;
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);)
      if (line.find("/settle-mark-") == std::string::npos) out += line + "\n";
    return out;
  };
  EXPECT_EQ(without_marks(server.settled_access_log()), without_marks(first));
}

}  // namespace
}  // namespace lazycube
