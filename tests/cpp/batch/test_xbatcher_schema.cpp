// XbatcherSchema against xbatcher 0.4.0 (../shared/docs/XBATCHER.md §1 and the §4 test
// table): batch counts, patch selectors in order, and the dims/shape/element order of each
// variable. Expected dims and sample levels were produced with xarray 2023.01 (xr.concat,
// Dataset.stack, transpose) on the same fixtures.
#include <gtest/gtest.h>

#include <functional>

#include "lazycube/batch/xbatcher_schema.hpp"
#include "lazycube/error.hpp"
#include "test_support.hpp"

using lazycube::SelectionError;
using lazycube::Shape;
using lazycube::UsageError;
using lazycube::batch::DimSizes;
using lazycube::batch::Patch;
using lazycube::batch::XbatcherConfig;
using lazycube::batch::XbatcherLayout;
using lazycube::batch::XbatcherSchema;
using Dims = std::vector<std::string>;

namespace {

// Fixtures: sample_ds_1d (x=100) and sample_ds_3d (time=10, y=50, x=100); foo and bar span
// every dim in dataset order.
const DimSizes kDs1d = {{"x", 100}};
const DimSizes kDs3d = {{"time", 10}, {"y", 50}, {"x", 100}};
const Dims kVar3d = {"time", "y", "x"};

XbatcherSchema make(const DimSizes& ds, DimSizes input, DimSizes batch = {}, bool concat = false,
                    lazycube::batch::DimOverlaps overlap = {}) {
  XbatcherConfig c;
  c.input_dims = std::move(input);
  c.batch_dims = std::move(batch);
  c.concat_input_dims = concat;
  c.input_overlap = std::move(overlap);
  return XbatcherSchema(ds, c);
}

// {start, count} of dim `dim` in a patch.
std::pair<std::uint64_t, std::uint64_t> slice_of(const Patch& p, const std::string& dim) {
  for (const auto& [name, r] : p) {
    if (name == dim) return {r.start, r.count};
  }
  ADD_FAILURE() << "patch has no dim " << dim;
  return {0, 0};
}

std::pair<std::uint64_t, std::uint64_t> sl(std::uint64_t start, std::uint64_t count) {
  return {start, count};
}

Dims patch_dims(const Patch& p) {
  Dims out;
  for (const auto& e : p) out.push_back(e.first);
  return out;
}

std::vector<std::uint64_t> patch_counts(const XbatcherSchema& s) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t b = 0; b < s.size(); ++b) out.push_back(s.num_patches(b));
  return out;
}

}  // namespace

using lazycube::test::message_of;

// ---- xbatcher test_generators.py ----

TEST(XbatcherSchema, GeneratorLength) {
  for (auto [len, n] : {std::pair{5u, 20u}, std::pair{6u, 16u}}) {
    const auto s = make(kDs1d, {{"x", len}});
    EXPECT_EQ(s.size(), n);
    const auto l = s.layout({"x"}, 0);
    EXPECT_EQ(l.dims, Dims{"x"});
    EXPECT_EQ(l.shape, Shape{len});
  }
}

TEST(XbatcherSchema, GetitemAndOutOfRange) {
  const auto s = make(kDs1d, {{"x", 10}});
  ASSERT_EQ(s.size(), 10u);
  EXPECT_EQ(s.layout({"x"}, 0).shape, Shape{10});
  EXPECT_EQ(s.layout({"x"}, 9).shape, Shape{10});  // bg[-1]
  EXPECT_EQ(message_of<UsageError>([&] { s.patches(9999999); }), "list index out of range");
  EXPECT_EQ(message_of<UsageError>([&] { s.num_patches(10); }), "list index out of range");
  EXPECT_EQ(message_of<UsageError>([&] { s.layout({"x"}, 10); }), "list index out of range");
}

