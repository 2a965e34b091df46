// ChunkSpec sizes and the default in-place decode paths of the codec interfaces.
#include <cstring>

#include "codec_util.hpp"

namespace lazycube::codec {

std::uint64_t ChunkSpec::num_elements() const {
  std::uint64_t n = 1;
  for (auto extent : shape) {
    if (extent != 0 && n > UINT64_MAX / extent) detail::fail("chunk shape overflows 64 bits");
    n *= extent;
  }
  return n;
}

std::uint64_t ChunkSpec::nbytes() const {
  if (dtype.is_variable_length())
    detail::fail("chunk of variable-length type " + dtype.name() + " has no fixed byte size");
  const std::uint64_t n = num_elements();
  if (dtype.itemsize != 0 && n > UINT64_MAX / dtype.itemsize)
    detail::fail("chunk byte size overflows 64 bits");
  return n * dtype.itemsize;
}

void BytesToBytesCodec::decode_into(ByteView in, MutableByteView dest) const {
  detail::ScratchLease scratch;
  DecodeLimits limits;
  limits.exact_size = dest.size();
  limits.max_size = dest.size();
  ByteView out = decode(in, scratch.buffer(), limits);
  detail::check_exact(name(), out.size(), limits);
  if (!out.empty()) std::memmove(dest.data(), out.data(), out.size());
}

void ArrayToBytesCodec::decode_into(ByteView in, const ChunkSpec& spec,
                                    MutableByteView dest) const {
  ChunkData data;
  decode(in, spec, data);
  if (data.bytes.size() != dest.size())
    detail::fail(name() + ": decoded " + std::to_string(data.bytes.size()) + " bytes, expected " +
                 std::to_string(dest.size()));
  if (!dest.empty()) std::memcpy(dest.data(), data.bytes.data(), dest.size());
}

}  // namespace lazycube::codec
