// The CF steps xarray applies that the one policy gained for issue 31: _Unsigned, string fill
// values, _Encoding text, character arrays, CF coordinate attributes (decode_coords), time
// bounds' units, and a coarser datetime64 unit for times datetime64[ns] cannot hold. Expected
// values are xarray 2023.01's (tests/python/test_engine_fidelity.py compares the engines).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "dataset_fake_array.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"

using namespace lazycube;
using lazycube::testing::FakeArray;

namespace {

std::vector<std::pair<std::string, ArrayPtr>> arrays(std::initializer_list<std::pair<std::string, ArrayPtr>> list) {
  return list;
}

Buffer bytes_of(const std::string& s) {
  Buffer b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

}  // namespace

TEST(CfUnsigned, SignedStorageReadsAsUnsignedBeforeMaskAndScale) {
  // int8 storage of unsigned bytes, fill -1 (= 255 once unsigned), scale 0.1f.
  auto a = FakeArray::of<std::int8_t>(DataType::int_(1), {5}, {100, 101, -29, -28, -1});
  const CfDecoding plan = CfDecoding::plan(
      DataType::int_(1), {{"_Unsigned", "true"}, {"_FillValue", -1}, {"scale_factor", static_cast<double>(0.1f)}});
  EXPECT_EQ(plan.decoded_dtype(), DataType::float_(4));
  EXPECT_EQ(plan.encoding()["_Unsigned"], "true");
  EXPECT_EQ(plan.encoding()["_FillValue"], 255);
  EXPECT_FALSE(plan.attrs().contains("_Unsigned"));
  const NDArray out = plan.apply(a->read_all());
  const auto v = out.values<float>();
  EXPECT_FLOAT_EQ(v[0], 100 * 0.1f);
  EXPECT_FLOAT_EQ(v[2], 227 * 0.1f);
  EXPECT_FLOAT_EQ(v[3], 228 * 0.1f);
  EXPECT_TRUE(std::isnan(v[4]));
}

TEST(CfUnsigned, AloneIsAReinterpretationAndFalseMakesUnsignedSigned) {
  auto a = FakeArray::of<std::int16_t>(DataType::int_(2), {2}, {-1, 7});
  const CfDecoding u = CfDecoding::plan(DataType::int_(2), {{"_Unsigned", "true"}});
  EXPECT_EQ(u.decoded_dtype(), DataType::uint(2));
  const NDArray unsigned_values = u.apply(a->read_all());
  const auto uv = unsigned_values.values<std::uint16_t>();
  EXPECT_EQ(uv[0], 65535);
  EXPECT_EQ(uv[1], 7);
  auto b = FakeArray::of<std::uint8_t>(DataType::uint(1), {2}, {255, 1});
  const CfDecoding s = CfDecoding::plan(DataType::uint(1), {{"_Unsigned", "false"}});
  EXPECT_EQ(s.decoded_dtype(), DataType::int_(1));
  const NDArray signed_values = s.apply(b->read_all());
  EXPECT_EQ(signed_values.values<std::int8_t>()[0], -1);
  // On floats the attribute is moved and ignored.
  const CfDecoding f = CfDecoding::plan(DataType::float_(4), {{"_Unsigned", "true"}});
  EXPECT_EQ(f.decoded_dtype(), DataType::float_(4));
  EXPECT_TRUE(f.is_identity() || f.encoding().contains("_Unsigned"));
}

TEST(CfStrings, BytesFillValueMarksMaskedElements) {
  CfInputs in;
  in.array_fill_bytes = bytes_of("zz");
  const CfDecoding plan = CfDecoding::plan(DataType::bytes(2), nlohmann::json::object(), in);
  ASSERT_TRUE(plan.masks_strings());
  EXPECT_TRUE(plan.is_string_fill(reinterpret_cast<const std::byte*>("zz")));
  EXPECT_FALSE(plan.is_string_fill(reinterpret_cast<const std::byte*>("ab")));
  EXPECT_TRUE(plan.encoding()["_FillValue"].is_binary());
}

TEST(CfStrings, EncodingDecodesUtf8StrictlyAndNamesTheVariable) {
  CfInputs in;
  in.name = "label";
  const CfDecoding plan = CfDecoding::plan(DataType::bytes(3), {{"_Encoding", "utf-8"}}, in);
  EXPECT_EQ(plan.decoded_dtype(), DataType::unicode(3));
  auto good = std::make_shared<FakeArray>(DataType::bytes(3), Shape{2}, bytes_of(std::string("ab\0\xc3\xa9" "e", 6)));
  const NDArray text = plan.apply(good->read_all());
  const auto* chars = reinterpret_cast<const char32_t*>(text.data.data());
  EXPECT_EQ(chars[0], U'a');
  EXPECT_EQ(chars[2], U'\0');
  EXPECT_EQ(chars[3], U'\u00e9');
  EXPECT_EQ(chars[4], U'e');
  auto bad = std::make_shared<FakeArray>(DataType::bytes(3), Shape{1}, bytes_of("\xff" "ab"));
  try {
    plan.apply(bad->read_all());
    FAIL() << "invalid UTF-8 decoded";
  } catch (const CodecError& e) {
    EXPECT_NE(std::string(e.what()).find("'label'"), std::string::npos) << e.what();
  }
}

TEST(CfDataset, CharacterArraysJoinAlongTheirStringDim) {
  auto chars = FakeArray::of<char>(DataType::bytes(1), {2, 3}, {'a', 'b', '\0', 'c', 'd', 'e'});
  chars->with_dims({"x", "n"}).with_attrs({{"_Encoding", "utf-8"}});
  const Dataset ds = decode_dataset(arrays({{"c", chars}}), nlohmann::json::object(), 3, OpenOptions{});
  const Variable& v = ds["c"];
  EXPECT_EQ(v.dims(), std::vector<std::string>{"x"});
  EXPECT_EQ(v.dtype(), DataType::unicode(3));
  EXPECT_EQ(v.encoding()["char_dim_name"], "n");
  const NDArray text = v.read();
  EXPECT_EQ(reinterpret_cast<const char32_t*>(text.data.data())[3], U'c');
  OpenOptions raw;
  raw.concat_characters = false;
  const Dataset kept = decode_dataset(arrays({{"c", chars}}), nlohmann::json::object(), 3, raw);
  EXPECT_EQ(kept["c"].dims(), (std::vector<std::string>{"x", "n"}));
  EXPECT_EQ(kept["c"].dtype(), DataType::bytes(1));
}

TEST(CfDataset, CoordinatesOnlyWhenEveryNamedVariableExists) {
  auto lat = FakeArray::of<double>(DataType::float_(8), {2}, {1, 2});
  lat->with_dims({"x"});
  auto a = FakeArray::of<double>(DataType::float_(8), {2}, {1, 2});
  a->with_dims({"x"}).with_attrs({{"coordinates", "lat"}});
  auto b = FakeArray::of<double>(DataType::float_(8), {2}, {1, 2});
  b->with_dims({"x"}).with_attrs({{"coordinates", "lat missing"}});
  auto s = FakeArray::of<double>(DataType::float_(8), {}, {5});
  const Dataset ds = decode_dataset(arrays({{"lat", lat}, {"a", a}, {"b", b}, {"s", s}}),
                                    {{"coordinates", "s"}}, 3, OpenOptions{});
  EXPECT_EQ(ds.coord_names(), (std::vector<std::string>{"lat", "s"}));
  EXPECT_EQ(ds["a"].encoding()["coordinates"], "lat");
  EXPECT_FALSE(ds["a"].attrs().contains("coordinates"));
  EXPECT_EQ(ds["b"].attrs()["coordinates"], "lat missing");
  EXPECT_FALSE(ds.attrs().contains("coordinates"));
  // A subset keeps the global coordinate it holds.
  EXPECT_TRUE(ds.subset({"a"}).is_coord("lat"));
  OpenOptions off;
  off.decode_coords = "";
  const Dataset plain = decode_dataset(arrays({{"lat", lat}, {"a", a}}), {{"coordinates", "lat"}}, 3, off);
  EXPECT_TRUE(plain.coord_names().empty());
  EXPECT_EQ(plain["a"].attrs()["coordinates"], "lat");
  EXPECT_TRUE(plain.attrs().contains("coordinates"));
}

TEST(CfDataset, DecodeCoordsAllAddsBoundsGridMappingAndFormulaTerms) {
  auto x = FakeArray::of<double>(DataType::float_(8), {2}, {1, 2});
  x->with_dims({"x"}).with_attrs({{"bounds", "x_bnds"}});
  auto bnds = FakeArray::of<double>(DataType::float_(8), {2, 2}, {0, 1, 1, 2});
  bnds->with_dims({"x", "nv"});
  auto crs = FakeArray::of<std::int64_t>(DataType::int_(8), {}, {0});
  auto ps = FakeArray::of<double>(DataType::float_(8), {2}, {1, 1});
  ps->with_dims({"x"});
  auto a = FakeArray::of<double>(DataType::float_(8), {2}, {1, 2});
  a->with_dims({"x"}).with_attrs({{"grid_mapping", "crs"}, {"formula_terms", "p: ps q: gone"}});
  OpenOptions all;
  all.decode_coords = "all";
  const Dataset ds = decode_dataset(arrays({{"x", x}, {"x_bnds", bnds}, {"crs", crs}, {"ps", ps}, {"a", a}}),
                                    nlohmann::json::object(), 3, all);
  EXPECT_TRUE(ds.is_coord("x_bnds"));
  EXPECT_TRUE(ds.is_coord("crs"));
  EXPECT_FALSE(ds.is_coord("ps"));  // formula_terms names a missing variable: dropped, as xarray
  EXPECT_FALSE(ds["a"].attrs().contains("formula_terms"));
  EXPECT_EQ(ds["a"].encoding()["grid_mapping"], "crs");
  OpenOptions bad;
  bad.decode_coords = "some";
  EXPECT_THROW(decode_dataset(arrays({{"x", x}}), nlohmann::json::object(), 3, bad), UsageError);
}

TEST(CfDataset, TimesOutsideNanosecondsDecodeToSecondsAndBoundsTakeTheirUnits) {
  // days since 0001-01-01: 0 is year 1, outside datetime64[ns].
  auto t = FakeArray::of<std::int64_t>(DataType::int_(8), {2}, {0, 365});
  t->with_dims({"t"}).with_attrs({{"units", "days since 0001-01-01"}, {"bounds", "t_bnds"}});
  auto tb = FakeArray::of<std::int64_t>(DataType::int_(8), {2, 2}, {0, 1, 365, 366});
  tb->with_dims({"t", "nv"});
  const Dataset ds = decode_dataset(arrays({{"t", t}, {"t_bnds", tb}}), nlohmann::json::object(), 3, OpenOptions{});
  EXPECT_EQ(ds["t"].dtype(), DataType::datetime("s"));
  EXPECT_EQ(ds["t_bnds"].dtype(), DataType::datetime("s"));  // units inherited from t
  const NDArray times = ds["t"].read();
  const auto s = times.values<std::int64_t>();
  EXPECT_EQ(s[0], -62135596800);           // 0001-01-01T00:00:00
  EXPECT_EQ(s[1], -62135596800 + 86400 * 365);
  // Times that fit stay datetime64[ns] (and reading them costs no open-time read beyond the ends).
  auto u = FakeArray::of<std::int64_t>(DataType::int_(8), {2}, {0, 1});
  u->with_dims({"u"}).with_attrs({{"units", "hours since 2000-01-01"}});
  const Dataset fits = decode_dataset(arrays({{"u", u}}), nlohmann::json::object(), 3, OpenOptions{});
  EXPECT_EQ(fits["u"].dtype(), DataType::datetime("ns"));
}
