// Reads every array under ../shared/data/zarr-fixtures (written by zarr-python 2/3 and zarrs)
// and compares it value for value with its expected .npy (see EXPECTED.md there).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "zarr/array_metadata.hpp"
#include "zarr/zarr_array.hpp"
#include "util/text.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "test_support.hpp"

namespace lazycube {
namespace {

namespace fs = std::filesystem;
using test::Npy;

struct Fixture {
  std::string rel;       // path relative to zarr-fixtures
  std::string expected;  // expected .npy file name
  bool v2_side;          // read through the .zarray even if a zarr.json exists
};

std::string expected_name(const std::string& rel) {
  if (rel.starts_with("zarr_implementations/")) return "astronaut.npy";
  if (rel.find("cities") != std::string::npos) return "cities.npy";
  std::string name = rel;
  if (name.ends_with(".zarr")) name.resize(name.size() - 5);
  std::replace(name.begin(), name.end(), '/', '-');
  std::string out;
  for (char c : name) {
    if (c == '[') out.push_back('_');
    else if (c != ']') out.push_back(c);
  }
  return out + ".npy";
}

// Every array node in the fixture tree; folders with both zarr.json and .zarray appear twice.
std::vector<Fixture> discover() {
  std::vector<Fixture> out;
  const auto data = test::shared_data_dir();
  if (data.empty()) return out;
  const fs::path root = data / "zarr-fixtures";
  if (!fs::exists(root)) return out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    if (!it->is_directory()) continue;
    const fs::path dir = it->path();
    const std::string rel = fs::relative(dir, root).generic_string();
    if (fs::exists(dir / "zarr.json") && test::read_file(dir / "zarr.json").find("\"array\"") != std::string::npos)
      out.push_back({rel, expected_name(rel), false});
    if (fs::exists(dir / ".zarray")) {
      out.push_back({rel, expected_name(rel), fs::exists(dir / "zarr.json")});
    }
  }
  std::sort(out.begin(), out.end(), [](const Fixture& a, const Fixture& b) {
    return a.rel != b.rel ? a.rel < b.rel : a.v2_side < b.v2_side;
  });
  return out;
}

std::string strip_nuls(std::string s) {
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

class ZarrConformance : public ::testing::TestWithParam<Fixture> {};

TEST_P(ZarrConformance, MatchesExpectedValues) {
  const Fixture& f = GetParam();
  const fs::path root = test::shared_data_dir() / "zarr-fixtures";
  const fs::path expected_path = root / "expected" / f.expected;
  ASSERT_TRUE(fs::exists(expected_path)) << expected_path;
  const Npy expected = test::load_npy(expected_path);

  ArrayPtr array;
  auto store = make_file_store((root / f.rel).string());
  if (f.v2_side) {
    auto zarray = nlohmann::json::parse(test::read_file(root / f.rel / ".zarray"));
    auto meta = zarr::parse_v2_array(zarray, nlohmann::json(), f.rel);
    array = std::make_shared<zarr::ZarrArray>(store, "", std::move(meta));
  } else {
    auto h = zarr::Hierarchy::open(open_location((root / f.rel).string()));
    ASSERT_TRUE(h.is_array());
    array = h.array("");
  }
  NDArray got = array->read_all();
  ASSERT_EQ(got.shape, expected.shape) << f.rel;

  const char kind = expected.descr[1];
  if (kind == 'S') {
    // Variable-length strings/bytes stored as NUL-padded fixed width.
    ASSERT_TRUE(got.dtype.is_variable_length()) << got.dtype.name();
    const std::size_t w = expected.itemsize();
    for (std::size_t i = 0; i < got.strings.size(); ++i)
      ASSERT_EQ(got.strings[i], strip_nuls(expected.data.substr(i * w, w))) << f.rel << " element " << i;
  } else if (kind == 'U') {
    const std::size_t w = expected.itemsize();
    if (got.dtype.is_variable_length()) {
      for (std::size_t i = 0; i < got.strings.size(); ++i) {
        std::u32string u(reinterpret_cast<const char32_t*>(expected.data.data() + i * w), w / 4);
        ASSERT_EQ(got.strings[i], utf32_to_utf8(u)) << f.rel << " element " << i;
      }
    } else {
      ASSERT_EQ(got.dtype.kind, DTypeKind::Unicode);
      ASSERT_EQ(got.dtype.itemsize, w);
      ASSERT_EQ(std::string(reinterpret_cast<const char*>(got.data.data()), got.data.size()), expected.data) << f.rel;
    }
  } else {
    EXPECT_EQ(got.dtype.numpy_str(), expected.descr) << f.rel;
    ASSERT_EQ(got.data.size(), expected.data.size()) << f.rel;
    EXPECT_EQ(0, std::memcmp(got.data.data(), expected.data.data(), expected.data.size())) << f.rel;
  }
}

std::string fixture_name(const ::testing::TestParamInfo<Fixture>& info) {
  std::string n = info.param.rel + (info.param.v2_side ? "_v2meta" : "");
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(SharedFixtures, ZarrConformance, ::testing::ValuesIn(discover()), fixture_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ZarrConformance);

TEST(ZarrConformanceData, FixturesPresent) {
  LAZYCUBE_REQUIRE_SHARED_DATA(dir);
  // 40+ arrays in the fixture set; a short count means discovery broke.
  EXPECT_GE(discover().size(), 60u);
}

}  // namespace
}  // namespace lazycube
