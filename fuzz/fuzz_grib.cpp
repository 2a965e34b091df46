// The virtual GRIB codec (src/codec/grib_codec.cpp) on hostile bytes: a chunk that claims to be
// a GRIB message, decoded as kerchunk's v2 `grib` filter and as the v3 `gribberish` codec. A
// decode must return the message's field within the declared bound, or throw CodecError; ecCodes
// must never read past the chunk (the codec checks the message's length and end first).
//
// Input: mode, two bytes of declared element count (little endian), then the chunk's bytes.
// Modes: 0 v2 decode bounded by 1 MiB, 1 v2 decode with the exact size of the declared count,
// 2 v3 gribberish into a chunk of the declared count (float64), 3 the same as float32 and var
// latitude. Seeds (fuzz/corpus/grib): ecCodes' GRIB1 and GRIB2 samples, with and without a
// bitmap, written by grib_set (docs/fuzzing.md).
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "fuzz_common.hpp"
#include "lazycube/codec/codec.hpp"

using namespace lazycube;
using nlohmann::json;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Input in(data, size);
  const int mode = in.byte() % 4;
  const std::uint64_t count = in.byte() | (std::uint64_t{in.byte()} << 8);
  const std::string_view rest = in.rest();
  // A copy of exactly the chunk's bytes, so that AddressSanitizer sees any read past its end.
  const std::unique_ptr<std::byte[]> copy(new std::byte[rest.size() + 1]);
  std::memcpy(copy.get(), rest.data(), rest.size());
  const ByteView chunk(copy.get(), rest.size());
  if (mode < 2) {
    std::shared_ptr<const codec::BytesToBytesCodec> c;
    fuzz::typed_or_valid([&] { c = codec::make_v2_bytes_codec(json{{"id", "grib"}}, DataType::float_(8)); });
    if (!c) return 0;  // a build without ecCodes refuses the codec
    codec::DecodeLimits limits;
    limits.max_size = mode == 0 ? std::uint64_t{1} << 20 : count * 8;
    if (mode == 1) limits.exact_size = count * 8;
    Buffer scratch;
    fuzz::typed_or_valid([&] {
      const ByteView out = c->decode(chunk, scratch, limits);
      fuzz::check(out.size() <= limits.max_size, "grib decoded past the limit");
      fuzz::check(mode != 1 || out.size() == count * 8, "grib decoded another size than the exact one");
    });
    return 0;
  }
  const DataType dtype = mode == 2 ? DataType::float_(8) : DataType::float_(4);
  const codec::ChunkSpec spec{dtype, {count}};
  std::shared_ptr<const codec::ArrayToBytesCodec> c;
  fuzz::typed_or_valid([&] {
    c = codec::make_array_to_bytes_codec("gribberish", mode == 2 ? json::object() : json{{"var", "latitude"}}, spec);
  });
  if (!c) return 0;
  Buffer dest(spec.nbytes());
  fuzz::typed_or_valid([&] { c->decode_into(chunk, spec, dest.span()); });
  return 0;
}
