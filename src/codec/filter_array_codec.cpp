// A numcodecs filter run as a v3 array->array codec (zarr-python 3's numcodecs.delta,
// numcodecs.astype, ...). The filter itself is the bytes->bytes implementation used for v2;
// here it sees native-order element bytes and its astype becomes the encoded spec's dtype.
// It wraps codecs that registered themselves, so this file registers no codec.
#include <cstring>
#include <nlohmann/json.hpp>

#include "codec_factories.hpp"
#include "codec_util.hpp"

namespace lazycube::codec::detail {
namespace {

class FilterArrayCodec final : public ArrayToArrayCodec {
 public:
  explicit FilterArrayCodec(BytesCodecPtr filter)
      : filter_(std::move(filter)), packbits_(filter_->name().ends_with("packbits")) {}

  std::string name() const override { return filter_->name(); }

  ChunkSpec encoded_spec(const ChunkSpec& decoded) const override {
    if (packbits_)  // one padding-count byte, then the bits packed 8 per byte
      return {DataType::uint(1), {1 + (decoded.num_elements() + 7) / 8}};
    ChunkSpec out = decoded;
    if (auto t = filter_->encoded_dtype(decoded.dtype)) out.dtype = *t;
    return out;
  }

  void decode(ChunkData& in, const ChunkSpec& decoded, ChunkData& out) const override {
    ScratchLease scratch;
    DecodeLimits limits;
    limits.exact_size = decoded.nbytes();
    limits.max_size = decoded.nbytes();
    const ByteView result = filter_->decode(in.bytes.view(), scratch.buffer(), limits);
    check_exact(name(), result.size(), limits);
    out.bytes.resize(result.size());
    if (!result.empty()) std::memcpy(out.bytes.data(), result.data(), result.size());
  }

  void encode(const ChunkData& in, const ChunkSpec&, ChunkData& out) const override {
    out.bytes = filter_->encode(in.bytes.view());
  }

  nlohmann::json to_json() const override { return filter_->to_json(); }

 private:
  BytesCodecPtr filter_;
  bool packbits_;
};

}  // namespace

std::shared_ptr<const ArrayToArrayCodec> make_filter_array_codec(BytesCodecPtr filter) {
  return std::make_shared<FilterArrayCodec>(std::move(filter));
}

}  // namespace lazycube::codec::detail
