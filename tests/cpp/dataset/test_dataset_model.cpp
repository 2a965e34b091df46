// Dataset construction: dims, coordinates, attributes, dataset-wide isel/sel.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dataset_fake_array.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/xtensor.hpp"

using namespace lazycube;
using lazycube::testing::FakeArray;

namespace {

Variable var(const std::string& name, Shape shape, std::vector<std::string> dims,
             nlohmann::json attrs = nlohmann::json::object()) {
  std::vector<double> values(shape_size(shape));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
  auto a = FakeArray::of(DataType::float_(8), shape, values);
  a->with_dims(std::move(dims)).with_attrs(std::move(attrs));
  return variable_from_array(name, a, true, 3);
}

}  // namespace

TEST(DatasetModel, DimsCoordsAndDataVars) {
  const Dataset ds({var("x", {3}, {"x"}), var("t", {2, 3}, {"time", "x"}, {{"coordinates", "lbl"}}),
                    var("lbl", {3}, {"x"}), var("u", {2}, {"time"})},
                   {{"title", "demo"}});
  ASSERT_EQ(ds.dims().size(), 2u);
  EXPECT_EQ(ds.dims()[0], (std::pair<std::string, std::uint64_t>{"x", 3}));
  EXPECT_EQ(ds.dims()[1], (std::pair<std::string, std::uint64_t>{"time", 2}));
  EXPECT_EQ(ds.coord_names(), (std::vector<std::string>{"x", "lbl"}));
  EXPECT_EQ(ds.data_var_names(), (std::vector<std::string>{"t", "u"}));
  EXPECT_EQ(ds.attrs()["title"], "demo");
  EXPECT_TRUE(ds["t"].attrs().empty());  // `coordinates` moved to the encoding
}

TEST(DatasetModel, ConflictingDimSizesNameDimAndVariables) {
  try {
    Dataset ds({var("a", {3}, {"x"}), var("b", {4}, {"x"})}, {});
    FAIL();
  } catch (const MetadataError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'a'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'b'"), std::string::npos) << msg;
  }
}

TEST(DatasetModel, FallbackDimNamesAndArrayDimensionsAttr) {
  auto a = FakeArray::of(DataType::float_(8), {2, 3}, std::vector<double>(6, 0.0));
  EXPECT_EQ(dims_of(*a), (std::vector<std::string>{"dim_0", "dim_1"}));
  a->with_attrs({{"_ARRAY_DIMENSIONS", {"y", "x"}}, {"units", "m"}});
  EXPECT_EQ(dims_of(*a), (std::vector<std::string>{"y", "x"}));
  const Variable v = variable_from_array("v", a, false, 2);
  EXPECT_EQ(v.dims(), (std::vector<std::string>{"y", "x"}));
  EXPECT_EQ(v.attrs(), (nlohmann::json{{"units", "m"}}));
}

TEST(DatasetModel, UnknownVariableListsAvailable) {
  const Dataset ds({var("a", {3}, {"x"}), var("b", {3}, {"x"})}, {});
  try {
    (void)ds["zz"];
    FAIL();
  } catch (const NotFound& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'zz'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("a, b"), std::string::npos) << msg;
  }
}

TEST(DatasetSelect, IselAppliesToEveryVariableWithTheDim) {
  const Dataset ds({var("x", {3}, {"x"}), var("t", {2, 3}, {"time", "x"}), var("u", {2}, {"time"})},
                   {});
  const Dataset s = ds.isel({{"x", Slice{1, std::nullopt}}, {"time", std::int64_t{1}}});
  EXPECT_EQ(s.dims(), (std::vector<std::pair<std::string, std::uint64_t>>{{"x", 2}}));
  EXPECT_EQ(s["t"].shape(), (Shape{2}));
  EXPECT_TRUE(s["u"].dims().empty());
  const NDArray t_values = s["t"].read();
  auto t = t_values.values<double>();
  EXPECT_EQ(t[0], 4.0);
  EXPECT_EQ(t[1], 5.0);
  EXPECT_THROW((void)ds.isel({{"nope", std::int64_t{0}}}), SelectionError);
  // sel through the dataset index.
  const Dataset l = ds.sel({{"x", LabelSlice(1.0, 2.0)}});
  EXPECT_EQ(l["x"].read().values<double>()[0], 1.0);
  EXPECT_EQ(l["t"].shape(), (Shape{2, 2}));
}

TEST(DatasetXtensor, ToXtensorChecksDtype) {
  const Variable v = var("t", {2, 3}, {"time", "x"});
  const auto x = read_as<double>(v);
  EXPECT_EQ(x.shape()[1], 3u);
  EXPECT_EQ(x(1, 2), 5.0);
  EXPECT_THROW((void)read_as<float>(v), UsageError);
  EXPECT_THROW((void)read_as<std::int64_t>(v), UsageError);
}
