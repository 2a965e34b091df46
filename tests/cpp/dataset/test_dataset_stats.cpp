// compute_stats against a direct two-pass reference on random data with NaNs, for several
// choices of kept dims; the JSON form; bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <nlohmann/json.hpp>

#include "dataset_fake_array.hpp"
#include "lazycube/dataset/stats.hpp"
#include "lazycube/error.hpp"

namespace lazycube {
namespace {

using testing::FakeArray;

const Shape kShape{10, 3, 7, 11};
const std::vector<std::string> kDims{"time", "level", "y", "x"};

std::vector<double> random_with_nans(unsigned seed, double nan_fraction) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> value(280.0, 15.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> out(shape_size(kShape));
  for (auto& v : out) v = u(rng) < nan_fraction ? std::nan("") : value(rng);
  return out;
}

Dataset dataset_of(const std::vector<double>& values, Shape chunks) {
  auto arr = FakeArray::of(DataType::float_(8), kShape, values);
  arr->with_dims(kDims).with_chunks(std::move(chunks));
  std::vector<float> f(values.begin(), values.end());
  auto arr32 = FakeArray::of(DataType::float_(4), kShape, f);
  arr32->with_dims(kDims).with_chunks({4, 2, 7, 3});
  return Dataset({Variable("t", arr, kDims, CfDecoding::identity(DataType::float_(8), nlohmann::json::object())),
                  Variable("t32", arr32, kDims, CfDecoding::identity(DataType::float_(4), nlohmann::json::object()))},
                 nlohmann::json::object());
}

// Reference: per kept index, long double two-pass over the values it gathers.
struct Ref {
  std::vector<std::uint64_t> count, nans;
  std::vector<double> mean, std, min, max;
};

Ref reference(const std::vector<double>& values, const std::vector<bool>& kept) {
  std::vector<std::uint64_t> stride(4, 0);
  std::uint64_t k = 1;
  for (int d = 3; d >= 0; --d)
    if (kept[static_cast<std::size_t>(d)]) stride[static_cast<std::size_t>(d)] = k, k *= kShape[static_cast<std::size_t>(d)];
  std::vector<std::vector<double>> groups(k);
  std::vector<std::uint64_t> nans(k, 0);
  std::uint64_t flat = 0;
  for (std::uint64_t a = 0; a < kShape[0]; ++a)
    for (std::uint64_t b = 0; b < kShape[1]; ++b)
      for (std::uint64_t c = 0; c < kShape[2]; ++c)
        for (std::uint64_t d = 0; d < kShape[3]; ++d, ++flat) {
          const std::uint64_t key = a * stride[0] + b * stride[1] + c * stride[2] + d * stride[3];
          if (std::isnan(values[flat])) ++nans[key];
          else groups[key].push_back(values[flat]);
        }
  Ref r;
  for (std::uint64_t i = 0; i < k; ++i) {
    const auto& g = groups[i];
    long double sum = 0, m2 = 0;
    double lo = INFINITY, hi = -INFINITY;
    for (double v : g) sum += v, lo = std::min(lo, v), hi = std::max(hi, v);
    const long double mean = sum / static_cast<long double>(g.size());
    for (double v : g) m2 += (v - mean) * (v - mean);
    r.count.push_back(g.size());
    r.nans.push_back(nans[i]);
    r.mean.push_back(g.empty() ? NAN : static_cast<double>(mean));
    r.std.push_back(g.empty() ? NAN : static_cast<double>(std::sqrt(m2 / static_cast<long double>(g.size()))));
    r.min.push_back(g.empty() ? NAN : lo);
    r.max.push_back(g.empty() ? NAN : hi);
  }
  return r;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << "[" << i << "]";
    } else {
      EXPECT_NEAR(got[i], want[i], 1e-12 * std::abs(want[i]) + 1e-300) << what << "[" << i << "]";
    }
  }
}

