// Kerchunk JSON parsing: versions 0 and 1, inline text and base64, [url] and
// [url, offset, length], templates, gen (ranges, lists, arithmetic), and malformed sets
// (MetadataError naming the key or the part that is wrong).
#include <gtest/gtest.h>

#include "refs/reference_spec.hpp"
#include "lazycube/error.hpp"
#include "test_support.hpp"

using namespace lazycube;
using namespace lazycube::refs;
using lazycube::test::message_of;

namespace {

const ReferenceEntry& entry(const ReferenceSet& s, const std::string& key) {
  auto it = s.entries.find(key);
  if (it == s.entries.end()) throw std::runtime_error("no key " + key);
  return it->second;
}

std::string parse_error(const std::string& json) {
  return message_of<MetadataError>([&] { parse_reference_set(json, "'t.json'"); });
}

}  // namespace

TEST(ReferenceSpec, Version0InlineBase64AndRanges) {
  const auto s = parse_reference_set(
      R"({".zgroup": "{\"zarr_format\": 2}", "a/0": "base64:AAECAw==", "a/1": ["data.bin", 10, 20],
          "a/2": ["s3://b/whole.bin"], "meta": {"x": [1, 2]}})",
      "t");
  ASSERT_EQ(s.entries.size(), 5u);
  EXPECT_EQ(entry(s, ".zgroup").data, R"({"zarr_format": 2})");
  EXPECT_TRUE(entry(s, ".zgroup").is_inline());
  EXPECT_EQ(entry(s, "a/0").data, std::string("\x00\x01\x02\x03", 4));
  const auto& r = entry(s, "a/1");
  ASSERT_FALSE(r.is_inline());
  EXPECT_EQ(s.targets[r.target], "data.bin");
  EXPECT_EQ(r.offset, 10u);
  EXPECT_EQ(r.length, 20u);
  EXPECT_EQ(entry(s, "a/2").length, ReferenceEntry::kWholeObject);
  EXPECT_EQ(s.targets[entry(s, "a/2").target], "s3://b/whole.bin");
  EXPECT_EQ(entry(s, "meta").data, R"({"x":[1,2]})");  // an inline JSON object, minified
}

TEST(ReferenceSpec, Version1TemplatesAndGen) {
  const auto s = parse_reference_set(R"({
    "version": 1,
    "templates": {"u": "http://h/data", "f": "file"},
    "refs": {".zgroup": "{}", "x/0": ["{{u}}/{{ f }}.nc", 0, 8], "x/1": ["{{u}}/{{f}}.nc", 8, 8]},
    "gen": [{"key": "y/{{i}}.{{j}}", "url": "{{u}}/g_{{i}}.bin", "offset": "{{ (j + 1) * 100 - 100 }}",
             "length": "100", "dimensions": {"i": {"stop": 2}, "j": [0, 2]}},
            {"key": "z/{{k}}", "url": "w_{{k}}.bin", "dimensions": {"k": {"start": 6, "stop": 0, "step": -3}}}]
  })",
                                     "t");
  EXPECT_EQ(s.targets[entry(s, "x/0").target], "http://h/data/file.nc");
  EXPECT_EQ(entry(s, "x/0").target, entry(s, "x/1").target);  // one target, shared
  // i in range(2) x j in [0, 2], last dimension fastest.
  for (int i = 0; i < 2; ++i)
    for (int j : {0, 2}) {
      const auto& e = entry(s, "y/" + std::to_string(i) + "." + std::to_string(j));
      EXPECT_EQ(s.targets[e.target], "http://h/data/g_" + std::to_string(i) + ".bin");
      EXPECT_EQ(e.offset, static_cast<std::uint64_t>(j * 100));
      EXPECT_EQ(e.length, 100u);
    }
  EXPECT_EQ(s.entries.count("y/0.1"), 0u);
  EXPECT_EQ(s.targets[entry(s, "z/6").target], "w_6.bin");
  EXPECT_EQ(entry(s, "z/3").length, ReferenceEntry::kWholeObject);
  EXPECT_EQ(s.entries.count("z/0"), 0u);  // stop is exclusive
}

