// ForecastSpec / ForecastSampler (include/lazycube/batch/forecast.hpp) on an
// in-memory dataset whose values encode their position: durations and the document's errors,
// anchors by time value over a gap, inputs and targets at their offsets, rollout, missing
// values (skip / keep / error), and the sampler's footprint for the epoch planner
// (test_epoch_planner.cpp tests the planner itself).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "lazycube/batch/forecast.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/memory_array.hpp"

using namespace lazycube;
using namespace lazycube::batch;

namespace {

constexpr std::int64_t kHour = 3'600'000'000'000;

// time (6-hourly from 2000-01-01, step 3 absent) x y(2) x x(3); value = 1000 * time index in
// the full axis + 10 * y + x; NaN at full time index 7, y=1, x=2.
Dataset forecast_dataset() {
  std::vector<std::int64_t> full;
  for (int i = 0; i < 12; ++i)
    if (i != 3) full.push_back(i);
  auto times = std::make_shared<std::vector<std::int64_t>>();
  auto values = std::make_shared<std::vector<float>>();
  for (auto i : full) {
    times->push_back(946684800LL * 1'000'000'000 + i * 6 * kHour);
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 3; ++x) values->push_back(i == 7 && y == 1 && x == 2 ? NAN : float(1000 * i + 10 * y + x));
  }
  const std::uint64_t T = times->size();
  auto t = std::make_shared<MemoryArray>("time", DataType::datetime("ns"), Shape{T}, std::vector<std::int64_t>{8},
                                         reinterpret_cast<const std::byte*>(times->data()), times,
                                         std::vector<std::string>{"time"}, nlohmann::json::object());
  auto a = std::make_shared<MemoryArray>("a", DataType::float_(4), Shape{T, 2, 3}, std::vector<std::int64_t>{24, 12, 4},
                                         reinterpret_cast<const std::byte*>(values->data()), values,
                                         std::vector<std::string>{"time", "y", "x"}, nlohmann::json::object());
  return Dataset({Variable("time", t, {"time"}, CfDecoding::identity(t->dtype(), t->attrs())),
                  Variable("a", a, {"time", "y", "x"}, CfDecoding::identity(a->dtype(), a->attrs()))},
                 nlohmann::json::object());
}

ForecastSpec spec_of(nlohmann::ordered_json doc) { return ForecastSpec::from_json(doc, {""}); }

std::vector<std::pair<std::string, Dataset>> one_stream() { return {{"", forecast_dataset()}}; }

// Full time index of an anchor (ns).
std::int64_t index_of(std::int64_t t) { return (t - 946684800LL * 1'000'000'000) / (6 * kHour); }

}  // namespace

TEST(ForecastSpec, DurationsInEverySpelling) {
  EXPECT_EQ(parse_duration_ns("6h", "f"), 6 * kHour);
  EXPECT_EQ(parse_duration_ns("-6h", "f"), -6 * kHour);
  EXPECT_EQ(parse_duration_ns("0h", "f"), 0);
  EXPECT_EQ(parse_duration_ns("30min", "f"), kHour / 2);
  EXPECT_EQ(parse_duration_ns("1.5h", "f"), 3 * kHour / 2);
  EXPECT_EQ(parse_duration_ns("1d6h", "f"), 30 * kHour);
  EXPECT_EQ(parse_duration_ns("PT6H", "f"), 6 * kHour);
  EXPECT_EQ(parse_duration_ns("-P1DT12H", "f"), -36 * kHour);
  EXPECT_EQ(parse_duration_ns("90s", "f"), 90'000'000'000);
  EXPECT_EQ(parse_duration_ns("21600000000000ns", "f"), 6 * kHour);
  for (const char* bad : {"", "6", "h", "6 hours ago", "1M", "P1Y", "6x"})
    EXPECT_THROW(parse_duration_ns(bad, "input_offsets[0]"), UsageError) << bad;
  try {
    parse_duration_ns("6x", "input_offsets[1]");
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("input_offsets[1]"), std::string::npos) << e.what();
  }
  for (std::int64_t ns : {6 * kHour, -kHour / 2, 48 * kHour, 7 * 24 * kHour, std::int64_t{1500}})
    EXPECT_EQ(parse_duration_ns(format_duration(ns), "f"), ns) << format_duration(ns);
}

TEST(ForecastSpec, DocumentRoundTripsAndNamesBadFields) {
  const ForecastSpec s = spec_of({{"inputs", {"a"}}, {"targets", "a"}, {"input_offsets", {"-6h", "0h"}},
                                  {"target_offsets", {"6h", "12h"}}, {"anchors", "2000-01-01/2000-01-02T06"},
                                  {"anchor_step", "6h"}, {"missing", "keep"}});
  EXPECT_EQ(s.input_offsets, (std::vector<std::int64_t>{-6 * kHour, 0}));
  ASSERT_EQ(s.anchors.size(), 1u);
  EXPECT_EQ(*s.anchors[0].end - *s.anchors[0].start, 30 * kHour);
  const ForecastSpec again = ForecastSpec::from_json(s.to_json(), {""});
  EXPECT_EQ(again.to_json(), s.to_json());
  const std::vector<std::pair<nlohmann::ordered_json, std::string>> bad = {
      {{{"inputs", {"a"}}, {"input_offsets", {"6 hours ago"}}}, "input_offsets[0]"},
      {{{"inputs", {"a"}}, {"missing", "sometimes"}}, "missing"},
      {{{"inputs", {"a"}}, {"anchors", "2000-13-45/2001"}}, "anchors"},
      {{{"inputs", {"a"}}, {"targets", {"a"}}}, "target_offsets"},
      {{{"inputs", {"a"}}, {"input_offsets", {"0h", "0h"}}}, "given twice"},
      {{{"inputs", {{"other", {"a"}}}}}, "other"},
      {{{"inputs", {"a"}}, {"colour", "red"}}, "colour"},
      {{{"targets", {"a"}}, {"target_offsets", {"6h"}}}, "inputs"}};
  for (const auto& [doc, field] : bad) {
    try {
      spec_of(doc);
      ADD_FAILURE() << doc.dump();
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
}

TEST(ForecastSampler, AnchorsByValueAndFieldsAtTheirOffsets) {
  // inputs at -6h and 0h, targets at +6h and +12h: anchors need full indices i-1 .. i+2, none 3.
  ForecastRuntime rt;
  rt.index_dir = "off";
  ForecastSampler s(one_stream(),
                    spec_of({{"inputs", {"a"}}, {"targets", {"a"}}, {"input_offsets", {"-6h", "0h"}},
                             {"target_offsets", {"6h", "12h"}}, {"missing", "skip"}}),
                    rt);
  std::vector<std::int64_t> got;
  for (auto t : s.anchor_times()) got.push_back(index_of(t));
  // 0: -6h outside; 1..5 hit the gap at 3 or the NaN at 7 via 5..8; 10, 11: past the end
  EXPECT_EQ(got, (std::vector<std::int64_t>{9}));
  EXPECT_EQ(s.excluded().out_of_range, 3u);
  EXPECT_EQ(s.excluded().time_absent, 4u);
  EXPECT_EQ(s.excluded().missing_values, 4u);

  ForecastSampler keep(one_stream(),
                       spec_of({{"inputs", {"a"}}, {"targets", {"a"}}, {"input_offsets", {"-6h", "0h"}},
                                {"target_offsets", {"6h", "12h"}}, {"missing", "keep"}}),
                       rt);
  ASSERT_EQ(keep.size(), 5u);  // 5, 6, 7, 8, 9
  const std::vector<std::uint64_t> ids = {0, 1};  // anchors 5 and 6: the target of 6 is 7
  const ForecastBatch b = keep.batch(ids, 1);
  ASSERT_EQ(b.streams.size(), 1u);
  const auto& sb = b.streams[0];
  EXPECT_EQ(sb.inputs.shape, (Shape{2, 2, 1, 2, 3}));
  EXPECT_EQ(sb.targets.shape, (Shape{2, 1, 1, 2, 3}));  // rollout 1
  const float* x = reinterpret_cast<const float*>(sb.inputs.data.get());
  const float* y = reinterpret_cast<const float*>(sb.targets.data.get());
  const auto* ymask = reinterpret_cast<const std::uint8_t*>(sb.targets_mask->data.get());
  for (std::size_t k = 0; k < 2; ++k) {
    const std::int64_t i = index_of(b.anchors[k]);
    for (int e = 0; e < 6; ++e) {
      const float off = float(10 * (e / 3) + e % 3);
      EXPECT_EQ(x[k * 12 + e], 1000 * (i - 1) + off);
      EXPECT_EQ(x[k * 12 + 6 + e], 1000 * i + off);
      if (i + 1 == 7 && e == 5) {
        EXPECT_TRUE(std::isnan(y[k * 6 + e]));
        EXPECT_EQ(ymask[k * 6 + e], 0);
      } else {
        EXPECT_EQ(y[k * 6 + e], 1000 * (i + 1) + off);
        EXPECT_EQ(ymask[k * 6 + e], 1);
      }
    }
  }
  EXPECT_THROW(keep.batch(ids, 3), UsageError);
  // an empty batch (a rank's share of an epoch's last round can be empty): arrays of 0 samples
  const ForecastBatch none = keep.batch(std::vector<std::uint64_t>{}, 0);
  ASSERT_EQ(none.streams.size(), 1u);
  EXPECT_EQ(none.streams[0].inputs.shape, (Shape{0, 2, 1, 2, 3}));
  EXPECT_EQ(none.streams[0].targets.shape, (Shape{0, 2, 1, 2, 3}));

  ForecastSampler error(one_stream(),
                        spec_of({{"inputs", {"a"}}, {"input_offsets", {"0h"}}, {"missing", "error"}}), rt);
  const auto at7 = std::find_if(error.anchor_times().begin(), error.anchor_times().end(),
                                [](std::int64_t t) { return index_of(t) == 7; }) - error.anchor_times().begin();
  const std::vector<std::uint64_t> bad = {static_cast<std::uint64_t>(at7)};
  try {
    error.batch(bad);
    ADD_FAILURE() << "no MissingDataError";
  } catch (const MissingDataError& e) {
    EXPECT_NE(std::string(e.what()).find("'a'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("2000-01-02T18:00:00"), std::string::npos) << e.what();
  }
}

TEST(ForecastSampler, ErrorsNameWhatIsWrong) {
  ForecastRuntime rt;
  rt.index_dir = "off";
  auto message = [&](nlohmann::ordered_json doc) -> std::string {
    try {
      ForecastSampler s(one_stream(), spec_of(doc), rt);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message({{"inputs", {"b"}}}).find("'b'"), std::string::npos);
  EXPECT_NE(message({{"inputs", {"a"}}, {"forcings", {"moon_phase"}}}).find("moon_phase"), std::string::npos);
  EXPECT_NE(message({{"inputs", {"a"}}, {"anchors", "1990-01-01/1990-02-01"}}).find("no anchor is a sample"),
            std::string::npos);
  EXPECT_NE(message({{"inputs", {"a"}}, {"time_dim", "x"}}).find("time dim 'x'"), std::string::npos);
}

