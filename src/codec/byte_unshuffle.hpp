// Undoing a byte shuffle (numcodecs/HDF5 Shuffle, blosc's SHUFFLE): the input holds byte 0 of
// every element, then byte 1 of every element, ...; the output puts each element's bytes back
// together. Bytes after the last whole element are copied unchanged.
#pragma once

#include <cstddef>

namespace lazycube::codec::detail {

// `in` and `out` hold `size` bytes each and must not overlap.
void unshuffle_bytes(const std::byte* in, std::byte* out, std::size_t size, std::size_t elementsize);

// The same with each byte plane where it lies (planes[b] holds byte b of `count` elements), so
// that a decoder can unshuffle planes straight from where it decoded or found them. Writes
// count * elementsize bytes.
void unshuffle_planes(const std::byte* const* planes, std::size_t elementsize, std::size_t count,
                      std::byte* out);

// Whether unshuffle_bytes has a vectorised path for this element size on this CPU (AVX2 for 2-,
// 4- and 8-byte elements); other sizes take a plain loop.
bool unshuffle_is_vectorised(std::size_t elementsize);

}  // namespace lazycube::codec::detail