TEST(XbatcherSchema, Batch1dIsOneWindowPerBatch) {
  // test_batch_1d (+ no coordinate: coordinates do not change the selection).
  for (std::uint64_t len : {5u, 10u}) {
    const auto s = make(kDs1d, {{"x", len}});
    ASSERT_EQ(s.size(), 100 / len);
    for (std::uint64_t n = 0; n < s.size(); ++n) {
      const auto p = s.patches(n);
      ASSERT_EQ(p.size(), 1u);
      EXPECT_EQ(slice_of(p[0], "x"), sl(n * len, len));  // isel(x=slice(n*s,(n+1)*s))
    }
    const auto l = s.layout({"x"}, 1);
    EXPECT_TRUE(l.sample_dims.empty());
    EXPECT_EQ(l.source_shape, (Shape{1, len}));
    EXPECT_EQ(l.source_axes, (std::vector<int>{1}));
    EXPECT_TRUE(s.warnings().empty());
  }
}

TEST(XbatcherSchema, Batch1dConcatIsOneBatchOfAllPatches) {
  for (auto [len, n] : {std::pair{5u, 20u}, std::pair{10u, 10u}}) {
    const auto s = make(kDs1d, {{"x", len}}, {}, true);
    ASSERT_EQ(s.size(), 1u);
    const auto p = s.patches(0);
    ASSERT_EQ(p.size(), n);
    EXPECT_EQ(slice_of(p.back(), "x"), sl((n - 1) * len, len));
    const auto l = s.layout({"x"}, 0);
    EXPECT_EQ(l.dims, (Dims{"input_batch", "x_input"}));
    EXPECT_EQ(l.shape, (Shape{n, len}));
    EXPECT_TRUE(l.sample_dims.empty());
    EXPECT_EQ(l.source_shape, (Shape{n, len}));
    EXPECT_EQ(l.source_axes, (std::vector<int>{0, 1}));
  }
}

TEST(XbatcherSchema, Batch1dConcatDuplicateDim) {
  // Regime 4 without overlap: x=100, input 5, batch 10 -> 10 batches of 2 patches.
  const auto s = make(kDs1d, {{"x", 5}}, {{"x", 10}}, true);
  ASSERT_EQ(s.size(), 10u);
  EXPECT_EQ(patch_counts(s), std::vector<std::uint64_t>(10, 2));
  const auto p = s.patches(3);
  EXPECT_EQ(slice_of(p[0], "x"), sl(30ul, 5ul));
  EXPECT_EQ(slice_of(p[1], "x"), sl(35ul, 5ul));
  const auto l = s.layout({"x"}, 3);
  EXPECT_EQ(l.dims, (Dims{"input_batch", "x_input"}));
  EXPECT_EQ(l.shape, (Shape{2, 5}));
  EXPECT_TRUE(s.warnings().empty());
}

TEST(XbatcherSchema, Batch1dOverlap) {
  for (auto [overlap, n] : {std::pair{1, 11u}, std::pair{4, 16u}}) {
    const auto s = make(kDs1d, {{"x", 10}}, {}, false, {{"x", overlap}});
    ASSERT_EQ(s.size(), n);
    const std::uint64_t stride = 10 - overlap;
    for (std::uint64_t b = 0; b < n; ++b) {
      EXPECT_EQ(slice_of(s.patches(b)[0], "x"), sl(b * stride, 10ul));
    }
  }
}

TEST(XbatcherSchema, Batch3d1dInputStacksSample) {
  // {sample: 500, x: s}; isel(x) -> stack(sample=[time, y]) -> transpose(sample, x).
  for (std::uint64_t len : {5u, 10u}) {
    const auto s = make(kDs3d, {{"x", len}});
    ASSERT_EQ(s.size(), 100 / len);
    const auto l = s.layout(kVar3d, 2);
    EXPECT_EQ(l.dims, (Dims{"sample", "x"}));
    EXPECT_EQ(l.shape, (Shape{500, len}));
    EXPECT_EQ(l.sample_dims, (Dims{"time", "y"}));
    EXPECT_EQ(l.source_shape, (Shape{1, 10, 50, len}));
    EXPECT_EQ(l.source_axes, (std::vector<int>{1, 2, 3}));
    EXPECT_EQ(l.expanded_shape, (Shape{10, 50, len}));
    EXPECT_EQ(slice_of(s.patches(2)[0], "x"), sl(2 * len, len));
  }
}

