// The CPU reference of unpack + normalise (lazycube/adapters/cuda.hpp) on every input dtype,
// and the device functions' "no device" errors. The GPU kernel itself is checked against this
// reference by lazycube_cuda_tests (tests/cuda).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "lazycube/adapters/cuda.hpp"
#include "lazycube/error.hpp"
#include "test_support.hpp"

using lazycube::DataType;
using lazycube::UsageError;
using lazycube::cuda::BatchShape;
using lazycube::cuda::ChannelTransform;
using lazycube::test::message_of;

namespace {

// The documented formula, unfolded, in double, rounded once.
float expected(double raw, const ChannelTransform& t) {
  return static_cast<float>((raw * t.scale + t.offset - t.mean) / t.std);
}

std::vector<float> run(const void* in, const DataType& dtype, const BatchShape& shape,
                       const std::vector<ChannelTransform>& channels) {
  std::vector<float> out(shape.size(), -12345.0f);
  lazycube::cuda::unpack_normalize_host(in, dtype, out.data(), shape, channels);
  return out;
}

// Two samples, two channels, `inner` = values.size(); channel 1 masks values[0] as fill.
template <class T>
void check_dtype(const DataType& dtype, const std::vector<T>& values) {
  SCOPED_TRACE(dtype.name());
  const BatchShape shape{2, 2, values.size()};
  std::vector<T> in;
  for (int k = 0; k < 4; ++k) in.insert(in.end(), values.begin(), values.end());
  std::vector<ChannelTransform> ch(2);
  ch[0].scale = 0.5;
  ch[0].offset = 3.0;
  ch[0].mean = 1.0;
  ch[0].std = 2.0;
  ch[1].scale = 0.01;
  ch[1].offset = -7.0;
  ch[1].fill = static_cast<double>(values[0]);
  ch[1].mean = -2.0;
  ch[1].std = 0.25;
  const auto out = run(in.data(), dtype, shape, ch);
  for (std::uint64_t s = 0; s < 2; ++s)
    for (std::uint64_t c = 0; c < 2; ++c)
      for (std::size_t j = 0; j < values.size(); ++j) {
        const float got = out[(s * 2 + c) * values.size() + j];
        if (c == 1 && values[j] == values[0]) {
          EXPECT_TRUE(std::isnan(got)) << "s" << s << " c" << c << " j" << j;
        } else {
          EXPECT_FLOAT_EQ(got, expected(static_cast<double>(values[j]), ch[c]))
              << "s" << s << " c" << c << " j" << j;
        }
      }
}

}  // namespace

TEST(UnpackNormalizeHost, EveryInputDtype) {
  check_dtype<std::int8_t>(DataType::int_(1), {-128, -1, 0, 1, 127});
  check_dtype<std::uint8_t>(DataType::uint(1), {255, 0, 1, 128});
  check_dtype<std::int16_t>(DataType::int_(2), {-32767, -32768, 0, 12345, 32767});
  check_dtype<std::uint16_t>(DataType::uint(2), {65535, 0, 1, 40000});
  check_dtype<std::int32_t>(DataType::int_(4), {-2147483647 - 1, -5, 0, 2147483647});
  check_dtype<std::uint32_t>(DataType::uint(4), {4294967295u, 0u, 7u, 3000000000u});
  check_dtype<std::int64_t>(DataType::int_(8), {-9000000000LL, 0, 1, 123456789012LL});
  check_dtype<std::uint64_t>(DataType::uint(8), {18000000000000000000ULL, 0, 42});
  check_dtype<float>(DataType::float_(4), {-9999.0f, -1.5f, 0.0f, 3.25e6f});
  check_dtype<double>(DataType::float_(8), {-9999.0, -1e-300, 0.0, 1e15});
}

