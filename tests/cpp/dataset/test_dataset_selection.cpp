// Positional and label selection on Variables backed by an in-memory array.
#include <gtest/gtest.h>

#include <numeric>

#include "dataset_fake_array.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"

using namespace lazycube;
using lazycube::testing::FakeArray;

namespace {

std::vector<std::int64_t> positions(const Slice& s, std::uint64_t n) {
  const IndexRange r = resolve_slice(s, n);
  std::vector<std::int64_t> out;
  for (std::uint64_t k = 0; k < r.count; ++k) out.push_back(static_cast<std::int64_t>(r.at(k)));
  return out;
}

// Python's list(range(n))[start:stop:step], written out by hand.
struct SliceCase {
  Slice slice;
  std::vector<std::int64_t> expected;
};

Variable grid_variable() {
  // 4 x 5 int32 values 0..19, dims (y, x).
  std::vector<std::int32_t> v(20);
  std::iota(v.begin(), v.end(), 0);
  auto a = FakeArray::of(DataType::int_(4), {4, 5}, v);
  a->with_dims({"y", "x"}).with_chunks({2, 2});
  return variable_from_array("v", a, true, 3);
}

template <class T>
std::vector<T> selected_values(const NDArray& a) {
  auto s = a.values<T>();
  return {s.begin(), s.end()};
}

}  // namespace

TEST(SelectSlice, MatchesPythonSemantics) {
  const std::vector<SliceCase> cases = {
      {{}, {0, 1, 2, 3, 4}},
      {{1, 3, 1}, {1, 2}},
      {{-2, std::nullopt, 1}, {3, 4}},
      {{std::nullopt, -1, 1}, {0, 1, 2, 3}},
      {{std::nullopt, std::nullopt, 2}, {0, 2, 4}},
      {{std::nullopt, std::nullopt, -1}, {4, 3, 2, 1, 0}},
      {{3, 0, -1}, {3, 2, 1}},
      {{std::nullopt, std::nullopt, -2}, {4, 2, 0}},
      {{-100, 100, 1}, {0, 1, 2, 3, 4}},
      {{100, -100, -1}, {4, 3, 2, 1, 0}},
      {{3, 1, 1}, {}},
      {{1, 3, -1}, {}},
      {{10, 20, 1}, {}},
      {{1, std::nullopt, 3}, {1, 4}},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(positions(c.slice, 5), c.expected)
        << "start=" << c.slice.start.value_or(999) << " stop=" << c.slice.stop.value_or(999)
        << " step=" << c.slice.step;
  }
}

TEST(SelectSlice, StepZeroIsSelectionError) {
  EXPECT_THROW(resolve_slice(Slice{std::nullopt, std::nullopt, 0}, 5, "x"), SelectionError);
}

TEST(SelectIndex, NegativeAndOutOfRange) {
  EXPECT_EQ(resolve_index(-1, 5, "x"), 4u);
  EXPECT_EQ(resolve_index(0, 5, "x"), 0u);
  try {
    resolve_index(5, 5, "lat");
    FAIL() << "expected SelectionError";
  } catch (const SelectionError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("lat"), std::string::npos) << msg;
    EXPECT_NE(msg.find("5"), std::string::npos) << msg;
    EXPECT_NE(msg.find("size 5"), std::string::npos) << msg;
  }
  EXPECT_THROW(resolve_index(-6, 5, "x"), SelectionError);
}

TEST(SelectIsel, IntegerDropsDimAndSliceKeepsIt) {
  const Variable v = grid_variable();
  const Variable row = v.isel({{"y", std::int64_t{-1}}});
  EXPECT_EQ(row.dims(), std::vector<std::string>{"x"});
  EXPECT_EQ(row.shape(), (Shape{5}));
  EXPECT_EQ(selected_values<std::int32_t>(row.read()), (std::vector<std::int32_t>{15, 16, 17, 18, 19}));
  const Variable block = v.isel({{"y", Slice{1, 3}}, {"x", Slice{std::nullopt, std::nullopt, -2}}});
  EXPECT_EQ(block.shape(), (Shape{2, 3}));
  EXPECT_EQ(selected_values<std::int32_t>(block.read()),
            (std::vector<std::int32_t>{9, 7, 5, 14, 12, 10}));
}