TEST(XbatcherSchema, Batch3d1dInputBatchDimsConcat) {
  // Regime 3: {sample: 200, x_input: 5, y_input: 10}, 5 batches, grouped by time slices.
  const auto s = make(kDs3d, {{"x", 5}, {"y", 10}}, {{"time", 2}}, true);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(patch_counts(s), std::vector<std::uint64_t>(5, 100));
  const auto p = s.patches(3);
  EXPECT_EQ(patch_dims(p[0]), (Dims{"time", "x", "y"}));
  for (const auto& patch : p) EXPECT_EQ(slice_of(patch, "time"), sl(6ul, 2ul));
  EXPECT_EQ(slice_of(p[1], "x"), sl(0ul, 5ul));  // y fastest
  EXPECT_EQ(slice_of(p[1], "y"), sl(10ul, 10ul));
  const auto l = s.layout(kVar3d, 3);
  // xarray: foo (sample, x_input, y_input), sample levels (input_batch, time).
  EXPECT_EQ(l.dims, (Dims{"sample", "x_input", "y_input"}));
  EXPECT_EQ(l.shape, (Shape{200, 5, 10}));
  EXPECT_EQ(l.sample_dims, (Dims{"input_batch", "time"}));
  EXPECT_EQ(l.source_shape, (Shape{100, 2, 10, 5}));
  EXPECT_EQ(l.source_axes, (std::vector<int>{0, 1, 3, 2}));
  EXPECT_EQ(l.expanded_shape, (Shape{100, 2, 5, 10}));
}

TEST(XbatcherSchema, Batch3d1dInputBatchDimsNoConcatKeepsDatasetOrder) {
  // xbatcher's xfail (#126): the test expects (time, x, y) but xbatcher gives one patch per
  // batch with the dataset's own order (time, y, x): a single non-input dim is not stacked
  // and nothing is transposed. We reproduce what xbatcher does.
  const auto s = make(kDs3d, {{"x", 5}, {"y", 10}}, {{"time", 2}});
  ASSERT_EQ(s.size(), 500u);
  const auto l = s.layout(kVar3d, 0);
  EXPECT_EQ(l.dims, (Dims{"time", "y", "x"}));
  EXPECT_EQ(l.shape, (Shape{2, 10, 5}));
  EXPECT_TRUE(l.sample_dims.empty());
  EXPECT_EQ(l.source_axes, (std::vector<int>{1, 2, 3}));
  // Batch-only dim first, then input dims in input_dims order, last fastest.
  const auto p = s.patches(101);  // time 1, x window 0, y window 1 (100 = 20 * 5 per time)
  EXPECT_EQ(patch_dims(p[0]), (Dims{"time", "x", "y"}));
  EXPECT_EQ(slice_of(p[0], "time"), sl(2ul, 2ul));
  EXPECT_EQ(slice_of(p[0], "x"), sl(0ul, 5ul));
  EXPECT_EQ(slice_of(p[0], "y"), sl(10ul, 10ul));
  EXPECT_TRUE(s.warnings().empty());
}

TEST(XbatcherSchema, Batch3dConcatDuplicateDim) {
  const auto s = make(kDs3d, {{"x", 5}, {"y", 10}}, {{"x", 10}, {"y", 20}}, true);
  ASSERT_EQ(s.size(), 20u);  // (100 / 10) * (50 / 20): y 40:50 dropped
  EXPECT_EQ(patch_counts(s), std::vector<std::uint64_t>(20, 4));
  const auto p = s.patches(19);  // x group 9, y group 1
  ASSERT_EQ(p.size(), 4u);
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> xy = {
      {90, 20}, {90, 30}, {95, 20}, {95, 30}};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(slice_of(p[i], "x").first, xy[i].first);
    EXPECT_EQ(slice_of(p[i], "y").first, xy[i].second);
  }
  const auto l = s.layout(kVar3d, 19);
  EXPECT_EQ(l.dims, (Dims{"sample", "x_input", "y_input"}));
  EXPECT_EQ(l.shape, (Shape{40, 5, 10}));
  EXPECT_EQ(l.sample_dims, (Dims{"input_batch", "time"}));
}