TEST(UnpackNormalizeHost, FillAndMissingBecomeNaN) {
  const std::vector<std::int16_t> in = {-32767, -1, 0, 5, -32767, -1};
  ChannelTransform t;
  t.scale = 0.5;
  t.offset = 100000.0;
  t.fill = -32767;
  t.missing = -1;
  t.mean = 100000.0;
  t.std = 10.0;
  const auto out = run(in.data(), DataType::int_(2), {1, 1, in.size()}, {t});
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_FLOAT_EQ(out[2], 0.0f);
  EXPECT_FLOAT_EQ(out[3], 0.25f);
  EXPECT_TRUE(std::isnan(out[4]));
  EXPECT_TRUE(std::isnan(out[5]));
}

TEST(UnpackNormalizeHost, FillThatTheDtypeCannotHoldNeverMatches) {
  // -1 must not wrap to 255 for uint8, 0.5 matches no integer, 1e10 is out of int16's range.
  const std::vector<std::uint8_t> u8 = {255, 0};
  ChannelTransform t;
  t.fill = -1.0;
  t.missing = 0.5;
  auto out = run(u8.data(), DataType::uint(1), {1, 1, 2}, {t});
  EXPECT_FLOAT_EQ(out[0], 255.0f);
  EXPECT_FLOAT_EQ(out[1], 0.0f);
  const std::vector<std::int16_t> i16 = {0, 1};
  t.fill = 1e10;
  t.missing = std::numeric_limits<double>::quiet_NaN();
  out = run(i16.data(), DataType::int_(2), {1, 1, 2}, {t});
  EXPECT_FLOAT_EQ(out[0], 0.0f);
  EXPECT_FLOAT_EQ(out[1], 1.0f);
}

TEST(UnpackNormalizeHost, NaNInputsStayNaNAndFloatFillMasks) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> in = {nan, 1.0f, -9999.0f, std::numeric_limits<float>::infinity()};
  ChannelTransform t;
  t.mean = 1.0;
  t.std = 2.0;
  auto out = run(in.data(), DataType::float_(4), {1, 1, 4}, {t});
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_FLOAT_EQ(out[1], 0.0f);
  EXPECT_FLOAT_EQ(out[2], -5000.0f);  // no fill given: an ordinary value
  EXPECT_TRUE(std::isinf(out[3]));
  t.fill = -9999.0;
  out = run(in.data(), DataType::float_(4), {1, 1, 4}, {t});
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_TRUE(std::isnan(out[2]));
  const std::vector<double> d = {std::numeric_limits<double>::quiet_NaN(), 4.0};
  out = run(d.data(), DataType::float_(8), {1, 1, 2}, {t});
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_FLOAT_EQ(out[1], 1.5f);
}

