// Codec interfaces, following the Zarr v3 model: array->array codecs, one array->bytes codec,
// bytes->bytes codecs. Zarr v2 compressors and numcodecs filters map onto the same interfaces.
// Decoding is the hot path; encoding exists so tests and the sample generator can write data.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "lazycube/dtype.hpp"
#include "lazycube/util/buffer.hpp"

namespace lazycube::codec {

// What a chunk is at one point of the chain: element type and shape (C order, native endian).
struct ChunkSpec {
  DataType dtype;
  std::vector<std::uint64_t> shape;

  std::uint64_t num_elements() const;
  // Byte size for fixed-size types; throws CodecError for variable-length types.
  std::uint64_t nbytes() const;
};

// A decoded chunk: raw native-endian C-order bytes for fixed-size types, or one string per
// element for variable-length types (String holds UTF-8, VlenBytes raw bytes).
struct ChunkData {
  Buffer bytes;
  std::vector<std::string> strings;
};

// Bounds on what a bytes->bytes decode may produce. Decoders must never allocate more than
// `max_size` however the input describes itself, and must fail if `exact_size` is set and the
// decoded size differs.
struct DecodeLimits {
  std::optional<std::uint64_t> exact_size;
  std::uint64_t max_size = 0;
};

class BytesToBytesCodec {
 public:
  virtual ~BytesToBytesCodec() = default;
  // Name as it appears in metadata (v2 id or v3 name), e.g. "zstd", "numcodecs.zlib".
  virtual std::string name() const = 0;
  // Decodes `in`. Returns either a view of `scratch` (which the codec resized and filled) or a
  // subspan of `in` (checksum codecs that only strip and verify). Throws CodecError.
  virtual ByteView decode(ByteView in, Buffer& scratch, const DecodeLimits& limits) const = 0;
  // Decodes straight into `dest`, which has exactly the decoded size. The default calls
  // decode() and copies; compressors override it to write in place.
  virtual void decode_into(ByteView in, MutableByteView dest) const;
  virtual Buffer encode(ByteView in) const = 0;
  // The most bytes any encoder of this format (not only ours) makes of `decoded` bytes: the
  // compressor's documented worst case, a checksum's 4 bytes. nullopt: no declared bound
  // (CodecPipeline::max_encoded_size then allows a generous 2x + 1 MiB). A read bound derived
  // from it must never refuse valid data, so err on the large side.
  virtual std::optional<std::uint64_t> max_encoded_size(std::uint64_t decoded) const {
    (void)decoded;
    return std::nullopt;
  }
  // When this codec changes the element type (numcodecs filters with `astype`), the type of
  // its encoded side given the decoded side's type; otherwise nullopt.
  virtual std::optional<DataType> encoded_dtype(const DataType& decoded) const {
    (void)decoded;
    return std::nullopt;
  }
  // Describes this codec for `info` output: {"name": ..., "configuration": {...}}.
  virtual nlohmann::json to_json() const = 0;
};

class ArrayToArrayCodec {
 public:
  virtual ~ArrayToArrayCodec() = default;
  virtual std::string name() const = 0;
  // The spec on the encoded side, given the decoded side.
  virtual ChunkSpec encoded_spec(const ChunkSpec& decoded) const = 0;
  // Turns data of `encoded_spec(decoded)` into data of `decoded`.
  virtual void decode(ChunkData& in, const ChunkSpec& decoded, ChunkData& out) const = 0;
  virtual void encode(const ChunkData& in, const ChunkSpec& decoded, ChunkData& out) const = 0;
  virtual nlohmann::json to_json() const = 0;
};

class ArrayToBytesCodec {
 public:
  virtual ~ArrayToBytesCodec() = default;
  virtual std::string name() const = 0;
  // Decodes `in` (fully bytes->bytes-decoded) into a chunk of `spec`. For fixed-size types
  // `out.bytes` gets exactly spec.nbytes(); for variable-length, `out.strings` gets
  // spec.num_elements() entries.
  virtual void decode(ByteView in, const ChunkSpec& spec, ChunkData& out) const = 0;
  // Fixed-size fast path: decode straight into `dest` (exactly spec.nbytes()).
  virtual void decode_into(ByteView in, const ChunkSpec& spec, MutableByteView dest) const;
  virtual Buffer encode(const ChunkData& in, const ChunkSpec& spec) const = 0;
  // The exact byte size this codec needs from the bytes->bytes stages for `spec`, when known
  // (fixed-size `bytes` codec); nullopt for variable-length encodings and sharding.
  virtual std::optional<std::uint64_t> encoded_size(const ChunkSpec& spec) const = 0;
  // The most bytes encode() makes of a chunk of `spec` (sharding: its inner chunks' bounds and
  // the index); nullopt when unknown (variable-length types). Default: encoded_size().
  virtual std::optional<std::uint64_t> max_encoded_size(const ChunkSpec& spec) const { return encoded_size(spec); }
  virtual nlohmann::json to_json() const = 0;
};

// A full codec chain. Decoding runs bytes codecs in reverse, then array->bytes, then array
// codecs in reverse.
class CodecPipeline {
 public:
  std::vector<std::shared_ptr<const ArrayToArrayCodec>> array_codecs;
  std::shared_ptr<const ArrayToBytesCodec> array_to_bytes;
  std::vector<std::shared_ptr<const BytesToBytesCodec>> bytes_codecs;

