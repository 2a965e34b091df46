// Reading Zarr through kerchunk references on local files: inline metadata, byte ranges of a
// data file, gen entries, sub-ranges, listing; and the access policy: targets outside the
// reference file's directory (/etc/passwd, ../ escapes, sibling prefixes, symlinks, other
// schemes) are refused with a message naming the key, the target and the allowed prefixes;
// allowed_prefixes widens the policy.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/refs/references.hpp"
#include "lazycube/store/store.hpp"
#include "util/text.hpp"
#include "test_support.hpp"
#include "read_helpers.hpp"

using namespace lazycube;
using namespace lazycube::test;
using nlohmann::json;

namespace {

constexpr std::size_t kHeader = 13;  // bytes of unrelated data before the first chunk

// data.bin: 13 header bytes, then x[0:4] and x[4:8] as little-endian float32 chunks.
std::vector<float> write_data_file(const fs::path& path) {
  std::vector<float> x{1.5f, -2.f, 3.25f, 4.f, 5.f, 6.5f, -7.f, 8.f};
  std::string bytes(kHeader, 'H');
  bytes.append(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float));
  write_file(path, bytes);
  return x;
}

json metadata_refs() {
  return {{".zgroup", R"({"zarr_format": 2})"},
          {".zattrs", R"({"title": "refs"})"},
          {"x/.zarray", R"({"chunks": [4], "compressor": null, "dtype": "<f4", "fill_value": 0.0,
                            "filters": null, "order": "C", "shape": [8], "zarr_format": 2})"},
          {"x/.zattrs", R"({"_ARRAY_DIMENSIONS": ["x"]})"}};
}

// A v1 reference set whose x chunks point at `target` (as written in the file).
json refs_to(const std::string& target) {
  json refs = metadata_refs();
  refs["x/0"] = json::array({target, kHeader, 16});
  refs["x/1"] = json::array({target, kHeader + 16, 16});
  return {{"version", 1}, {"refs", refs}};
}

}  // namespace

TEST(ReferenceStore, ReadsRangesAndInlineMetadata) {
  TempDir dir;
  const auto x = write_data_file(dir.path() / "data.bin");
  write_file(dir.path() / "refs.json", refs_to("data.bin").dump());
  EXPECT_EQ(read_x((dir.path() / "refs.json").string()), x);              // detected by content
  EXPECT_EQ(read_x("reference://" + (dir.path() / "refs.json").string()), x);  // explicit form
  EXPECT_EQ(read_x("file://" + (dir.path() / "refs.json").string()), x);

  const Location loc = refs::open_references((dir.path() / "refs.json").string());
  EXPECT_EQ(loc.store->list_dir(""), (std::vector<std::string>{".zattrs", ".zgroup", "x"}));
  EXPECT_EQ(loc.store->list("x"), (std::vector<std::string>{"x/.zarray", "x/.zattrs", "x/0", "x/1"}));
  EXPECT_EQ(loc.store->size("x/1"), 16u);
  EXPECT_FALSE(loc.store->get("x/7").has_value());  // a missing key reads as the fill value
  // A sub-range composes with the reference's range: bytes 4..7 of chunk 1 are x[5].
  auto part = loc.store->get("x/1", ByteRange::range(4, 4));
  ASSERT_TRUE(part.has_value());
  float v = 0;
  std::memcpy(&v, part->data(), 4);
  EXPECT_EQ(v, x[5]);
  auto tail = loc.store->get("x/0", ByteRange::suffix(4));
  std::memcpy(&v, tail->data(), 4);
  EXPECT_EQ(v, x[3]);
  EXPECT_NE(message_of<StoreError>([&] { loc.store->get("x/0", ByteRange::range(17, 1)); }).find("past the end"),
            std::string::npos);
}

TEST(ReferenceStore, Version0GenAndWholeFileTargets) {
  TempDir dir;
  const auto x = write_data_file(dir.path() / "data.bin");
  // Each chunk as a whole file, named by gen.
  write_file(dir.path() / "part_0.bin", std::string(reinterpret_cast<const char*>(x.data()), 16));
  write_file(dir.path() / "part_1.bin", std::string(reinterpret_cast<const char*>(x.data() + 4), 16));
  json v1 = {{"version", 1},
             {"templates", {{"p", "part"}}},
             {"refs", metadata_refs()},
             {"gen", json::array({{{"key", "x/{{i}}"}, {"url", "{{p}}_{{i}}.bin"}, {"dimensions", {{"i", {{"stop", 2}}}}}}})}};
  write_file(dir.path() / "gen.json", v1.dump());
  EXPECT_EQ(read_x((dir.path() / "gen.json").string()), x);
  // Version 0 (a bare key map) with a base64 chunk and a range.
  json v0 = metadata_refs();
  v0["x/0"] = "base64:" + base64_encode(std::string(reinterpret_cast<const char*>(x.data()), 16));
  v0["x/1"] = json::array({"data.bin", kHeader + 16, 16});
  write_file(dir.path() / "v0.json", v0.dump());
  EXPECT_EQ(read_x((dir.path() / "v0.json").string()), x);
}

