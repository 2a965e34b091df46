// Every codec's decode on hostile bytes, bounded by what the metadata declares: the Zarr v2
// compressors and numcodecs filters (bytes->bytes), the vlen array->bytes codecs, and the
// sharding codec (its index and a whole shard).
//
// Input: codec selector, mode, two bytes of declared element count (little endian), then the
// encoded bytes. Modes of a bytes->bytes codec: 0 decode with only a size bound, 1 decode with
// the exact size, 2 decode_into a buffer of the declared size. Whatever the stream says, a
// decode must return at most (exactly, for 1) the declared size, or throw CodecError.
#include <memory>
#include <nlohmann/json.hpp>

#include "../src/zarr/sharding_codec.hpp"
#include "codec_cases.hpp"
#include "fuzz_common.hpp"
#include "lazycube/codec/codec.hpp"

using namespace lazycube;
using nlohmann::json;

namespace {

using namespace lazycube::fuzz;

DataType dtype_of(const char* typestr) { return parse_numpy_dtype(typestr).dtype; }

void fuzz_bytes_codec(const BytesCase& c, int mode, std::uint64_t count, ByteView encoded) {
  const DataType dtype = dtype_of(c.dtype);
  std::shared_ptr<const codec::BytesToBytesCodec> codec;
  const bool built = fuzz::typed_or_valid([&] { codec = codec::make_v2_bytes_codec(json::parse(c.config), dtype); });
  fuzz::check(built, std::string("the fuzz target's codec does not build: ") + c.config);
  const std::uint64_t declared = count * dtype.itemsize;
  if (mode == 2) {
    Buffer dest(declared);
    fuzz::typed_or_valid([&] { codec->decode_into(encoded, dest.span()); });
    return;
  }
  codec::DecodeLimits limits;
  limits.max_size = declared;  // 0: no bound but kMaxUnboundedDecode
  if (mode == 1) limits.exact_size = declared;
  const std::uint64_t cap = mode == 1 || declared != 0 ? declared : codec::kMaxUnboundedDecode;
  Buffer scratch;
  fuzz::typed_or_valid([&] {
    const ByteView out = codec->decode(encoded, scratch, limits);
    fuzz::check(out.size() <= cap, codec->name() + " decoded " + std::to_string(out.size()) +
                                       " bytes past the limit of " + std::to_string(cap));
    fuzz::check(mode != 1 || out.size() == declared, codec->name() + " decoded " + std::to_string(out.size()) +
                                                          " bytes, not the exact " + std::to_string(declared));
    const auto inside = [&](ByteView whole) {
      return out.empty() || (out.data() >= whole.data() && out.data() + out.size() <= whole.data() + whole.size());
    };
    fuzz::check(inside(encoded) || inside(scratch.view()), codec->name() + " returned bytes outside its buffers");
  });
}

void fuzz_vlen(bool utf8, std::uint64_t count, ByteView encoded) {
  const codec::ChunkSpec spec{utf8 ? DataType::string() : DataType::vlen_bytes(), {count}};
  std::shared_ptr<const codec::ArrayToBytesCodec> codec;
  fuzz::check(fuzz::typed_or_valid([&] {
    codec = codec::make_v2_object_codec(json{{"id", utf8 ? "vlen-utf8" : "vlen-bytes"}});
  }), "vlen codec does not build");
  fuzz::typed_or_valid([&] {
    codec::ChunkData out;
    codec->decode(encoded, spec, out);
    fuzz::check(out.strings.size() == count, "vlen decoded " + std::to_string(out.strings.size()) +
                                                 " strings, the chunk has " + std::to_string(count));
  });
}

void fuzz_shard(const char* config, int mode, ByteView encoded) {
  const codec::ChunkSpec shard{DataType::int_(2), {4, 4}};
  std::unique_ptr<zarr::ShardingCodec> codec;
  fuzz::check(fuzz::typed_or_valid([&] { codec = std::make_unique<zarr::ShardingCodec>(json::parse(config), shard, "fuzz"); }),
              "sharding codec does not build");
  if (mode == 0) {
    // The index alone, as the read path fetches it (a shard of encoded.size() + 64 bytes).
    fuzz::typed_or_valid([&] {
      const auto entries = codec->decode_index(encoded, encoded.size() + 64);
      fuzz::check(entries.size() == codec->num_inner_chunks(), "shard index with the wrong number of entries");
      for (const auto& e : entries)
        fuzz::check(!e || (e->offset <= encoded.size() + 64 && e->nbytes <= encoded.size() + 64 - e->offset),
                    "shard index entry outside the shard");
    });
    return;
  }
  fuzz::typed_or_valid([&] {
    codec::ChunkData out;
    codec->decode(encoded, shard, out);
    fuzz::check(out.bytes.size() == shard.nbytes(), "shard decoded to " + std::to_string(out.bytes.size()) + " bytes");
  });
  Buffer dest(shard.nbytes());
  fuzz::typed_or_valid([&] { codec->decode_into(encoded, shard, dest.span()); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Input in(data, size);
  const std::size_t which = in.byte() % (kBytesCount + 2 + kShardCount);
  const int mode = in.byte() % 3;
  const std::uint64_t count = in.byte() | (std::uint64_t{in.byte()} << 8);
  const std::string_view rest = in.rest();
  const ByteView encoded(reinterpret_cast<const std::byte*>(rest.data()), rest.size());
  if (which < kBytesCount) {
    fuzz_bytes_codec(kBytesCases[which], mode, count, encoded);
  } else if (which < kBytesCount + 2) {
    fuzz_vlen(which == kBytesCount, count, encoded);
  } else {
    fuzz_shard(kShardCases[which - kBytesCount - 2], mode, encoded);
  }
  return 0;
}