  // Decodes a fixed-size chunk straight into `dest` (exactly spec.nbytes() bytes), avoiding
  // copies where the chain allows it. Throws CodecError.
  void decode_into(ByteView encoded, const ChunkSpec& spec, MutableByteView dest) const;
  // Decodes any chunk (variable-length types too).
  void decode(ByteView encoded, const ChunkSpec& spec, ChunkData& out) const;
  Buffer encode(const ChunkData& decoded, const ChunkSpec& spec) const;
  // Encodes a fixed-size chunk held in the caller's memory (exactly spec.nbytes() bytes): with a
  // plain `bytes` codec (no swap) and no array codecs the first bytes stage reads it in place,
  // otherwise as encode() of a copy. Throws CodecError.
  Buffer encode_fixed(ByteView decoded, const ChunkSpec& spec) const;
  // The spec that reaches the array->bytes codec.
  ChunkSpec array_to_bytes_spec(const ChunkSpec& decoded) const;
  // The most bytes a stored chunk of `decoded` may hold: its decoded size mapped through each
  // stage's bound (BytesToBytesCodec::max_encoded_size, dtype-changing filters by their
  // encoded dtype). nullopt for variable-length types, whose size the metadata does not fix.
  // Readers bound whole-chunk reads with it (ByteRequest::max_bytes).
  std::optional<std::uint64_t> max_encoded_size(const ChunkSpec& decoded) const;
  // Zarr v3 style list of every codec in encode order.
  nlohmann::json to_json() const;
};

// Upper bound for decoded variable-length chunks and intermediate buffers whose size the
// metadata does not fix (1 GiB): a corrupt stream cannot make us allocate more.
inline constexpr std::uint64_t kMaxUnboundedDecode = std::uint64_t{1} << 30;

// ---- Registry ------------------------------------------------------------------------------
// Builders take the codec's configuration object (v3 "configuration", or the v2 codec object
// itself with its "id") and the spec of the data the codec sees on its decoded side. They
// throw CodecError naming the codec for an unknown name or bad configuration.

enum class CodecKind { ArrayToArray, ArrayToBytes, BytesToBytes };

// Kind of a v3 codec name (also numcodecs.* names); nullopt when unknown.
std::optional<CodecKind> v3_codec_kind(std::string_view name);

// One codec of the registry, under the names metadata may use for it.
struct RegisteredCodec {
  std::string id;                     // numcodecs / v2 id, or the v3 name of a v3-only codec
  std::string v2_id;                  // empty when Zarr v2 cannot name it
  std::vector<std::string> v3_names;  // e.g. {"zstd", "numcodecs.zstd"}
  CodecKind kind = CodecKind::BytesToBytes;  // under Zarr v3
  std::string source_file;            // the file that registered it
};
// Every registered codec, in registration order. (sharding_indexed is built by the zarr layer
// and not listed.)
std::vector<RegisteredCodec> registered_codecs();

std::shared_ptr<const BytesToBytesCodec> make_bytes_codec(std::string_view name,
                                                          const nlohmann::json& config,
                                                          const ChunkSpec& decoded);
std::shared_ptr<const ArrayToArrayCodec> make_array_codec(std::string_view name,
                                                          const nlohmann::json& config,
                                                          const ChunkSpec& decoded);
// Array->bytes codecs other than sharding (which the zarr layer builds: it needs the pipeline
// parser recursively).
std::shared_ptr<const ArrayToBytesCodec> make_array_to_bytes_codec(std::string_view name,
                                                                   const nlohmann::json& config,
                                                                   const ChunkSpec& decoded);

// Zarr v2: a compressor or filter object {"id": ..., ...}. Filters that turn bytes into objects
// (vlen-utf8, vlen-bytes) are array->bytes codecs; every other v2 codec is bytes->bytes.
bool is_v2_object_codec(std::string_view id);
std::shared_ptr<const BytesToBytesCodec> make_v2_bytes_codec(const nlohmann::json& codec,
                                                             const DataType& array_dtype);
std::shared_ptr<const ArrayToBytesCodec> make_v2_object_codec(const nlohmann::json& codec);

// ---- Codec spec text (the CLI's --codec) ----------------------------------------------------
// A compressor chain written as text: codecs joined by '+', each NAME[:PARAM...]:
//   none | zstd[:LEVEL] | gzip[:LEVEL] | zlib[:LEVEL] | lz4[:ACCELERATION] | crc32c
//   blosc[:CNAME[:CLEVEL[:noshuffle|shuffle|bitshuffle]]]
// Omitted parameters take numcodecs' defaults (zstd, gzip, zlib level 1; lz4 acceleration 1;
// blosc lz4:5:shuffle). Zarr v3 also takes bitround:KEEPBITS, an array->array codec, first.
// Returns, for `zarr_format` 3, the JSON list of the codecs of a chain less its "bytes": the
// array->array ones (which go before "bytes"), then the bytes->bytes ones that follow it
// (zlib and lz4 as numcodecs.zlib / numcodecs.lz4); for 2, the
// .zarray "compressor" object (null for "none"): Zarr v2 takes one compressor and no crc32c.
// Each codec is built once through the registry (elements of `dtype`), so whatever this
// returns, the readers accept. CodecError naming the text for an unknown codec or a bad or
// extra parameter.
nlohmann::json parse_codec_spec(std::string_view text, int zarr_format, const DataType& dtype);

// Native-endian fixed-size "bytes" codec (v3 `bytes`, and the v2 dtype byte order).
std::shared_ptr<const ArrayToBytesCodec> make_endian_codec(ByteOrder order);
// A Zarr v3 codec list entry: `"name"` or `{"name": ..., "configuration": {...}}` (null or absent
// configuration: {}). False when `entry` is neither; the caller names it in its own error.
bool parse_v3_codec_entry(const nlohmann::json& entry, std::string& name, nlohmann::json& configuration);
// Axis permutation (v3 `transpose`; v2 order "F" is the reversed permutation).
std::shared_ptr<const ArrayToArrayCodec> make_transpose_codec(std::vector<std::size_t> order);

}  // namespace lazycube::codec
