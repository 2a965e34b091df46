// What the fuzzers (fuzz/, docs/fuzzing.md) found, kept as unit tests so the regular build checks
// the fixes too: each input once escaped as an untyped exception or undefined behaviour, and
// now ends in a typed error naming what was wrong (or a documented "not understood").
#include <gtest/gtest.h>

#include <cstring>
#include <flatbuffers/flexbuffers.h>

#include "icechunk/repo_config.hpp"
#include "refs/reference_spec.hpp"
#include "lazycube/dataset/cf.hpp"
#include "lazycube/dataset/cf_time.hpp"
#include "lazycube/error.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "test_support.hpp"

namespace lazycube {
namespace {

using test::message_of;

// nlohmann's parser throws out_of_range (not parse_error) for a number past double's range.
TEST(FuzzFindings, JsonNumberOverflowIsMetadataError) {
  auto store = make_memory_store();
  store->set("zarr.json", std::string_view(R"({"zarr_format": 3, "node_type": "group", "attributes": {"x": 1e444}})"));
  const std::string m = message_of<MetadataError>([&] { zarr::Hierarchy::open({store, ""}); });
  EXPECT_NE(m.find("malformed JSON in memory://zarr.json"), std::string::npos) << m;
  EXPECT_NE(m.find("number overflow"), std::string::npos) << m;
}

// flatbuffers 2.0.8's verifier accepts a FlexBuffers key without its terminating NUL.
TEST(FuzzFindings, FlexBuffersKeyWithoutEnd) {
  const std::uint8_t bytes[] = {0x09, 0x0a, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10,
                                0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x01};
  const std::string m = message_of<MetadataError>(
      [&] { icechunk::containers_from_flexbuffers(bytes, sizeof bytes, "memory://repo"); });
  EXPECT_NE(m.find("memory://repo: corrupt repository configuration"), std::string::npos) << m;
}

// Times past int64 nanoseconds: the multiplication overflowed (undefined behaviour).
TEST(FuzzFindings, TimeOutsideDatetime64IsCodecError) {
  const auto plan = CfDecoding::plan(DataType::int_(8), {{"units", "hours since 1900-01-01"}}, {.name = "time"});
  const std::int64_t values[] = {1, std::int64_t{1} << 33};
  std::int64_t out[2] = {};
  const std::string m = message_of<CodecError>([&] {
    plan.apply(ByteView(reinterpret_cast<const std::byte*>(values), sizeof values), 2,
               MutableByteView(reinterpret_cast<std::byte*>(out), sizeof out));
  });
  EXPECT_NE(m.find("variable 'time': the time 8.58993e+09 'hours since 1900-01-01' lies outside"), std::string::npos) << m;

  const auto days = CfDecoding::plan(DataType::float_(8), {{"units", "days"}}, {.name = "lead"});
  const double big[] = {1e300};
  EXPECT_NE(message_of<CodecError>([&] {
              days.apply(ByteView(reinterpret_cast<const std::byte*>(big), sizeof big), 1,
                         MutableByteView(reinterpret_cast<std::byte*>(out), 8));
            }).find("variable 'lead'"),
            std::string::npos);
}

// A fill value past int64 on datetime/timedelta storage was cast to int64 (undefined
// behaviour); it equals no stored value, so it masks nothing. Zero elements of complex or time
// storage passed null pointers to memcpy.
TEST(FuzzFindings, CfEdgeValues) {
  const auto plan = CfDecoding::plan(DataType::timedelta("s"), {{"missing_value", {-3e126, 7}}}, {.name = "lead"});
  const std::int64_t values[] = {7, 8};
  std::int64_t out[2] = {};
  plan.apply(ByteView(reinterpret_cast<const std::byte*>(values), sizeof values), 2,
             MutableByteView(reinterpret_cast<std::byte*>(out), sizeof out));
  EXPECT_EQ(out[0], cf::kNaT);
  EXPECT_NE(out[1], cf::kNaT);
  for (const DataType& t : {DataType::complex(8), DataType::datetime("ns")}) {
    const auto p = CfDecoding::plan(t, {{"_FillValue", 0}}, {.name = "x"});
    EXPECT_NO_THROW(p.apply(ByteView(), 0, MutableByteView()));
  }
}

// A reference date outside datetime64[ns] overflowed when parsed (undefined behaviour). It stays
// exact, so "hours since 0001-01-01" decodes the times that fit, as xarray does, and a time
// that does not fit is a CodecError.
TEST(FuzzFindings, ReferenceYearOutsideDatetime64) {
  const auto ref = cf::parse_datetime("0001-01-01");
  ASSERT_TRUE(ref);
  EXPECT_EQ(ref->seconds, -719162LL * 86400);
  EXPECT_TRUE(cf::parse_time_units("hours since 3800-01-01 00:00:00.0"));
  const auto plan = CfDecoding::plan(DataType::int_(4), {{"units", "hours since 1-1-1 00:00:00"}}, {.name = "time"});
  ASSERT_EQ(plan.decoded_dtype(), DataType::datetime("ns"));
  const std::int32_t hours[] = {719162 * 24, 719162 * 24 + 6};
  std::int64_t out[2] = {};
  plan.apply(ByteView(reinterpret_cast<const std::byte*>(hours), sizeof hours), 2,
             MutableByteView(reinterpret_cast<std::byte*>(out), sizeof out));
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 6LL * 3600 * 1'000'000'000);
  const std::int32_t early[] = {0};
  EXPECT_NE(message_of<CodecError>([&] {
              plan.apply(ByteView(reinterpret_cast<const std::byte*>(early), sizeof early), 1,
                         MutableByteView(reinterpret_cast<std::byte*>(out), 8));
            }).find("variable 'time': the time 0 'hours since 1-1-1 00:00:00' lies outside"),
            std::string::npos);
}

// kerchunk `gen` templates: integer arithmetic overflowed (undefined behaviour), and deep
// nesting recursed without bound.
TEST(FuzzFindings, TemplateArithmeticIsChecked) {
  const auto render = [](const std::string& t) { return refs::render_template(t, {{"i", 3}}, {}, "gen entry 0"); };
  EXPECT_EQ(render("{{ (i + 1) * 1000 }}"), "4000");
  EXPECT_EQ(render("{{ -7 // 2 }}_{{ -7 % 3 }}_{{ 7 % -3 }}"), "-4_2_-2");  // Python's floor division and modulo
  for (const std::string t : {"{{ 33333333333333333330 }}", "{{ 9223372036854775807 + 1 }}", "{{ 4611686018427387904 * 2 }}",
                              "{{ (0 - 9223372036854775807 - 1) // -1 }}"}) {
    const std::string m = message_of<MetadataError>([&] { render(t); });
    EXPECT_NE(m.find("in gen entry 0: the value does not fit a 64-bit integer"), std::string::npos) << t << ": " << m;
  }
  const std::string deep = "{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}";
  EXPECT_NE(message_of<MetadataError>([&] { render(deep); }).find("nested more than 200 levels deep"), std::string::npos);
}

// A config.yaml key that reads as another scalar (`true:`) was taken for a string.
TEST(FuzzFindings, YamlKeyThatIsNotAString) {
  const std::string yaml = "virtual_chunk_containers:\n  true:\n    url_prefix: s3://b/\n    store: !s3 {}\n";
  const auto cs = icechunk::containers_from_yaml(yaml, "config.yaml");
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].url_prefix, "s3://b/");
  EXPECT_EQ(cs[0].kind, "s3");
}

}  // namespace
}  // namespace lazycube