TEST(ReferenceSpec, TemplateArithmeticFollowsPython) {
  const std::map<std::string, std::int64_t> ints{{"i", 7}, {"n", -7}};
  EXPECT_EQ(render_template("{{ i * 3 + 1 }}", ints, {}, "t"), "22");
  EXPECT_EQ(render_template("{{i // 2}}-{{ i % 3 }}", ints, {}, "t"), "3-1");
  EXPECT_EQ(render_template("{{ n // 2 }} {{ n % 3 }}", ints, {}, "t"), "-4 2");  // floor semantics
  EXPECT_EQ(render_template("a{{s}}b", {}, {{"s", "X"}}, "t"), "aXb");
  EXPECT_NE(message_of<MetadataError>([&] { render_template("{{ q }}", ints, {}, "key 'k'"); }).find("unknown name 'q'"),
            std::string::npos);
  EXPECT_NE(message_of<MetadataError>([&] { render_template("{{ i / 0 }}", ints, {}, "t"); }).find("division by zero"),
            std::string::npos);
  EXPECT_NE(message_of<MetadataError>([&] { render_template("{{ i ", ints, {}, "t"); }).find("without '}}'"),
            std::string::npos);
}

TEST(ReferenceSpec, MalformedSetsNameTheKey) {
  EXPECT_NE(parse_error("{not json").find("is not valid JSON"), std::string::npos);
  EXPECT_NE(parse_error("[1, 2]").find("must be a JSON object"), std::string::npos);
  EXPECT_NE(parse_error(R"({"a/0": 5})").find("key 'a/0'"), std::string::npos);
  EXPECT_NE(parse_error(R"({"a/0": ["f", 1]})").find("[url] or [url, offset, length]"), std::string::npos);
  EXPECT_NE(parse_error(R"({"a/1": ["f", -1, 4]})").find("key 'a/1': offset must not be negative"), std::string::npos);
  EXPECT_NE(parse_error(R"({"a/2": ["f", 1, "x"]})").find("key 'a/2': length"), std::string::npos);
  EXPECT_NE(parse_error(R"({"a/3": [7, 1, 2]})").find("key 'a/3': the target url must be a string"), std::string::npos);
  EXPECT_NE(parse_error(R"({"a/4": "base64:@@@"})").find("key 'a/4': invalid base64"), std::string::npos);
  EXPECT_NE(parse_error(R"({"a/5": ["f", 18446744073709551615, 2]})").find("key 'a/5': offset + length overflows"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"version": 2, "refs": {}})").find("unsupported 'version' 2"), std::string::npos);
  EXPECT_NE(parse_error(R"({"version": 1})").find("needs a 'refs' object"), std::string::npos);
  EXPECT_NE(parse_error(R"({"version": 1, "refs": {"k": ["{{nope}}/f", 0, 1]}})").find("unknown name 'nope'"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"version": 1, "refs": {}, "gen": [{"key": "k{{i}}", "url": "u",
            "dimensions": {"i": {"start": 0}}}]})")
                .find("gen[0], dimension 'i': has no 'stop'"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"version": 1, "refs": {}, "gen": [{"key": "k{{i}}", "url": "u", "offset": "1",
            "dimensions": {"i": [1]}}]})")
                .find("needs both 'offset' and 'length'"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"version": 1, "refs": {}, "gen": [{"key": "k{{i}}", "url": "u",
            "dimensions": {"i": {"stop": 100000}, "j": {"stop": 100000}}}]})")
                .find("expands to more than"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"version": 1, "refs": {}, "gen": [{"key": "k{{i}}", "url": "u", "offset": "{{i - 5}}",
            "length": "1", "dimensions": {"i": [1]}}]})")
                .find("offset '-4' is not a non-negative integer"),
            std::string::npos);
}

TEST(ReferenceSpec, DetectsReferenceSets) {
  EXPECT_TRUE(is_reference_set(R"({"version": 1, "refs": {}})"));
  EXPECT_TRUE(is_reference_set(R"({".zgroup": "{}", "x/0": ["f"]})"));
  EXPECT_TRUE(is_reference_set(R"({"grp/x/.zarray": "{}"})"));
  EXPECT_FALSE(is_reference_set(R"({"zarr_format": 3, "node_type": "group"})"));  // a zarr.json
  EXPECT_FALSE(is_reference_set("not json"));
  EXPECT_FALSE(is_reference_set("[]"));
}
