// The fixed-size `bytes` array->bytes codec (internal view for the pipeline's fast path).
#pragma once

#include <nlohmann/json.hpp>

#include "lazycube/codec/codec.hpp"

namespace lazycube::codec::detail {

class EndianCodec final : public ArrayToBytesCodec {
 public:
  // `explicit_endian`: whether to_json names the endian (v3 omits it for 1-byte types).
  EndianCodec(ByteOrder order, bool explicit_endian) : order_(order), explicit_(explicit_endian) {}

  std::string name() const override { return "bytes"; }
  void decode(ByteView in, const ChunkSpec& spec, ChunkData& out) const override;
  void decode_into(ByteView in, const ChunkSpec& spec, MutableByteView dest) const override;
  Buffer encode(const ChunkData& in, const ChunkSpec& spec) const override;
  std::optional<std::uint64_t> encoded_size(const ChunkSpec& spec) const override;
  nlohmann::json to_json() const override;

  // True when decoding `spec` is a plain copy (no swapping needed).
  bool is_identity_for(const DataType& dtype) const {
    return order_ != ByteOrder::Big || dtype.swap_unit() <= 1;
  }

 private:
  ByteOrder order_;
  bool explicit_;
};

}  // namespace lazycube::codec::detail