TEST(DatasetStats, EqualsTwoPassReferenceForEachKeptDimChoice) {
  const auto values = random_with_nans(7, 0.1);
  const std::vector<std::vector<std::string>> keeps = {{}, {"level"}, {"x"}, {"time", "x"}, {"level", "y"}};
  for (const Shape& chunks : {Shape{3, 1, 4, 5}, Shape{10, 3, 7, 11}, Shape{1, 1, 1, 1}}) {
    const Dataset ds = dataset_of(values, chunks);
    for (const auto& keep : keeps) {
      SCOPED_TRACE(::testing::Message() << "keep " << keep.size() << " dims, chunks " << chunks[0] << ","
                                        << chunks[3]);
      std::vector<bool> kept(4, false);
      for (const auto& d : keep) kept[static_cast<std::size_t>(std::find(kDims.begin(), kDims.end(), d) - kDims.begin())] = true;
      const Ref ref = reference(values, kept);
      StatsOptions options;
      options.variables = {"t"};
      options.keep = keep;
      const auto stats = compute_stats(ds, options);
      ASSERT_EQ(stats.size(), 1u);
      const VariableStats& s = stats[0];
      EXPECT_EQ(s.dims, keep);
      EXPECT_EQ(s.count, ref.count);
      EXPECT_EQ(s.nan_count, ref.nans);
      expect_close(s.mean, ref.mean, "mean");
      expect_close(s.std, ref.std, "std");
      expect_close(s.min, ref.min, "min");
      expect_close(s.max, ref.max, "max");
    }
  }
}

TEST(DatasetStats, DefaultsToEveryNumericDataVariableAndReportsAllNanAsNan) {
  std::vector<double> values(shape_size(kShape), std::nan(""));
  values[5] = 2.0;  // time 0, level 0: one value
  const Dataset ds = dataset_of(values, {3, 1, 4, 5});
  StatsOptions options;
  options.keep = {"time", "level"};
  const auto stats = compute_stats(ds, options);
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].name, "t");
  EXPECT_EQ(stats[1].name, "t32");
  EXPECT_EQ(stats[0].shape, (Shape{10, 3}));
  EXPECT_EQ(stats[0].count[0], 1u);
  EXPECT_EQ(stats[0].mean[0], 2.0);
  EXPECT_EQ(stats[0].std[0], 0.0);
  EXPECT_EQ(stats[0].count[1], 0u);
  EXPECT_EQ(stats[0].nan_count[1], 7u * 11u);
  EXPECT_TRUE(std::isnan(stats[0].mean[1]));
  EXPECT_TRUE(std::isnan(stats[0].min[1]));
}

TEST(DatasetStats, JsonRoundTripKeepsValuesAndNestsKeptDims) {
  const Dataset ds = dataset_of(random_with_nans(3, 0.05), {3, 1, 4, 5});
  StatsOptions options;
  options.keep = {"level", "x"};
  const auto stats = compute_stats(ds, options);
  const auto json = stats_to_json(stats);
  EXPECT_EQ(json["format"], "lazycube-stats");
  EXPECT_EQ(json["ddof"], 0);
  EXPECT_EQ(json["variables"]["t"]["dims"], nlohmann::ordered_json({"level", "x"}));
  ASSERT_EQ(json["variables"]["t"]["mean"].size(), 3u);
  ASSERT_EQ(json["variables"]["t"]["mean"][0].size(), 11u);
  const auto back = stats_from_json(nlohmann::json::parse(json.dump()));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].name, "t");
  EXPECT_EQ(back[0].count, stats[0].count);
  EXPECT_EQ(back[0].mean, stats[0].mean);  // nlohmann writes doubles round-trip exactly
  EXPECT_EQ(back[1].std, stats[1].std);
}

