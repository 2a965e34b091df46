// Every registered codec, taken from the registry itself (no list of names here): it builds
// under each name it is registered under (Zarr v2 id, v3 name, numcodecs.<id>), round-trips a
// sample chunk, reports bad configuration naming itself and the key, survives corrupt input,
// and enforces the decoded size. A codec needs a sample below; a registered codec without one
// fails. And every codec source file in src/codec must have registered a codec.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <nlohmann/json.hpp>

#include "grib_test_messages.hpp"
#include "test_codec_helpers.hpp"

namespace lazycube::codec::testing {
namespace {

// What one codec is tested with: a decoded chunk and a configuration that builds (the v3
// "configuration"; the v2 object is the same plus "id"), and a bad value for one key.
struct Sample {
  ChunkSpec spec;
  ChunkData data;
  nlohmann::json config = nlohmann::json::object();
  std::string bad_key;  // empty: the codec takes no configuration
  nlohmann::json bad_value;
  // Decode-only codecs (GRIB): the encoded chunk whose decoding is `data`, made by the format's
  // own library; empty: the codec's encode() makes it.
  std::vector<std::byte> encoded{};
};

template <class T>
ChunkData numbers(std::size_t n, T (*value)(std::size_t)) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = value(i);
  ChunkData d;
  d.bytes = Buffer::copy_of(view(as_bytes(v)));
  return d;
}
ChunkData ints(std::size_t n) {
  return numbers<std::int32_t>(n, [](std::size_t i) { return static_cast<std::int32_t>(i * 7 % 50) - 20; });
}
ChunkData halves(std::size_t n) {  // exactly representable after quantize(digits=3)
  return numbers<double>(n, [](std::size_t i) { return static_cast<double>(i % 40) * 0.5 - 3; });
}
ChunkData bits(std::size_t n) {
  return numbers<std::uint8_t>(n, [](std::size_t i) { return static_cast<std::uint8_t>(i % 3 == 0); });
}
ChunkData strings(const std::vector<std::string>& s) {
  ChunkData d;
  d.strings = s;
  return d;
}
ChunkData utf32(const std::vector<std::string>& s, std::size_t chars) {  // numpy '<U' cells
  std::vector<std::byte> out;
  for (const auto& text : s)
    for (std::size_t i = 0; i < chars; ++i) {
      const std::uint32_t c = i < text.size() ? static_cast<unsigned char>(text[i]) : 0;
      const auto* p = reinterpret_cast<const std::byte*>(&c);
      out.insert(out.end(), p, p + 4);
    }
  ChunkData d;
  d.bytes = Buffer::copy_of(view(out));
  return d;
}

#ifdef LAZYCUBE_HAVE_ECCODES
// A GRIB2 message of ecCodes' sample grid (16 x 31) and ecCodes' decoding of it.
Sample grib_sample() {
  Sample s;
  s.encoded = test::grib::sample_message("GRIB2", [](std::size_t i) { return 250.0 + static_cast<double>(i % 40) * 0.5; });
  const auto values = test::grib::decode(s.encoded);
  s.spec = spec_of(DataType::float_(8), {16, 31});
  s.data.bytes = Buffer::copy_of(view(as_bytes(values)));
  s.config = {{"var", "t"}};
  s.bad_key = "var";
  s.bad_value = 7;
  return s;
}
#endif

const Sample* sample_for(std::string_view id) {
  using nlohmann::json;
  const ChunkSpec i4 = spec_of(DataType::int_(4), {250});
  static const std::map<std::string, Sample, std::less<>> samples = {
      {"blosc", {i4, ints(250), {{"cname", "zstd"}, {"clevel", 5}, {"shuffle", "shuffle"},
                                 {"typesize", 4}, {"blocksize", 0}}, "clevel", 12}},
      {"zstd", {i4, ints(250), {{"level", 3}}, "level", "high"}},
      {"lz4", {i4, ints(250), {{"acceleration", 1}}, "acceleration", "fast"}},
      {"gzip", {i4, ints(250), {{"level", 5}}, "level", 42}},
      {"zlib", {i4, ints(250), {{"level", 5}}, "level", 42}},
      {"bz2", {i4, ints(250), {{"level", 5}}, "level", 42}},
      {"lzma", {i4, ints(250), {{"format", 1}, {"check", 0}, {"preset", 1}}, "format", 7}},
      {"crc32c", {i4, ints(250)}},
      {"adler32", {i4, ints(250)}},
      {"crc32", {i4, ints(250)}},
      {"fletcher32", {i4, ints(250)}},
      {"shuffle", {i4, ints(250), {{"elementsize", 4}}, "elementsize", "four"}},
      {"delta", {i4, ints(250), {{"dtype", "<i4"}}, "dtype", "<x9"}},
      {"fixedscaleoffset",
       {i4, ints(250), {{"offset", 5}, {"scale", 1}, {"dtype", "<i4"}, {"astype", "<i2"}}, "astype", "<x9"}},
      {"quantize", {spec_of(DataType::float_(8), {250}), halves(250), {{"digits", 3}, {"dtype", "<f8"}},
                    "dtype", "<i4"}},
      {"astype", {i4, ints(250), {{"encode_dtype", "<i2"}, {"decode_dtype", "<i4"}}, "encode_dtype", "<x9"}},
      {"packbits", {spec_of(DataType::boolean(), {250}), bits(250)}},
      {"categorize", {spec_of(DataType::unicode(3), {5}), utf32({"a", "bb", "ccc", "a", "bb"}, 3),
                      {{"labels", {"a", "bb", "ccc"}}, {"dtype", "<U3"}, {"astype", "|u1"}}, "dtype", "|O"}},
      {"bytes", {i4, ints(250), {{"endian", "big"}}, "endian", "middle"}},
      {"transpose", {spec_of(DataType::int_(4), {10, 25}), ints(250), {{"order", {1, 0}}}, "order", {0, 0}}},
      {"vlen-utf8", {spec_of(DataType::string(), {4}), strings({"", "a", "héllo", "zz"})}},
      {"vlen-bytes", {spec_of(DataType::vlen_bytes(), {3}), strings({"\x01\x02", "", "xyz"})}},
      {"scale_offset", {i4, ints(250), {{"offset", 5}, {"scale", 1}}, "scale", "ten"}},
      {"cast_value", {i4, ints(250), {{"data_type", "int16"}, {"out_of_range", "clamp"}}, "rounding", "sideways"}},
      {"bitround", {spec_of(DataType::float_(8), {250}), halves(250), {{"keepbits", 10}}, "keepbits", -1}},
      {"reshape", {spec_of(DataType::int_(4), {10, 25}), ints(250), {{"shape", json::array({-1})}}, "shape", json::array({7})}},
      {"zfp", {spec_of(DataType::int_(4), {10, 25}), ints(250), {{"mode", "reversible"}}, "mode", "lossy"}},
      {"optional", {i4, ints(250), json::parse(R"({"codecs": [{"name": "zstd"}]})"), "header_bits", 3}},
      {"conditional", {i4, ints(250), json::parse(R"({"codecs": [{"name": "gzip"}]})"), "header_bits", 3}},
#ifdef LAZYCUBE_HAVE_ECCODES
      {"gribberish", grib_sample()},
      {"grib", grib_sample()},
#endif
  };
  const auto it = samples.find(id);
  return it == samples.end() ? nullptr : &it->second;
}

std::vector<std::byte> bytes_of(const ChunkData& d) { return {d.bytes.view().begin(), d.bytes.view().end()}; }

nlohmann::json v2_object(const RegisteredCodec& c, nlohmann::json config) {
  config["id"] = c.v2_id;
  return config;
}

void expect_same_chunk(const ChunkData& got, const ChunkData& want) {
  EXPECT_EQ(got.strings, want.strings);
  EXPECT_EQ(bytes_of(got), bytes_of(want));
}

// The bytes->bytes codec a registered codec is under `name` (v3) or its v2 id.
std::shared_ptr<const BytesToBytesCodec> bytes_codec(const RegisteredCodec& c, const Sample& s,
                                                     const std::string& name) {
  if (name == c.v2_id) return make_v2_bytes_codec(v2_object(c, s.config), s.spec.dtype);
  return make_bytes_codec(name, s.config, s.spec);
}

// Names under which the codec is a bytes->bytes codec: its v2 id (v2 has no other kind, bar
// the object codecs) and, for v3 bytes->bytes codecs, its v3 names.
std::vector<std::string> bytes_names(const RegisteredCodec& c) {
  std::vector<std::string> names;
  if (!c.v2_id.empty() && !is_v2_object_codec(c.v2_id)) names.push_back(c.v2_id);
  if (c.kind == CodecKind::BytesToBytes) names.insert(names.end(), c.v3_names.begin(), c.v3_names.end());
  return names;
}

// Calls fn(codec, data, encoded) for the codec under each of its bytes->bytes names, with the
// sample's bytes and their encoding.
template <class Fn>
void for_each_bytes_codec(const RegisteredCodec& c, const Sample& s, Fn fn) {
  const auto data = bytes_of(s.data);
  for (const auto& name : bytes_names(c)) {
    SCOPED_TRACE(name);
    const auto codec = bytes_codec(c, s, name);
    const Buffer enc = s.encoded.empty() ? codec->encode(view(data)) : Buffer::copy_of(view(s.encoded));
    fn(*codec, data, enc.view());
  }
}

class RegisteredCodecs : public ::testing::TestWithParam<RegisteredCodec> {
 protected:
  void SetUp() override {
#ifndef LAZYCUBE_HAVE_ZFP
    if (GetParam().id == "zfp") GTEST_SKIP() << "built without libzfp";
#endif
#ifndef LAZYCUBE_HAVE_ECCODES
    if (GetParam().id == "gribberish" || GetParam().id == "grib") GTEST_SKIP() << "built without ecCodes";
#endif
    sample_ = sample_for(GetParam().id);
    ASSERT_NE(sample_, nullptr) << "codec '" << GetParam().id << "' (registered in "
                                << GetParam().source_file << ") has no sample in " << __FILE__;
  }
  const Sample* sample_ = nullptr;
};

TEST_P(RegisteredCodecs, HasANameAndBuildsUnderEach) {
  const RegisteredCodec& c = GetParam();
  EXPECT_FALSE(c.v2_id.empty() && c.v3_names.empty()) << "no name metadata can use";
  for (const auto& name : c.v3_names) EXPECT_EQ(v3_codec_kind(name), c.kind) << name;
  if (!c.v2_id.empty() && is_v2_object_codec(c.v2_id)) {
    EXPECT_EQ(c.kind, CodecKind::ArrayToBytes);
    EXPECT_EQ(make_v2_object_codec({{"id", c.v2_id}})->name(), c.v2_id);
  }
}

TEST_P(RegisteredCodecs, RoundTripsASampleChunk) {
  const RegisteredCodec& c = GetParam();
  const Sample& s = *sample_;
  for_each_bytes_codec(c, s, [](const BytesToBytesCodec& codec, const auto& data, ByteView enc) {
    EXPECT_EQ(decode_exact(codec, enc, data.size()), data);
    EXPECT_EQ(decode_unbounded(codec, enc), data);
    std::vector<std::byte> dest(data.size());
    codec.decode_into(enc, {dest.data(), dest.size()});
    EXPECT_EQ(dest, data);
  });
  for (const auto& name : c.v3_names) {
    SCOPED_TRACE(name);
    if (c.kind == CodecKind::ArrayToArray) {
      const auto a = make_array_codec(name, s.config, s.spec);
      EXPECT_EQ(a->name(), name);
      ChunkData enc, dec;
      a->encode(s.data, s.spec, enc);
      a->decode(enc, s.spec, dec);
      expect_same_chunk(dec, s.data);
    } else if (c.kind == CodecKind::ArrayToBytes) {
      const auto a = make_array_to_bytes_codec(name, s.config, s.spec);
      const Buffer enc = s.encoded.empty() ? a->encode(s.data, s.spec) : Buffer::copy_of(view(s.encoded));
      ChunkData dec;
      a->decode(enc.view(), s.spec, dec);
      expect_same_chunk(dec, s.data);
    }
  }
}

TEST_P(RegisteredCodecs, BadConfigurationNamesTheCodecAndKey) {
  const RegisteredCodec& c = GetParam();
  const Sample& s = *sample_;
  if (s.bad_key.empty()) {
    // No configuration to get wrong: an empty one builds under every name.
    for (const auto& name : bytes_names(c)) EXPECT_NO_THROW(bytes_codec(c, s, name)) << name;
    for (const auto& name : c.v3_names) {
      if (c.kind == CodecKind::ArrayToBytes) {
        EXPECT_NO_THROW(make_array_to_bytes_codec(name, nlohmann::json::object(), s.spec)) << name;
      }
    }
    return;
  }
  nlohmann::json bad = s.config;
  bad[s.bad_key] = s.bad_value;
  const std::string key = "'" + s.bad_key + "'";
  for (const auto& name : c.v3_names) {
    SCOPED_TRACE(name);
    const auto build = [&] {
      switch (c.kind) {
        case CodecKind::BytesToBytes: (void)make_bytes_codec(name, bad, s.spec); break;
        case CodecKind::ArrayToArray: (void)make_array_codec(name, bad, s.spec); break;
        case CodecKind::ArrayToBytes: (void)make_array_to_bytes_codec(name, bad, s.spec); break;
      }
    };
    EXPECT_CODEC_ERROR(build(), "'" + name + "'");
    EXPECT_CODEC_ERROR(build(), key);
  }
  if (!c.v2_id.empty() && !is_v2_object_codec(c.v2_id)) {
    EXPECT_CODEC_ERROR(make_v2_bytes_codec(v2_object(c, bad), s.spec.dtype), "'" + c.v2_id + "'");
    EXPECT_CODEC_ERROR(make_v2_bytes_codec(v2_object(c, bad), s.spec.dtype), key);
  }
}

TEST_P(RegisteredCodecs, CorruptInputFailsCleanly) {
  // Every byte flipped in turn: decoding either fails with CodecError or yields output of the
  // expected size (formats without checksums cannot always tell).
  for_each_bytes_codec(GetParam(), *sample_, [](const BytesToBytesCodec& codec, const auto& data, ByteView enc) {
    for (std::size_t i = 0; i < enc.size(); ++i) {
      std::vector<std::byte> bad(enc.begin(), enc.end());
      bad[i] ^= std::byte{0x5a};
      try {
        EXPECT_EQ(decode_exact(codec, view(bad), data.size()).size(), data.size());
      } catch (const CodecError&) {
      }
      try {
        (void)decode_unbounded(codec, view(bad));
      } catch (const CodecError&) {
      }
    }
  });
}

TEST_P(RegisteredCodecs, DecodeEnforcesTheExpectedSize) {
  for_each_bytes_codec(GetParam(), *sample_, [](const BytesToBytesCodec& codec, const auto& data, ByteView enc) {
    EXPECT_THROW(decode_exact(codec, enc, data.size() - 4), CodecError);
    EXPECT_THROW(decode_exact(codec, enc, data.size() + 4), CodecError);
    std::vector<std::byte> small(data.size() - 4), large(data.size() + 4);
    EXPECT_THROW(codec.decode_into(enc, {small.data(), small.size()}), CodecError);
    EXPECT_THROW(codec.decode_into(enc, {large.data(), large.size()}), CodecError);
    Buffer scratch;
    DecodeLimits limits;
    limits.max_size = data.size() / 2;
    EXPECT_THROW(codec.decode(enc, scratch, limits), CodecError);
  });
}

INSTANTIATE_TEST_SUITE_P(Registry, RegisteredCodecs, ::testing::ValuesIn(registered_codecs()),
                         codec_case_name);

TEST(CodecRegistry, EveryCodecSourceFileRegistersACodec) {
  // A file under src/codec that defines a codec class must have registered a codec (adding a
  // codec without LAZYCUBE_REGISTER_CODEC fails here), unless it says it registers none
  // (a wrapper around registered codecs).
  namespace fs = std::filesystem;
  std::set<std::string> registering;
  for (const auto& c : registered_codecs())
    registering.insert(fs::path(c.source_file).filename().string());
  const std::regex codec_class(
      R"(:\s*public\s+(BytesToBytesCodec|ArrayToArrayCodec|ArrayToBytesCodec|ElementFilter)\b)");
  int codec_files = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(LAZYCUBE_SOURCE_DIR) / "src" / "codec")) {
    if (entry.path().extension() != ".cpp") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string src = text.str();
    const std::string file = entry.path().filename().string();
    if (!std::regex_search(src, codec_class) && src.find("LAZYCUBE_REGISTER_CODEC(") == std::string::npos)
      continue;
    if (src.find("registers no codec") != std::string::npos) continue;
    ++codec_files;
    EXPECT_TRUE(registering.contains(file)) << file << " defines a codec but registered none";
  }
  EXPECT_GT(codec_files, 10);
  for (const auto& f : registering)
    EXPECT_TRUE(fs::exists(fs::path(LAZYCUBE_SOURCE_DIR) / "src" / "codec" / f)) << f;
}

TEST(CodecRegistry, V2IdsAndV3NamesAreUnique) {
  std::set<std::string> v2, v3;
  for (const auto& c : registered_codecs()) {
    if (!c.v2_id.empty()) {
      EXPECT_TRUE(v2.insert(c.v2_id).second) << c.v2_id;
    }
    for (const auto& n : c.v3_names) EXPECT_TRUE(v3.insert(n).second) << n;
  }
}

}  // namespace
}  // namespace lazycube::codec::testing