TEST(SelectIsel, ChainedSelectionsCompose) {
  const Variable v = grid_variable();
  const Variable a = v.isel({{"x", Slice{std::nullopt, std::nullopt, -1}}});  // 4 3 2 1 0
  const Variable b = a.isel({{"x", Slice{1, std::nullopt, 2}}});              // 3 1
  const Variable c = b.isel({{"y", std::int64_t{2}}, {"x", std::int64_t{-1}}});
  EXPECT_EQ(b.shape(), (Shape{4, 2}));
  EXPECT_EQ(selected_values<std::int32_t>(b.isel({{"y", std::int64_t{0}}}).read()),
            (std::vector<std::int32_t>{3, 1}));
  EXPECT_TRUE(c.dims().empty());
  EXPECT_EQ(selected_values<std::int32_t>(c.read()), (std::vector<std::int32_t>{11}));
}

TEST(SelectIsel, IsLazy) {
  std::vector<std::int32_t> data(20, 1);
  auto a = FakeArray::of(DataType::int_(4), {4, 5}, data);
  a->with_dims({"y", "x"});
  const Variable v = variable_from_array("v", a, true, 3);
  const Variable s = v.isel({{"y", Slice{1, 2}}}).isel({{"x", std::int64_t{0}}});
  EXPECT_EQ(a->reads.load(), 0);
  (void)s.read();
  EXPECT_EQ(a->reads.load(), 1);
}

TEST(SelectIsel, ErrorsNameDimIndexAndSize) {
  const Variable v = grid_variable();
  try {
    (void)v.isel({{"y", std::int64_t{4}}});
    FAIL();
  } catch (const SelectionError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'y'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("index 4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("size 4"), std::string::npos) << msg;
  }
  try {
    (void)v.isel({{"time", std::int64_t{0}}});
    FAIL();
  } catch (const SelectionError& e) {
    EXPECT_NE(std::string(e.what()).find("'time'"), std::string::npos) << e.what();
  }
  // After an integer selection the dim is gone.
  EXPECT_THROW((void)v.isel({{"y", std::int64_t{0}}}).isel({{"y", std::int64_t{0}}}),
               SelectionError);
}

TEST(SelectIsel, ChunksFollowTheSelection) {
  const Variable v = grid_variable();
  EXPECT_EQ(v.chunks(), (Shape{2, 2}));
  EXPECT_EQ(v.isel({{"x", Slice{0, 1}}}).chunks(), (Shape{2, 1}));
  EXPECT_EQ(v.isel({{"y", std::int64_t{0}}, {"x", Slice{std::nullopt, std::nullopt, 2}}}).chunks(),
            (Shape{1}));
}

namespace {

Dataset latlon_dataset() {
  auto lat = FakeArray::of(DataType::float_(8), {5}, std::vector<double>{90, 60, 30, 0, -30});
  lat->with_dims({"lat"});
  auto lon = FakeArray::of(DataType::float_(4), {4}, std::vector<float>{0, 10, 20, 30});
  lon->with_dims({"lon"});
  // hours since 2019-03-01
  auto time = FakeArray::of(DataType::int_(8), {3}, std::vector<std::int64_t>{0, 6, 12});
  time->with_dims({"time"}).with_attrs({{"units", "hours since 2019-03-01"}});
  std::vector<float> t(3 * 5 * 4);
  std::iota(t.begin(), t.end(), 0.0f);
  auto temp = FakeArray::of(DataType::float_(4), {3, 5, 4}, t);
  temp->with_dims({"time", "lat", "lon"});
  return Dataset({variable_from_array("lat", lat, true, 3), variable_from_array("lon", lon, true, 3),
                  variable_from_array("time", time, true, 3),
                  variable_from_array("temp", temp, true, 3)},
                 {{"title", "test"}});
}

}  // namespace

TEST(SelectSel, ExactNearestAndDescendingSlices) {
  const Dataset ds = latlon_dataset();
  const Variable& temp = ds["temp"];
  const Variable a = temp.sel({{"lat", Label(60.0)}, {"lon", Label(20)}});
  EXPECT_EQ(a.dims(), std::vector<std::string>{"time"});
  EXPECT_EQ(selected_values<float>(a.read()), (std::vector<float>{6, 26, 46}));

  const Variable b = temp.sel({{"lat", LabelSlice(60.0, 0.0)}});
  EXPECT_EQ(b.shape(), (Shape{3, 3, 4}));
  EXPECT_EQ(selected_values<double>(b.index_coord("lat")->read()), (std::vector<double>{60, 30, 0}));
  // Labels between grid points: inclusive bounds snap inwards.
  const Variable c = temp.sel({{"lat", LabelSlice(70.0, 10.0)}});
  EXPECT_EQ(selected_values<double>(c.index_coord("lat")->read()), (std::vector<double>{60, 30}));
  // Increasing slice on the descending coordinate selects nothing (as pandas).
  EXPECT_EQ(temp.sel({{"lat", LabelSlice(0.0, 60.0)}}).shape()[1], 0u);

  SelOptions nearest{SelMethod::Nearest, std::nullopt};
  const Variable d = temp.sel({{"lat", Label(44.0)}, {"lon", Label(100.0)}}, nearest);
  EXPECT_EQ(selected_values<float>(d.read())[0], 4.0f * 2 + 3);  // lat 30 (index 2), lon 30 (index 3)
  SelOptions tight{SelMethod::Nearest, 1.0};
  EXPECT_THROW((void)temp.sel({{"lat", Label(44.0)}}, tight), SelectionError);
}

TEST(SelectSel, DatetimeLabels) {
  const Dataset ds = latlon_dataset();
  const Variable& temp = ds["temp"];
  const Variable a = temp.sel({{"time", Label("2019-03-01T06:00")}});
  EXPECT_EQ(a.dims(), (std::vector<std::string>{"lat", "lon"}));
  EXPECT_EQ(selected_values<float>(a.read())[0], 20.0f);
  const Variable b = temp.sel({{"time", LabelSlice("2019-03-01T03:00", "2019-03-01 12:00:00")}});
  EXPECT_EQ(b.shape()[0], 2u);
  SelOptions nearest{SelMethod::Nearest, 3600.0 * 2};
  EXPECT_EQ(selected_values<float>(temp.sel({{"time", Label("2019-03-01T11:00Z")}}, nearest).read())[0],
            40.0f);
  EXPECT_THROW((void)temp.sel({{"time", Label("2019-03-01T09:00")}}, nearest), SelectionError);
}

TEST(SelectSel, MissingLabelNamesDimAndLabel) {
  const Dataset ds = latlon_dataset();
  try {
    (void)ds["temp"].sel({{"lat", Label(45.0)}});
    FAIL();
  } catch (const SelectionError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'lat'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("45"), std::string::npos) << msg;
  }
  try {
    (void)ds.sel({{"time", Label("2020-01-01")}});
    FAIL();
  } catch (const SelectionError& e) {
    EXPECT_NE(std::string(e.what()).find("2020-01-01"), std::string::npos) << e.what();
  }
}