TEST(DatasetStats, IntegerAndBoolVariablesAndDatetimeRefused) {
  const Shape shape{5, 6};
  const std::vector<std::string> dims{"a", "b"};
  std::vector<std::int16_t> ints;
  std::vector<std::uint8_t> flags;
  for (int i = 0; i < 30; ++i) ints.push_back(static_cast<std::int16_t>(i * 37 % 23 - 11)), flags.push_back(i % 3 == 0);
  auto ai = FakeArray::of(DataType::int_(2), shape, ints);
  ai->with_dims(dims).with_chunks({2, 4});
  auto ab = FakeArray::of(DataType::boolean(), shape, flags);
  ab->with_dims(dims).with_chunks({3, 6});
  auto at = FakeArray::of(DataType::datetime("ns"), shape, std::vector<std::int64_t>(30, 0));
  at->with_dims(dims);
  const Dataset ds({Variable("i", ai, dims, CfDecoding::identity(DataType::int_(2), nlohmann::json::object())),
                    Variable("f", ab, dims, CfDecoding::identity(DataType::boolean(), nlohmann::json::object())),
                    Variable("t", at, dims, CfDecoding::identity(DataType::datetime("ns"), nlohmann::json::object()))},
                   nlohmann::json::object());
  StatsOptions options;
  options.keep = {"b"};
  const auto stats = compute_stats(ds, options);  // the datetime variable is left out by default
  ASSERT_EQ(stats.size(), 2u);
  for (std::size_t b = 0; b < 6; ++b) {
    double si = 0, sf = 0, lo = 1e9, hi = -1e9;
    for (std::size_t a = 0; a < 5; ++a) {
      si += ints[a * 6 + b], sf += flags[a * 6 + b];
      lo = std::min<double>(lo, ints[a * 6 + b]), hi = std::max<double>(hi, ints[a * 6 + b]);
    }
    double m2 = 0;
    for (std::size_t a = 0; a < 5; ++a) m2 += (ints[a * 6 + b] - si / 5) * (ints[a * 6 + b] - si / 5);
    EXPECT_NEAR(stats[0].mean[b], si / 5, 1e-12);
    EXPECT_NEAR(stats[0].std[b], std::sqrt(m2 / 5), 1e-12);
    EXPECT_EQ(stats[0].min[b], lo);
    EXPECT_EQ(stats[0].max[b], hi);
    EXPECT_NEAR(stats[1].mean[b], sf / 5, 1e-15);
  }
  options.variables = {"t"};
  EXPECT_THROW(compute_stats(ds, options), UsageError);
}

TEST(DatasetStats, BadInputNamesWhatIsWrong) {
  const Dataset ds = dataset_of(random_with_nans(1, 0.0), {3, 1, 4, 5});
  StatsOptions unknown_dim;
  unknown_dim.keep = {"lev"};
  try {
    compute_stats(ds, unknown_dim);
    FAIL() << "no error";
  } catch (const SelectionError& e) {
    EXPECT_NE(std::string(e.what()).find("'lev'"), std::string::npos) << e.what();
  }
  StatsOptions unknown_var;
  unknown_var.variables = {"nope"};
  EXPECT_THROW(compute_stats(ds, unknown_var), NotFound);
  EXPECT_THROW(stats_from_json(nlohmann::json{{"format", "other"}}), UsageError);
  auto json = nlohmann::json::parse(stats_to_json(compute_stats(ds, {})).dump());
  json["variables"]["t"]["mean"] = {1.0, 2.0};
  try {
    stats_from_json(json);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("variable 't' \"mean\""), std::string::npos) << e.what();
  }
  // counts that are no counts: named, not cast (a negative or huge double to uint64 is UB)
  for (const double bad_count : {-1.0, 2.5, 1e30}) {
    auto counts = nlohmann::json::parse(stats_to_json(compute_stats(ds, {})).dump());
    counts["variables"]["t"]["count"] = bad_count;
    try {
      stats_from_json(counts);
      FAIL() << "no error for count " << bad_count;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("variable 't' \"count\""), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("not a count"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(read_stats_file("/nonexistent/stats.json"), NotFound);
}

}  // namespace
}  // namespace lazycube