TEST(XbatcherSchema, Batch3d2dInputUnravelOrder) {
  // {time: 10, y: s, x: 20} in the original order; batch n at unravel_index(n, (50 // s, 5)).
  for (std::uint64_t len : {5u, 10u}) {
    const auto s = make(kDs3d, {{"y", len}, {"x", 20}});
    ASSERT_EQ(s.size(), (50 / len) * 5);
    for (std::uint64_t n = 0; n < s.size(); ++n) {
      const auto p = s.patches(n);
      EXPECT_EQ(slice_of(p[0], "y"), sl((n / 5) * len, len));
      EXPECT_EQ(slice_of(p[0], "x"), sl((n % 5) * 20, 20ul));
    }
    const auto l = s.layout(kVar3d, 0);
    EXPECT_EQ(l.dims, kVar3d);
    EXPECT_EQ(l.shape, (Shape{10, len, 20}));
  }
}

TEST(XbatcherSchema, Batch3d2dInputConcat) {
  for (std::uint64_t len : {5u, 10u}) {
    const auto a = make(kDs3d, {{"y", len}, {"x", 20}}, {}, true);
    ASSERT_EQ(a.size(), 1u);
    const auto la = a.layout(kVar3d, 0);
    EXPECT_EQ(la.dims, (Dims{"sample", "y_input", "x_input"}));
    EXPECT_EQ(la.shape, (Shape{500 / (len / 5), len, 20}));
    EXPECT_EQ(la.sample_dims, (Dims{"input_batch", "time"}));
    EXPECT_EQ(la.source_axes, (std::vector<int>{0, 1, 2, 3}));

    const auto b = make(kDs3d, {{"time", len}, {"x", 20}}, {}, true);
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b.num_patches(0), (10 / len) * 5);
    const auto lb = b.layout(kVar3d, 0);
    EXPECT_EQ(lb.dims, (Dims{"sample", "time_input", "x_input"}));
    EXPECT_EQ(lb.shape, (Shape{500 / (len / 5), len, 20}));
    EXPECT_EQ(lb.sample_dims, (Dims{"input_batch", "y"}));
    EXPECT_EQ(lb.source_axes, (std::vector<int>{0, 2, 1, 3}));
    EXPECT_EQ(lb.expanded_shape, (Shape{(10 / len) * 5, 50, len, 20}));
  }
}

TEST(XbatcherSchema, InputDimAndOverlapExceptions) {
  EXPECT_THROW(make(kDs1d, {{"x", 110}}), UsageError);
  EXPECT_THROW(make(kDs1d, {{"x", 10}}, {}, false, {{"x", 20}}), UsageError);
  const auto msg = message_of<UsageError>([] { make(kDs1d, {{"x", 110}}); });
  EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
  // A batch-only dim is validated like an input dim.
  EXPECT_THROW(make(kDs3d, {{"x", 10}}, {{"time", 11}}), UsageError);
}

TEST(XbatcherSchema, MissingDimIsSelectionError) {
  const auto msg = message_of<SelectionError>([] { make(kDs3d, {{"lat", 4}}); });
  EXPECT_NE(msg.find("'lat'"), std::string::npos) << msg;
  EXPECT_THROW(make(kDs3d, {{"x", 4}}, {{"level", 2}}), SelectionError);
  EXPECT_THROW(make(kDs3d, {{"x", 4}}).layout({"level"}, 0), SelectionError);
}

// ---- Regime 4 with overlap and the remaining documented cases ----

TEST(XbatcherSchema, DuplicateDimWithOverlapGivesUnequalBatches) {
  // time=60, input 10, overlap 9, batch 20: ppb = ceil(20 / 1) = 20, 3 batches.
  const auto s = make({{"time", 60}}, {{"time", 10}}, {{"time", 20}}, true, {{"time", 9}});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(patch_counts(s), (std::vector<std::uint64_t>{20, 20, 11}));
  const auto p = s.patches(1);
  EXPECT_EQ(slice_of(p.front(), "time"), sl(20ul, 10ul));
  EXPECT_EQ(slice_of(p.back(), "time"), sl(39ul, 10ul));  // runs past 40
  EXPECT_EQ(slice_of(s.patches(2).back(), "time"), sl(50ul, 10ul));
  EXPECT_EQ(s.layout({"time"}, 2).shape, (Shape{11, 10}));
}

