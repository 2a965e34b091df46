// A direct decoder for the blosc 1 frames zarr writes by default: LZ4 blocks (cname lz4 or
// lz4hc), byte-shuffled or not. libblosc 1.21 allocates its block buffers on every call and
// unshuffles with SSE2 only; this path reuses a per-thread block buffer and unshuffles with
// AVX2, which made whole-array blosc-lz4 reads ~30 % faster (docs/benchmarks.md).
#pragma once

#include "lazycube/util/buffer.hpp"

namespace lazycube::codec::detail {

// Decodes the frame `in` into `dest` and returns true, or returns false without writing when
// the frame needs libblosc (another compressor, bitshuffle, a stored-uncompressed frame, an
// element size without a vectorised unshuffle). `in` must hold a validated blosc 1 header
// whose decoded size is dest.size(). A damaged block is a CodecError naming the block.
bool decode_blosc_lz4_frame(ByteView in, MutableByteView dest);

}  // namespace lazycube::codec::detail
