// What the fuzzers (fuzz/, docs/fuzzing.md) found, kept as unit tests so the regular build checks
// the fixes too: each input once escaped as an untyped exception or undefined behaviour, and
// now ends in a typed error naming what was wrong (or a documented "not understood").
#include <gtest/gtest.h>

#include <cstring>
#include <flatbuffers/flexbuffers.h>

#include "../../src/icechunk/repo_config.hpp"
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

// A reference date outside datetime64[ns] is not understood (the numbers stay undecoded).
TEST(FuzzFindings, ReferenceYearOutsideDatetime64) {
  EXPECT_FALSE(cf::parse_datetime("3800-01-01"));
  EXPECT_FALSE(cf::parse_time_units("hours since 3800-01-01 00:00:00.0"));
  EXPECT_TRUE(cf::parse_time_units("hours since 2200-01-01"));
  const auto plan = CfDecoding::plan(DataType::int_(4), {{"units", "hours since 3800-01-01"}}, {.name = "t"});
  EXPECT_TRUE(plan.is_identity());
}

}  // namespace
}  // namespace lazycube