TEST(XbatcherSchema, DemoCube18x18x30) {
  // Dataset (time=30, lat=18, lon=18); input 9/9/10, overlap 8/8/9, batch 18/18/15.
  const auto s = make({{"time", 30}, {"lat", 18}, {"lon", 18}},
                      {{"lat", 9}, {"lon", 9}, {"time", 10}},
                      {{"lat", 18}, {"lon", 18}, {"time", 15}}, true,
                      {{"lat", 8}, {"lon", 8}, {"time", 9}});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(patch_counts(s), (std::vector<std::uint64_t>{1500, 600}));
  const auto p = s.patches(1);
  EXPECT_EQ(patch_dims(p[0]), (Dims{"lat", "lon", "time"}));
  EXPECT_EQ(slice_of(p.front(), "time"), sl(15ul, 10ul));
  EXPECT_EQ(slice_of(p.back(), "lat"), sl(9ul, 9ul));
  EXPECT_EQ(slice_of(p.back(), "time"), sl(20ul, 10ul));
  // Only input_batch is left outside the input dims: no sample, variable order kept.
  const auto l = s.layout({"time", "lat", "lon"}, 1);
  EXPECT_EQ(l.dims, (Dims{"input_batch", "time_input", "lat_input", "lon_input"}));
  EXPECT_EQ(l.shape, (Shape{600, 10, 9, 9}));
}

TEST(XbatcherSchema, DuplicateDimDropsTrailingPatch) {
  // y=50, input 10, batch 20: 2 batches (0:20, 20:40); the y 40:50 patch is dropped.
  const auto s = make(kDs3d, {{"y", 10}}, {{"y", 20}}, true);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(slice_of(s.patches(1)[0], "y"), sl(20ul, 10ul));
  EXPECT_EQ(slice_of(s.patches(1)[1], "y"), sl(30ul, 10ul));
  EXPECT_EQ(s.num_patches(1), 2u);
}

TEST(XbatcherSchema, BatchOnlyDimDropsRemainder) {
  // time=10 in batches of 3 -> 3 time slices (t=9 lost), each grouping all x windows.
  const auto c = make(kDs3d, {{"x", 20}}, {{"time", 3}}, true);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(patch_counts(c), (std::vector<std::uint64_t>{5, 5, 5}));
  EXPECT_EQ(slice_of(c.patches(2)[0], "time"), sl(6ul, 3ul));
  const auto n = make(kDs3d, {{"x", 20}}, {{"time", 3}});
  ASSERT_EQ(n.size(), 15u);
  EXPECT_EQ(slice_of(n.patches(5)[0], "time"), sl(3ul, 3ul));
  EXPECT_EQ(slice_of(n.patches(14)[0], "x"), sl(80ul, 20ul));
  // Non-concat: time and y are left -> stacked; the time extent is the batch length.
  const auto l = n.layout(kVar3d, 5);
  EXPECT_EQ(l.dims, (Dims{"sample", "x"}));
  EXPECT_EQ(l.shape, (Shape{150, 20}));
  EXPECT_EQ(l.expanded_shape, (Shape{3, 50, 20}));
}

TEST(XbatcherSchema, NegativeOverlapOnBatchOnlyDim) {
  // The overlap entry applies to batch-only dims too: time stride 4 -> slices 0:3, 4:7.
  const auto s = make(kDs3d, {{"x", 20}}, {{"time", 3}}, true, {{"time", -1}});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(slice_of(s.patches(1)[0], "time"), sl(4ul, 3ul));
}

TEST(XbatcherSchema, NegativeInputOverlapLeavesGaps) {
  const auto s = make(kDs1d, {{"x", 10}}, {}, false, {{"x", -5}});
  ASSERT_EQ(s.size(), 7u);  // floor((100 + 5) / 15)
  EXPECT_EQ(slice_of(s.patches(6)[0], "x"), sl(90ul, 10ul));
}

TEST(XbatcherSchema, DuplicateDimWithoutConcatIsIgnoredWithWarning) {
  const auto s = make(kDs1d, {{"x", 5}}, {{"x", 10}});
  EXPECT_EQ(s.size(), 20u);
  EXPECT_EQ(s.num_patches(7), 1u);
  ASSERT_EQ(s.warnings().size(), 1u);
  EXPECT_NE(s.warnings()[0].find("'x': 10"), std::string::npos) << s.warnings()[0];
}