TEST(ReferenceStore, TruncatedOrMissingTargetsAreErrors) {
  TempDir dir;
  write_data_file(dir.path() / "data.bin");
  json r = refs_to("data.bin");
  r["refs"]["x/1"] = json::array({"data.bin", kHeader + 16, 4000});
  write_file(dir.path() / "short.json", r.dump());
  EXPECT_NE(refused((dir.path() / "short.json").string()).find("shorter than the reference says"), std::string::npos);
  write_file(dir.path() / "missing.json", refs_to("nope.bin").dump());
  const std::string m = refused((dir.path() / "missing.json").string());
  EXPECT_NE(m.find("key 'x/"), std::string::npos) << m;
  EXPECT_NE(m.find("nope.bin"), std::string::npos) << m;
  // A .json file that is no reference set, and parquet references, say so.
  write_file(dir.path() / "plain.json", R"({"a": 1})");
  EXPECT_NE(message_of<NotFound>([&] { refs::open_references((dir.path() / "plain.json").string()); })
                .find("not a kerchunk reference set"),
            std::string::npos);
  fs::create_directories(dir.path() / "refs.parq" / "x");
  write_file(dir.path() / "refs.parq" / ".zmetadata", R"({"metadata": {}, "record_size": 1000})");
  EXPECT_NE(message_of<StoreError>([&] { refs::open_references("reference://" + (dir.path() / "refs.parq").string()); })
                .find("parquet references are not supported in this build"),
            std::string::npos);
}

TEST(ReferenceSecurity, LocalTargetsOutsideTheDirectoryAreRefused) {
  TempDir dir;
  const fs::path a = dir.path() / "data" / "a", ab = dir.path() / "data" / "ab";
  fs::create_directories(a);
  fs::create_directories(ab);
  const auto x = write_data_file(a / "data.bin");
  write_data_file(ab / "data.bin");
  write_data_file(dir.path() / "data" / "secret.bin");
  auto refs_file = [&](const std::string& name, const std::string& target) {
    write_file(a / name, refs_to(target).dump());
    return (a / name).string();
  };
  auto expect_refused = [&](const std::string& url, const std::string& target_text, const StoreOptions& o = {}) {
    const std::string m = refused(url, o);
    EXPECT_NE(m.find("refused"), std::string::npos) << m;
    // Both chunks are read in parallel: either key may be the one reported.
    EXPECT_NE(m.find("key 'x/"), std::string::npos) << m;
    EXPECT_NE(m.find(target_text), std::string::npos) << m;
    EXPECT_NE(m.find("allowed prefixes: " + a.string()), std::string::npos) << m;
  };
  expect_refused(refs_file("passwd.json", "/etc/passwd"), "'/etc/passwd'");
  expect_refused(refs_file("passwd_url.json", "file:///etc/passwd"), "'/etc/passwd'");
  expect_refused(refs_file("dotdot.json", "../secret.bin"), (dir.path() / "data" / "secret.bin").string());
  expect_refused(refs_file("deep.json", "sub/../../secret.bin"), (dir.path() / "data" / "secret.bin").string());
  expect_refused(refs_file("pct.json", "file://" + a.string() + "/%2e%2e/secret.bin"),
                 (dir.path() / "data" / "secret.bin").string());
  // /data/ab is not under /data/a: prefixes match whole path components.
  expect_refused(refs_file("sibling.json", (ab / "data.bin").string()), (ab / "data.bin").string());
  // A symlink inside the directory pointing out of it.
  fs::create_symlink(dir.path() / "data" / "secret.bin", a / "link.bin");
  expect_refused(refs_file("symlink.json", "link.bin"), "real path '" + (dir.path() / "data" / "secret.bin").string());
  fs::create_directory_symlink(dir.path() / "data", a / "up");
  expect_refused(refs_file("dirlink.json", "up/secret.bin"), "real path");
  // Other schemes and malformed targets.
  expect_refused(refs_file("http.json", "http://127.0.0.1:9/data.bin"), "'http://127.0.0.1:9/data.bin'");
  EXPECT_NE(refused(refs_file("nul.json", std::string("data.bin\0/../../secret.bin", 25))).find("NUL byte"),
            std::string::npos);
  EXPECT_NE(refused(refs_file("ftp.json", "ftp://host/x")).find("unsupported scheme 'ftp'"), std::string::npos);
  EXPECT_NE(refused(refs_file("root.json", "/../../etc/passwd")).find("climbs above the root"), std::string::npos);

  // allowed_prefixes widens the policy: the sibling directory, then everything ("*").
  const std::string sibling = refs_file("sibling2.json", (ab / "data.bin").string());
  EXPECT_EQ(read_x(sibling, {{"allowed_prefixes", ab.string()}}), x);
  EXPECT_EQ(read_x(sibling, {{"allowed_prefixes", "/nowhere, " + ab.string() + "/"}}), x);
  expect_refused(sibling, (ab / "data.bin").string(), {{"allowed_prefixes", (dir.path() / "data" / "a").string() + "b/x"}});
  EXPECT_EQ(read_x(refs_file("dotdot2.json", "../secret.bin"), {{"allowed_prefixes", "*"}}), x);
  // The symlink is allowed once its real directory is.
  EXPECT_EQ(read_x(refs_file("symlink2.json", "link.bin"), {{"allowed_prefixes", (dir.path() / "data").string()}}), x);
}

TEST(ReferenceSecurity, SymlinkedReferenceDirectoryKeepsWorking) {
  // The reference file reached through a symlinked directory: its own targets stay allowed.
  TempDir dir;
  fs::create_directories(dir.path() / "real");
  const auto x = write_data_file(dir.path() / "real" / "data.bin");
  write_file(dir.path() / "real" / "refs.json", refs_to("data.bin").dump());
  fs::create_directory_symlink(dir.path() / "real", dir.path() / "alias");
  EXPECT_EQ(read_x((dir.path() / "alias" / "refs.json").string()), x);
}
