// detail::visit_dtype: the one map from a DataType to the C++ type of its elements (every layer
// dispatches through it), float16 as lazycube::float16, and the dtype sets callers narrow it to.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <typeindex>
#include <vector>

#include "lazycube/dtype.hpp"
#include "util/element_cast.hpp"
#include "util/half.hpp"

using lazycube::DataType;
using lazycube::float16;
namespace detail = lazycube::detail;
namespace dtypes = lazycube::detail::dtype_set;

namespace {

struct Seen {
  bool called = false;
  std::type_index type = typeid(void);
  std::size_t size = 0;
  bool is_signed = false;
  bool is_float = false;
};

template <unsigned Accept = dtypes::kAll>
Seen visit(const DataType& t, bool* returned = nullptr) {
  Seen s;
  const bool r = detail::visit_dtype<Accept>(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    s.called = true;
    s.type = typeid(T);
    s.size = sizeof(T);
    s.is_signed = std::is_signed_v<T>;
    s.is_float = std::is_floating_point_v<T>;
  });
  if (returned) *returned = r;
  EXPECT_EQ(r, s.called) << t.name();
  return s;
}

}  // namespace

TEST(DTypeDispatch, EveryFixedSizeNumberMapsToItsCppType) {
  struct Case {
    DataType dtype;
    std::type_index type;
    bool is_signed, is_float;
  };
  const std::vector<Case> cases = {
      {DataType::boolean(), typeid(bool), false, false},
      {DataType::int_(1), typeid(std::int8_t), true, false},
      {DataType::int_(2), typeid(std::int16_t), true, false},
      {DataType::int_(4), typeid(std::int32_t), true, false},
      {DataType::int_(8), typeid(std::int64_t), true, false},
      {DataType::uint(1), typeid(std::uint8_t), false, false},
      {DataType::uint(2), typeid(std::uint16_t), false, false},
      {DataType::uint(4), typeid(std::uint32_t), false, false},
      {DataType::uint(8), typeid(std::uint64_t), false, false},
      {DataType::float_(2), typeid(float16), false, false},
      {DataType::float_(4), typeid(float), true, true},
      {DataType::float_(8), typeid(double), true, true},
      {DataType::datetime("ns"), typeid(std::int64_t), true, false},
      {DataType::datetime("s", 10), typeid(std::int64_t), true, false},
      {DataType::timedelta("ms"), typeid(std::int64_t), true, false},
  };
  for (const auto& c : cases) {
    bool returned = false;
    const Seen s = visit(c.dtype, &returned);
    EXPECT_TRUE(returned) << c.dtype.name();
    EXPECT_TRUE(s.type == c.type) << c.dtype.name() << " visited as " << s.type.name();
    EXPECT_EQ(s.size, c.dtype.itemsize) << c.dtype.name();
    EXPECT_EQ(s.is_signed, c.is_signed) << c.dtype.name();
    EXPECT_EQ(s.is_float, c.is_float) << c.dtype.name();
    EXPECT_TRUE(detail::has_element_type(c.dtype)) << c.dtype.name();
  }
}

TEST(DTypeDispatch, RefusesDTypesWithoutAnElementType) {
  const std::vector<DataType> refused = {
      DataType::complex(8),  DataType::complex(16), DataType::bytes(4),     DataType::unicode(3),
      DataType::string(),    DataType::vlen_bytes(),
      // malformed sizes (a structured or extended type a reader might describe) find no type
      DataType::int_(3),     DataType::uint(16),    DataType::float_(16),   DataType::float_(1),
      DataType{lazycube::DTypeKind::Bool, 2, {}, 1},
      DataType{lazycube::DTypeKind::DateTime, 4, "ns", 1},
  };
  for (const auto& t : refused) {
    bool returned = true;
    const Seen s = visit(t, &returned);
    EXPECT_FALSE(returned) << t.name();
    EXPECT_FALSE(s.called) << t.name();
    EXPECT_FALSE(detail::has_element_type(t)) << t.name();
  }
}

