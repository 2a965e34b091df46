// .npy writing as numpy.save does it, and reading back.
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

#include "util/npy.hpp"

using namespace lazycube;

namespace {

NDArray floats(Shape shape, std::vector<float> v) {
  NDArray a;
  a.dtype = DataType::float_(4);
  a.shape = std::move(shape);
  a.data = Buffer(v.size() * 4);
  std::memcpy(a.data.data(), v.data(), a.data.size());
  return a;
}

}  // namespace

TEST(NpyHeader, MatchesNumpyLayout) {
  const std::string h = npy::header("<f4", {2, 3});
  ASSERT_EQ(h.size() % 64, 0u);
  EXPECT_EQ(h.substr(0, 6), "\x93NUMPY");
  EXPECT_EQ(h[6], '\x01');
  EXPECT_EQ(h.back(), '\n');
  EXPECT_NE(h.find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"),
            std::string::npos);
  EXPECT_NE(npy::header("|b1", {5}).find("'shape': (5,)"), std::string::npos);
  EXPECT_NE(npy::header("<f8", {}).find("'shape': ()"), std::string::npos);
}

TEST(NpyRoundTrip, FixedSizeValues) {
  std::stringstream s;
  npy::write(s, floats({2, 2}, {1, 2, 3, 4}));
  const npy::File f = npy::read(s);
  EXPECT_EQ(f.descr, "<f4");
  EXPECT_EQ(f.shape, (Shape{2, 2}));
  ASSERT_EQ(f.data.size(), 16u);
  float v[4];
  std::memcpy(v, f.data.data(), 16);
  EXPECT_EQ(v[3], 4.0f);
}

TEST(NpyRoundTrip, StringsBecomeFixedWidthUnicode) {
  NDArray a;
  a.dtype = DataType::string();
  a.shape = {3};
  a.strings = {"ab", "\xC3\xA9t\xC3\xA9", ""};  // "été" is 3 code points
  std::stringstream s;
  npy::write(s, a);
  const npy::File f = npy::read(s);
  EXPECT_EQ(f.descr, "<U3");
  ASSERT_EQ(f.data.size(), 3u * 3 * 4);
  char32_t c;
  std::memcpy(&c, f.data.data() + 12, 4);
  EXPECT_EQ(c, U'\u00e9');
  NDArray empty;
  empty.dtype = DataType::string();
  empty.shape = {1};
  empty.strings = {""};
  EXPECT_EQ(npy::descr_of(empty), "<U1");
  NDArray bytes;
  bytes.dtype = DataType::vlen_bytes();
  bytes.shape = {2};
  bytes.strings = {"a", "abcd"};
  EXPECT_EQ(npy::descr_of(bytes), "|S4");
}

TEST(NpyDescr, DatetimeAndBool) {
  NDArray a;
  a.dtype = DataType::datetime("ms", 10);
  EXPECT_EQ(npy::descr_of(a), "<M8[10ms]");
  a.dtype = DataType::boolean();
  EXPECT_EQ(npy::descr_of(a), "|b1");
  a.dtype = DataType::complex(8);
  EXPECT_EQ(npy::descr_of(a), "<c8");
}
