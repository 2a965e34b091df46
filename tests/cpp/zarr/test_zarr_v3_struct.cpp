// Zarr v3 `struct` arrays (issue 34): records read with each field at its packed offset and
// swapped by itself (both endians, sharded too), the fill value as a record (missing chunks),
// fields read as arrays of their own (RecordFieldArray) and as variables (struct_fields).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/record_field_array.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "zarr_test_writer.hpp"

namespace lazycube {
namespace {

using namespace lazycube::test;
using nlohmann::json;

// {id: int32, flags: uint8, value: float64, c: complex64, point: {x: float32, y: int16}}: 27 bytes,
// offsets 0, 4, 5, 13, 21 (x 21, y 25), as the spec packs them.
json struct34_type() {
  const json point = {{"name", "struct"},
                      {"configuration",
                       {{"fields", json::array({{{"name", "x"}, {"data_type", "float32"}},
                                                {{"name", "y"}, {"data_type", "int16"}}})}}}};
  return {{"name", "struct"},
          {"configuration",
           {{"fields", json::array({{{"name", "id"}, {"data_type", "int32"}},
                                    {{"name", "flags"}, {"data_type", "uint8"}},
                                    {{"name", "value"}, {"data_type", "float64"}},
                                    {{"name", "c"}, {"data_type", "complex64"}},
                                    {{"name", "point"}, {"data_type", point}}})}}}};
}

const json kStruct34Fill = {{"id", -1}, {"flags", 255}, {"value", "NaN"}, {"c", {1.0, 2.0}},
                            {"point", {{"x", 0.5}, {"y", -2}}}};

struct Struct34Record {
  std::int32_t id;
  std::uint8_t flags;
  double value;
  float re, im;
  float x;
  std::int16_t y;
};

Struct34Record struct34_record(int i) {
  return {1000 * i - 7, static_cast<std::uint8_t>(i + 1), i + 0.25, static_cast<float>(i), -static_cast<float>(i),
          i * 1.5f, static_cast<std::int16_t>(-3 * i)};
}

// The value's bytes in `big` or little byte order.
template <class T>
std::string struct34_bytes(T v, bool big) {
  std::string s(sizeof(T), '\0');
  std::memcpy(s.data(), &v, sizeof(T));
  if (big) std::reverse(s.begin(), s.end());
  return s;
}

// Record i as the bytes codec stores it: the fields packed in order, each in the byte order.
std::string struct34_stored(const Struct34Record& r, bool big) {
  return struct34_bytes(r.id, big) + struct34_bytes(r.flags, big) + struct34_bytes(r.value, big) +
         struct34_bytes(r.re, big) + struct34_bytes(r.im, big) + struct34_bytes(r.x, big) + struct34_bytes(r.y, big);
}

template <class T>
T struct34_at(const std::byte* rec, std::size_t offset) {
  T v;
  std::memcpy(&v, rec + offset, sizeof(T));
  return v;
}

// Record `rec` (native bytes) against `want`; NaN values compare equal.
void struct34_expect(const std::byte* rec, const Struct34Record& want, const std::string& what) {
  EXPECT_EQ(struct34_at<std::int32_t>(rec, 0), want.id) << what;
  EXPECT_EQ(struct34_at<std::uint8_t>(rec, 4), want.flags) << what;
  const double v = struct34_at<double>(rec, 5);
  if (std::isnan(want.value)) EXPECT_TRUE(std::isnan(v)) << what;
  else EXPECT_EQ(v, want.value) << what;
  EXPECT_EQ(struct34_at<float>(rec, 13), want.re) << what;
  EXPECT_EQ(struct34_at<float>(rec, 17), want.im) << what;
  EXPECT_EQ(struct34_at<float>(rec, 21), want.x) << what;
  EXPECT_EQ(struct34_at<std::int16_t>(rec, 25), want.y) << what;
}

const Struct34Record kStruct34FillRecord = {-1, 255, std::numeric_limits<double>::quiet_NaN(), 1.0f, 2.0f, 0.5f, -2};

template <class T>
std::vector<T> struct34_values(const NDArray& a) {
  const auto v = a.values<T>();
  return {v.begin(), v.end()};
}

ArrayPtr struct34_open(const fs::path& dir) { return zarr::open_array(make_file_store(dir.string()), ""); }

TEST(ZarrV3Struct, DataTypeHasTheFieldsAtTheirPackedOffsets) {
  TempDir tmp;
  write_file(tmp.path() / "zarr.json", v3_array_json({2}, {2}, struct34_type(), json::array({bytes_codec()}), kStruct34Fill).dump());
  ArrayPtr a = struct34_open(tmp.path());
  const DataType& t = a->dtype();
  ASSERT_EQ(t.kind, DTypeKind::Record);
  EXPECT_EQ(t.itemsize, 27u);
  EXPECT_EQ(t.numpy_str(), "|V27");
  EXPECT_EQ(a->stored_dtype(), "");  // read as stored
  EXPECT_EQ(t.name(), "struct{id: int32, flags: uint8, value: float64, c: complex64, point: struct{x: float32, y: int16}}");
  EXPECT_EQ(t.swap_unit(), 8u);  // the widest field's
  ASSERT_EQ(t.fields->size(), 5u);
  const std::size_t offsets[] = {0, 4, 5, 13, 21};
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ((*t.fields)[i].offset, offsets[i]) << i;
  const RecordField& point = (*t.fields)[4];
  ASSERT_EQ(point.dtype.kind, DTypeKind::Record);
  EXPECT_EQ((*point.dtype.fields)[1].offset, 4u);
  std::size_t at = 0;
  ASSERT_NE(find_record_field(t, "point.y", &at), nullptr);
  EXPECT_EQ(at, 25u);
  EXPECT_EQ(find_record_field(t, "point.z"), nullptr);
  EXPECT_EQ(record_field_paths(t), (std::vector<std::string>{"id", "flags", "value", "c", "point.x", "point.y"}));
  // The fill value: one native record.
  ASSERT_EQ(a->fill_value_bytes().size(), 27u);
  struct34_expect(a->fill_value_bytes().data(), kStruct34FillRecord, "fill");
  EXPECT_TRUE(a->has_fill_value());
}

TEST(ZarrV3Struct, RecordsReadInBothByteOrdersWithMissingChunksAsFill) {
  for (const bool big : {false, true}) {
    TempDir tmp;
    // 5 records in chunks of 2; chunk 1 (records 2, 3) absent; chunk 2 holds record 4 and padding.
    write_file(tmp.path() / "zarr.json",
               v3_array_json({5}, {2}, struct34_type(), json::array({bytes_codec(big ? "big" : "little")}), kStruct34Fill).dump());
    write_file(tmp.path() / "c" / "0", struct34_stored(struct34_record(0), big) + struct34_stored(struct34_record(1), big));
    write_file(tmp.path() / "c" / "2", struct34_stored(struct34_record(4), big) + struct34_stored(struct34_record(9), big));
    ArrayPtr a = struct34_open(tmp.path());
    const NDArray all = a->read_all();
    ASSERT_EQ(all.data.size(), 5u * 27);
    for (int i = 0; i < 5; ++i) {
      const std::string what = std::string(big ? "big" : "little") + " record " + std::to_string(i);
      struct34_expect(all.data.data() + 27 * i, i == 2 || i == 3 ? kStruct34FillRecord : struct34_record(i), what);
    }
    // A strided, reversed selection.
    const NDArray part = a->read({{4, 3, -2}});
    struct34_expect(part.data.data(), struct34_record(4), "part 0");
    struct34_expect(part.data.data() + 27, kStruct34FillRecord, "part 1");
    struct34_expect(part.data.data() + 54, struct34_record(0), "part 2");
  }
}

TEST(ZarrV3Struct, ShardedRecordsAreStoredFieldByField) {
  TempDir tmp;
  std::vector<std::byte> values(6 * 27);
  for (int i = 0; i < 6; ++i) {
    // Native records: the little-endian stored form.
    const std::string rec = struct34_stored(struct34_record(i), false);
    std::memcpy(values.data() + 27 * i, rec.data(), 27);
  }
  const json meta = v3_array_json({6}, {6}, struct34_type(), json::array({sharding_codec({2}, json::array({bytes_codec("big")}))}),
                                  kStruct34Fill);
  write_v3_array(tmp.path(), meta, values.data(), 27);
  // The shard's first inner chunk: records 0 and 1, each field big-endian.
  const std::string shard = read_file(tmp.path() / "c" / "0");
  EXPECT_EQ(shard.substr(0, 54), struct34_stored(struct34_record(0), true) + struct34_stored(struct34_record(1), true));
  ArrayPtr a = struct34_open(tmp.path());
  EXPECT_EQ(a->read_chunk_shape(), (Shape{2}));
  const NDArray part = a->read({{1, 4, 1}});
  for (int k = 0; k < 4; ++k) struct34_expect(part.data.data() + 27 * k, struct34_record(1 + k), "sharded " + std::to_string(k));
}

TEST(ZarrV3Struct, FieldsReadAsArraysOfTheirOwn) {
  TempDir tmp;
  write_file(tmp.path() / "zarr.json", v3_array_json({4}, {2}, struct34_type(), json::array({bytes_codec("big")}), kStruct34Fill).dump());
  write_file(tmp.path() / "c" / "0", struct34_stored(struct34_record(0), true) + struct34_stored(struct34_record(1), true));
  ArrayPtr records = struct34_open(tmp.path());
  const RecordFieldArray y(records, "point.y");
  EXPECT_EQ(y.dtype(), DataType::int_(2));
  EXPECT_EQ(y.shape(), records->shape());
  EXPECT_EQ(y.chunk_shape(), records->chunk_shape());
  EXPECT_EQ(struct34_values<std::int16_t>(y.read_all()), (std::vector<std::int16_t>{0, -3, -2, -2}));  // chunk 1: fill
  ASSERT_EQ(y.fill_value_bytes().size(), 2u);
  EXPECT_EQ(struct34_at<std::int16_t>(y.fill_value_bytes().data(), 0), -2);
  const RecordFieldArray value(records, "value");
  EXPECT_EQ(struct34_values<double>(value.read({{1, 1, 1}})), (std::vector<double>{1.25}));
  // A nested record as a field: its records.
  const RecordFieldArray point(records, "point");
  EXPECT_EQ(point.dtype().kind, DTypeKind::Record);
  EXPECT_EQ(point.dtype().itemsize, 6u);
  const NDArray p = point.read({{1, 1, 1}});
  EXPECT_EQ(struct34_at<float>(p.data.data(), 0), 1.5f);
  const std::string e = message_of<UsageError>([&] { RecordFieldArray(records, "point.z"); });
  EXPECT_NE(e.find("no field 'point.z'"), std::string::npos) << e;
  EXPECT_NE(e.find("id, flags, value, c, point.x, point.y"), std::string::npos) << e;
  EXPECT_THROW(RecordFieldArray(records, "id.x"), UsageError);
}

void struct34_write_group(const fs::path& root) {
  write_file(root / "zarr.json", json{{"zarr_format", 3}, {"node_type", "group"}, {"attributes", json::object()}}.dump());
  json rec = v3_array_json({4}, {2}, struct34_type(), json::array({bytes_codec()}), kStruct34Fill);
  rec["dimension_names"] = {"obs"};
  rec["attributes"] = {{"long_name", "observations"}};
  write_file(root / "rec" / "zarr.json", rec.dump());
  write_file(root / "rec" / "c" / "0", struct34_stored(struct34_record(0), false) + struct34_stored(struct34_record(1), false));
  json t = v3_array_json({4}, {4}, "float32", json::array({bytes_codec()}), 0);
  t["dimension_names"] = {"obs"};
  write_file(root / "t" / "zarr.json", t.dump());
}

TEST(ZarrV3Struct, DatasetShowsRecordsOrOneVariablePerField) {
  TempDir tmp;
  struct34_write_group(tmp.path());
  const Dataset whole = open(tmp.path().string());
  EXPECT_EQ(whole.variable_names(), (std::vector<std::string>{"rec", "t"}));
  EXPECT_EQ(whole["rec"].dtype().kind, DTypeKind::Record);
  EXPECT_EQ(whole["rec"].read().data.size(), 4u * 27);

  OpenOptions o;
  o.struct_fields = true;
  const Dataset split = open(tmp.path().string(), o);
  EXPECT_EQ(split.variable_names(),
            (std::vector<std::string>{"rec.id", "rec.flags", "rec.value", "rec.c", "rec.point.x", "rec.point.y", "t"}));
  const Variable& id = split["rec.id"];
  EXPECT_EQ(id.dims(), (std::vector<std::string>{"obs"}));
  EXPECT_EQ(id.attrs().value("long_name", ""), "observations");
  EXPECT_EQ(struct34_values<std::int32_t>(id.read()), (std::vector<std::int32_t>{-7, 993, -1, -1}));
  EXPECT_EQ(struct34_values<float>(split["rec.point.x"].read()), (std::vector<float>{0.0f, 1.5f, 0.5f, 0.5f}));
}

TEST(ZarrV3Struct, AStructNeedsNoEndian) {
  TempDir tmp;
  const json type = {{"name", "struct"},
                     {"configuration", {{"fields", json::array({{{"name", "a"}, {"data_type", "uint8"}},
                                                                {{"name", "b"}, {"data_type", "int8"}}})}}}};
  write_file(tmp.path() / "zarr.json",
             v3_array_json({2}, {2}, type, json::array({{{"name", "bytes"}}}), json{{"a", 7}, {"b", -1}}).dump());
  write_file(tmp.path() / "c" / "0", std::string("\x01\xfe\x02\x03", 4));
  const NDArray r = struct34_open(tmp.path())->read_all();
  ASSERT_EQ(r.data.size(), 4u);
  EXPECT_EQ(std::memcmp(r.data.data(), "\x01\xfe\x02\x03", 4), 0);
  // Multi-byte fields without an endian, as zarr-python 3 writes them (issue 48): little-endian.
  TempDir tmp2;
  write_file(tmp2.path() / "zarr.json",
             v3_array_json({2}, {2}, struct34_type(), json::array({{{"name", "bytes"}}}), kStruct34Fill).dump());
  write_file(tmp2.path() / "c" / "0", struct34_stored(struct34_record(0), false) + struct34_stored(struct34_record(1), false));
  const NDArray all = struct34_open(tmp2.path())->read_all();
  ASSERT_EQ(all.data.size(), 2u * 27);
  struct34_expect(all.data.data(), struct34_record(0), "record 0");
  struct34_expect(all.data.data() + 27, struct34_record(1), "record 1");
}

// Zarr v2: a NumPy structured dtype as .zarray lists it, big-endian fields, a base64 fill record.
TEST(ZarrV3Struct, V2StructuredDtypeReadsAsRecords) {
  TempDir tmp;
  const json dtype = json::array({json::array({"id", ">i4"}), json::array({"flags", "|u1"}), json::array({"value", ">f8"}),
                                  json::array({"c", ">c8"}),
                                  json::array({"point", json::array({json::array({"x", ">f4"}), json::array({"y", ">i2"})})})});
  // base64 of struct34_stored(fill, big): bytes computed here, encoded by the test's own table.
  const std::string fill_raw = struct34_stored(kStruct34FillRecord, true);
  static const char* b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string fill64;
  for (std::size_t i = 0; i < fill_raw.size(); i += 3) {
    std::uint32_t n = static_cast<std::uint8_t>(fill_raw[i]) << 16;
    if (i + 1 < fill_raw.size()) n |= static_cast<std::uint8_t>(fill_raw[i + 1]) << 8;
    if (i + 2 < fill_raw.size()) n |= static_cast<std::uint8_t>(fill_raw[i + 2]);
    fill64 += b64[(n >> 18) & 63];
    fill64 += b64[(n >> 12) & 63];
    fill64 += i + 1 < fill_raw.size() ? b64[(n >> 6) & 63] : '=';
    fill64 += i + 2 < fill_raw.size() ? b64[n & 63] : '=';
  }
  const json zarray = {{"zarr_format", 2}, {"shape", {4}}, {"chunks", {2}}, {"dtype", dtype}, {"compressor", nullptr},
                       {"filters", nullptr}, {"fill_value", fill64}, {"order", "C"}};
  write_file(tmp.path() / ".zarray", zarray.dump());
  write_file(tmp.path() / "0", struct34_stored(struct34_record(0), true) + struct34_stored(struct34_record(1), true));
  ArrayPtr a = struct34_open(tmp.path());
  EXPECT_EQ(a->dtype().name(), "struct{id: int32, flags: uint8, value: float64, c: complex64, point: struct{x: float32, y: int16}}");
  const NDArray r = a->read_all();
  struct34_expect(r.data.data(), struct34_record(0), "v2 0");
  struct34_expect(r.data.data() + 27, struct34_record(1), "v2 1");
  struct34_expect(r.data.data() + 54, kStruct34FillRecord, "v2 fill");
  // Fields in two byte orders, sub-arrays: refused naming the field.
  TempDir mixed;
  json bad = zarray;
  bad["fill_value"] = nullptr;
  bad["dtype"] = json::array({json::array({"a", "<i4"}), json::array({"b", ">f8"})});
  write_file(mixed.path() / ".zarray", bad.dump());
  std::string e = message_of<MetadataError>([&] { struct34_open(mixed.path()); });
  EXPECT_NE(e.find("field 'b' has another byte order"), std::string::npos) << e;
  bad["dtype"] = json::array({json::array({"a", "<i4", json::array({2})})});
  write_file(mixed.path() / ".zarray", bad.dump());
  e = message_of<MetadataError>([&] { struct34_open(mixed.path()); });
  EXPECT_NE(e.find("field 'a' is a sub-array"), std::string::npos) << e;
}

}  // namespace
}  // namespace lazycube