TEST(XbatcherSchema, BatchShorterThanStrideLeavesEmptyBatches) {
  // x=100, input 10 (stride 10), batch 5: 100 / 5 = 20 batches of ceil(5 / 10) = 1 window;
  // the 10 windows fill batches 0..9 and batches 10..19 stay empty. xbatcher lists them too
  // and fails when building one.
  const auto s = make(kDs1d, {{"x", 10}}, {{"x", 5}}, true);
  ASSERT_EQ(s.size(), 20u);
  EXPECT_EQ(slice_of(s.patches(1)[0], "x"), sl(10ul, 10ul));
  EXPECT_EQ(slice_of(s.patches(9)[0], "x"), sl(90ul, 10ul));
  EXPECT_EQ(s.num_patches(10), 0u);
  EXPECT_TRUE(s.patches(19).empty());
  EXPECT_THROW(s.layout({"x"}, 10), UsageError);
}

// ---- Layout of variables that lack some dims (checked against xarray 2023.01) ----

TEST(XbatcherSchema, LayoutBroadcastsMissingStackedDims) {
  const auto s = make(kDs3d, {{"x", 5}});
  // yx(x, y): stacked over (time, y) -> time broadcast; transposed to (sample, x).
  const auto yx = s.layout({"x", "y"}, 7);
  EXPECT_EQ(yx.dims, (Dims{"sample", "x"}));
  EXPECT_EQ(yx.shape, (Shape{500, 5}));
  EXPECT_EQ(yx.source_shape, (Shape{1, 5, 50}));
  EXPECT_EQ(yx.source_axes, (std::vector<int>{-1, 2, 1}));
  EXPECT_EQ(yx.expanded_shape, (Shape{10, 50, 5}));
  // t1(time): (sample,) with y broadcast.
  const auto t1 = s.layout({"time"}, 7);
  EXPECT_EQ(t1.dims, Dims{"sample"});
  EXPECT_EQ(t1.source_axes, (std::vector<int>{1, -1}));
  EXPECT_EQ(t1.shape, Shape{500});
  // xo(x) holds no stacked dim: not stacked, no sample.
  const auto xo = s.layout({"x"}, 7);
  EXPECT_EQ(xo.dims, Dims{"x"});
  EXPECT_TRUE(xo.sample_dims.empty());
}

TEST(XbatcherSchema, LayoutConcatVariablesAllGetInputBatch) {
  const auto s = make(kDs3d, {{"time", 2}}, {}, true);
  // Levels (input_batch, y, x); t1(time) -> (sample, time_input), y and x broadcast.
  const auto t1 = s.layout({"time"}, 0);
  EXPECT_EQ(t1.dims, (Dims{"sample", "time_input"}));
  EXPECT_EQ(t1.sample_dims, (Dims{"input_batch", "y", "x"}));
  EXPECT_EQ(t1.shape, (Shape{25000, 2}));
  EXPECT_EQ(t1.source_axes, (std::vector<int>{0, -1, -1, 1}));
  // xo(x) -> (sample,) over (input_batch, y, x).
  const auto xo = s.layout({"x"}, 0);
  EXPECT_EQ(xo.dims, Dims{"sample"});
  EXPECT_EQ(xo.source_axes, (std::vector<int>{0, -1, 1}));
  // Transposed to input_dims order even when the variable's own order differs.
  const auto s2 = make(kDs3d, {{"y", 10}, {"x", 5}}, {}, true);
  const auto yx = s2.layout({"x", "y"}, 0);
  EXPECT_EQ(yx.dims, (Dims{"sample", "y_input", "x_input"}));
  EXPECT_EQ(yx.source_axes, (std::vector<int>{0, -1, 2, 1}));
}

TEST(XbatcherSchema, HundredMillionBatchesAreArithmetic) {
  const auto s = make({{"time", 10000}, {"y", 10000}, {"x", 100}}, {{"y", 1}, {"x", 100}},
                      {{"time", 1}});
  ASSERT_EQ(s.size(), 100'000'000u);
  const auto p = s.patches(s.size() - 1);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(slice_of(p[0], "time"), sl(9999ul, 1ul));
  EXPECT_EQ(slice_of(p[0], "y"), sl(9999ul, 1ul));
}