TEST(SelectSel, WorksAfterIsel) {
  const Dataset ds = latlon_dataset();
  const Variable v = ds["temp"].isel({{"lat", Slice{1, std::nullopt}}});
  const Variable w = v.sel({{"lat", Label(0.0)}});
  EXPECT_EQ(selected_values<float>(w.isel({{"time", std::int64_t{0}}}).read()),
            (std::vector<float>{12, 13, 14, 15}));
}

// Issue 33: float16 coordinate labels read as 0.0, so `sel` on a float16 coordinate found
// nothing or the wrong positions.
TEST(SelectSel, Float16CoordinateLabels) {
  // x = 1.5, 3.5, ..., 11.5 as IEEE half bits.
  auto x = FakeArray::of(DataType::float_(2), {6},
                         std::vector<std::uint16_t>{0x3e00, 0x4300, 0x4580, 0x4780, 0x48c0, 0x49c0});
  x->with_dims({"x"});
  auto v = FakeArray::of(DataType::float_(4), {6}, std::vector<float>{0, 10, 20, 30, 40, 50});
  v->with_dims({"x"});
  const Dataset ds({variable_from_array("x", x, true, 3), variable_from_array("v", v, true, 3)}, nlohmann::json::object());
  const Variable& var = ds["v"];
  EXPECT_EQ(selected_values<float>(var.sel({{"x", Label(5.5)}}).read()), (std::vector<float>{20}));
  EXPECT_EQ(selected_values<float>(var.sel({{"x", LabelSlice(3.5, 9.5)}}).read()), (std::vector<float>{10, 20, 30, 40}));
  const SelOptions nearest{SelMethod::Nearest, std::nullopt};
  EXPECT_EQ(selected_values<float>(var.sel({{"x", Label(8.2)}}, nearest).read()), (std::vector<float>{30}));
  EXPECT_THROW((void)var.sel({{"x", Label(0.0)}}), SelectionError);
}