TEST(UnpackNormalizeHost, PerChannelParametersOverManySamples) {
  // Large enough to be split over the thread pool; tasks cut rows in the middle.
  const BatchShape shape{3, 5, 70001};
  std::vector<std::int16_t> in(shape.size());
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> dist(-32768, 32767);
  for (auto& v : in) v = static_cast<std::int16_t>(dist(rng));
  std::vector<ChannelTransform> ch(shape.channels);
  for (std::size_t c = 0; c < ch.size(); ++c) {
    ch[c].scale = 0.1 * static_cast<double>(c + 1);
    ch[c].offset = 1000.0 * static_cast<double>(c);
    ch[c].mean = 500.0 * static_cast<double>(c);
    ch[c].std = 1.0 + static_cast<double>(c);
    if (c % 2 == 1) ch[c].fill = in[c * shape.inner];  // the first value of sample 0's row
  }
  const auto out = run(in.data(), DataType::int_(2), shape, ch);
  std::size_t mismatches = 0, masked = 0;
  for (std::uint64_t i = 0; i < shape.size(); ++i) {
    const auto& t = ch[(i / shape.inner) % shape.channels];
    if (t.fill && in[i] == *t.fill) {
      masked += std::isnan(out[i]) ? 1 : 0;
      mismatches += std::isnan(out[i]) ? 0 : 1;
    } else if (std::abs(out[i] - expected(in[i], t)) > 1e-6f * std::abs(expected(in[i], t))) {
      ++mismatches;
    }
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GE(masked, 2u);  // channels 1 and 3 mask at least their first value
}

TEST(UnpackNormalizeHost, EmptyBatchIsANoOp) {
  ChannelTransform t;
  EXPECT_NO_THROW(lazycube::cuda::unpack_normalize_host(nullptr, DataType::int_(2), nullptr,
                                                        {0, 1, 10}, std::vector{t}));
}

TEST(UnpackNormalizeHost, ValidationErrorsNameTheProblem) {
  const std::vector<std::int16_t> in(4, 0);
  std::vector<float> out(4);
  auto call = [&](const DataType& dtype, std::vector<ChannelTransform> ch, std::uint64_t channels) {
    return message_of<UsageError>([&] {
      lazycube::cuda::unpack_normalize_host(in.data(), dtype, out.data(), {1, channels, 4 / channels}, ch);
    });
  };
  ChannelTransform ok;
  EXPECT_NE(call(DataType::boolean(), {ok}, 1).find("unsupported input dtype bool"), std::string::npos);
  EXPECT_NE(call(DataType::float_(2), {ok}, 1).find("float16"), std::string::npos);
  EXPECT_NE(call(DataType::complex(8), {ok}, 1).find("complex64"), std::string::npos);
  EXPECT_NE(call(DataType::int_(2), {ok}, 2).find("1 channel transforms for 2 channels"), std::string::npos);
  ChannelTransform zero = ok, negative = ok, nan = ok, bad_scale = ok;
  zero.std = 0.0;
  negative.std = -1.0;
  nan.std = std::numeric_limits<double>::quiet_NaN();
  bad_scale.scale = std::numeric_limits<double>::infinity();
  for (const auto& bad : {zero, negative, nan}) {
    const std::string msg = call(DataType::int_(2), {ok, bad}, 2);
    EXPECT_NE(msg.find("channel 1: std must be a finite number > 0"), std::string::npos) << msg;
  }
  EXPECT_NE(call(DataType::int_(2), {bad_scale, ok}, 2).find("channel 0: scale, offset and mean must be finite"),
            std::string::npos);
  EXPECT_NE(message_of<UsageError>([&] {
              lazycube::cuda::unpack_normalize_host(nullptr, DataType::int_(2), out.data(), {1, 1, 4},
                                                    std::vector{ok});
            }).find("null input or output buffer"),
            std::string::npos);
}

TEST(CudaWithoutDevice, DeviceFunctionsThrowUsageErrorWithTheReason) {
  if (lazycube::cuda::device_count() > 0)
    GTEST_SKIP() << "a CUDA device is usable here: the device path is checked by lazycube_cuda_tests";
  const std::string reason = lazycube::cuda::unavailable_reason();
  ASSERT_FALSE(reason.empty());
  if (!lazycube::cuda::built_with_cuda()) {
    EXPECT_EQ(reason, "lazycube was built without CUDA (no nvcc at configure time)");
  }
  const std::string alloc = message_of<UsageError>([] { lazycube::cuda::pinned_allocator(); });
  EXPECT_NE(alloc.find("pinned_allocator"), std::string::npos) << alloc;
  EXPECT_NE(alloc.find(reason), std::string::npos) << alloc;
  const std::vector<std::int16_t> in(4, 0);
  std::vector<float> out(4);
  const std::string dev = message_of<UsageError>([&] {
    lazycube::cuda::unpack_normalize_device(in.data(), DataType::int_(2), out.data(), {1, 1, 4},
                                            std::vector{ChannelTransform{}}, nullptr);
  });
  EXPECT_NE(dev.find("unpack_normalize_device"), std::string::npos) << dev;
  EXPECT_NE(dev.find(reason), std::string::npos) << dev;
}
