// The HDF5 filter pipelines `lazycube refs` emits decode through our codecs: HDF5's shuffle
// keeps the bytes after the last whole element in place (netCDF-4 runs fletcher32 before
// shuffle, so 8-byte elements carry a 4-byte checksum tail).
#include "test_codec_helpers.hpp"

namespace lazycube::codec::testing {
namespace {

TEST(ReferenceCodecs, ShuffleKeepsATrailingPartialElement) {
  auto shuffle = make_v2_bytes_codec({{"id", "shuffle"}, {"elementsize", 4}}, DataType::int_(4));
  const auto plain = from_hex("0102030405060708aabbcc");
  const Buffer enc = shuffle->encode(view(plain));
  EXPECT_EQ(std::vector<std::byte>(enc.view().begin(), enc.view().end()), from_hex("0105020603070408aabbcc"));
  EXPECT_EQ(decode_unbounded(*shuffle, enc.view()), plain);
}

TEST(ReferenceCodecs, Fletcher32ThenShuffleThenZlibRoundTrips) {
  // Encode order fletcher32 -> shuffle -> zlib, as in the netCDF-4 pipeline; decoding undoes it.
  auto fletcher = make_v2_bytes_codec({{"id", "fletcher32"}}, DataType::float_(8));
  auto shuffle = make_v2_bytes_codec({{"id", "shuffle"}, {"elementsize", 8}}, DataType::float_(8));
  auto zlib = make_v2_bytes_codec({{"id", "zlib"}, {"level", 4}}, DataType::float_(8));
  std::vector<double> values{1.5, -2.25, 3e10, 0.0};
  const ByteView raw(reinterpret_cast<const std::byte*>(values.data()), values.size() * 8);
  const Buffer a = fletcher->encode(raw);
  ASSERT_EQ(a.size(), raw.size() + 4);
  const Buffer b = shuffle->encode(a.view());
  const Buffer c = zlib->encode(b.view());
  const auto d = decode_unbounded(*zlib, c.view());
  const auto e = decode_unbounded(*shuffle, view(d));
  const auto f = decode_unbounded(*fletcher, view(e));
  ASSERT_EQ(f.size(), raw.size());
  EXPECT_EQ(std::memcmp(f.data(), raw.data(), raw.size()), 0);
}

}  // namespace
}  // namespace lazycube::codec::testing