TEST(DTypeDispatch, ASubsetVisitsOnlyItsDTypes) {
  // A visitor that computes in C++ arithmetic leaves float16 out: float16 is refused, and the
  // visitor is never instantiated with lazycube::float16.
  double sum = 0;
  const auto add = [&](auto tag) {
    using T = typename decltype(tag)::type;
    sum += static_cast<double>(T{1}) + 1.0;
  };
  EXPECT_FALSE(detail::visit_dtype<dtypes::kNumeric>(DataType::float_(2), add));
  EXPECT_TRUE(detail::visit_dtype<dtypes::kNumeric>(DataType::float_(4), add));
  EXPECT_EQ(sum, 2.0);

  EXPECT_TRUE(detail::has_element_type<dtypes::kFloat>(DataType::float_(8)));
  EXPECT_FALSE(detail::has_element_type<dtypes::kFloat>(DataType::float_(2)));
  EXPECT_FALSE(detail::has_element_type<dtypes::kFloat>(DataType::int_(4)));
  EXPECT_TRUE(detail::has_element_type<dtypes::kHalf>(DataType::float_(2)));
  EXPECT_FALSE(detail::has_element_type<dtypes::kHalf>(DataType::float_(4)));
  EXPECT_TRUE(detail::has_element_type<dtypes::kInteger>(DataType::uint(8)));
  EXPECT_FALSE(detail::has_element_type<dtypes::kInteger>(DataType::boolean()));
  EXPECT_FALSE(detail::has_element_type<dtypes::kInteger>(DataType::datetime("ns")));
  EXPECT_TRUE(detail::has_element_type<dtypes::kTime>(DataType::timedelta("s")));
  EXPECT_FALSE(detail::has_element_type<dtypes::kTime>(DataType::int_(8)));
  EXPECT_TRUE(detail::has_element_type<dtypes::kSigned>(DataType::int_(2)));
  EXPECT_FALSE(detail::has_element_type<dtypes::kSigned>(DataType::uint(2)));
  EXPECT_TRUE(detail::has_element_type<dtypes::kUnsigned>(DataType::uint(2)));
  EXPECT_TRUE(detail::has_element_type<dtypes::kBool>(DataType::boolean()));
  EXPECT_FALSE(detail::has_element_type<dtypes::kReal>(DataType::boolean()));
  EXPECT_FALSE(detail::has_element_type<dtypes::kReal>(DataType::float_(2)));
  EXPECT_TRUE(detail::has_element_type<dtypes::kAll>(DataType::float_(2)));
  EXPECT_FALSE(detail::has_element_type<dtypes::kAll>(DataType::complex(8)));
}

TEST(DTypeDispatch, Float16ElementsReadAsTheirValue) {
  // 1.5, -2, 65504 (max), a subnormal and NaN as stored binary16 bits.
  const std::vector<std::uint16_t> bits = {0x3e00, 0xc000, 0x7bff, 0x0001, 0x7e00};
  std::vector<std::byte> raw(bits.size() * 2);
  std::memcpy(raw.data(), bits.data(), raw.size());
  std::vector<double> got;
  ASSERT_TRUE(detail::visit_dtype(DataType::float_(2), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (std::size_t i = 0; i < bits.size(); ++i) got.push_back(detail::as_double(detail::load_element<T>(raw.data(), i)));
  }));
  ASSERT_EQ(got.size(), bits.size());
  EXPECT_EQ(got[0], 1.5);
  EXPECT_EQ(got[1], -2.0);
  EXPECT_EQ(got[2], 65504.0);
  EXPECT_EQ(got[3], 0x1p-24);
  EXPECT_TRUE(std::isnan(got[4]));

  // And written back: the same bits.
  std::vector<std::byte> out(raw.size());
  ASSERT_TRUE(detail::visit_dtype<dtypes::kHalf>(DataType::float_(2), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (std::size_t i = 0; i < got.size(); ++i) detail::store_element<T>(out.data(), i, lazycube::to_float16(static_cast<float>(got[i])));
  }));
  EXPECT_EQ(std::memcmp(out.data(), raw.data(), raw.size()), 0);
}

TEST(DTypeDispatch, AsDoubleOfEveryElementType) {
  EXPECT_EQ(detail::as_double(true), 1.0);
  EXPECT_EQ(detail::as_double(std::int8_t{-128}), -128.0);
  EXPECT_EQ(detail::as_double(std::uint64_t{1} << 63), 0x1p63);
  EXPECT_EQ(detail::as_double(0.25f), 0.25);
  EXPECT_EQ(detail::as_double(float16{0x3c00}), 1.0);
}
