// Blosc 1 frame layout (c-blosc's README_HEADER): a 16-byte header (format version, compressor
// version, flags, type size, then little-endian decoded bytes, block size and frame bytes), one
// 32-bit offset per block, then each block as one stream or, when split, one stream per byte of
// the element, each stream prefixed by its compressed size (equal to the decoded size when the
// stream is stored uncompressed). Split and shuffle rules follow c-blosc 1.x's blosc_d.
#include "blosc_lz4_frame.hpp"

#include <lz4.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>

#include "byte_unshuffle.hpp"
#include "codec_util.hpp"

namespace lazycube::codec::detail {
namespace {

constexpr std::size_t kHeaderBytes = 16;
constexpr std::uint8_t kFormatVersion = 2;  // every c-blosc 1.x since 1.0 writes 2
constexpr std::uint8_t kShuffleFlag = 0x01, kMemcpyedFlag = 0x02, kBitshuffleFlag = 0x04;
constexpr std::uint8_t kDontSplitFlag = 0x10;
constexpr int kLz4Format = 1;          // flags >> 5: the compressor format of every block
constexpr std::size_t kMaxSplits = 16, kMinSplitBytes = 128;

[[noreturn]] void corrupt(std::size_t block, const std::string& what) {
  fail("blosc: corrupt stream (block " + std::to_string(block) + ": " + what + ")");
}

}  // namespace

bool decode_blosc_lz4_frame(ByteView in, MutableByteView dest) {
  if (in.size() < kHeaderBytes) return false;
  const auto* frame = in.data();
  const auto version = static_cast<std::uint8_t>(frame[0]);
  const auto flags = static_cast<std::uint8_t>(frame[2]);
  const std::size_t typesize = static_cast<std::uint8_t>(frame[3]);
  if (version != kFormatVersion || (flags >> 5) != kLz4Format) return false;
  if (typesize == 0) fail("blosc: corrupt header (type size 0)");
  if ((flags & (kMemcpyedFlag | kBitshuffleFlag)) != 0) return false;
  const bool shuffled = (flags & kShuffleFlag) != 0 && typesize > 1;
  if (shuffled && !unshuffle_is_vectorised(typesize)) return false;

  const std::size_t nbytes = load_le32(frame + 4), blocksize = load_le32(frame + 8);
  const std::size_t cbytes = load_le32(frame + 12);
  if (nbytes != dest.size() || cbytes > in.size() || blocksize == 0) return false;
  if (nbytes == 0) return true;
  const std::size_t leftover = nbytes % blocksize;
  const std::size_t nblocks = nbytes / blocksize + (leftover != 0 ? 1 : 0);
  if (kHeaderBytes + 4 * nblocks > cbytes)
    fail("blosc: truncated stream (" + std::to_string(nblocks) + " block offsets do not fit in " +
         std::to_string(cbytes) + " bytes)");

  ScratchLease lease;
  Buffer& block_buffer = lease.buffer();
  if (shuffled) block_buffer.resize(std::min(blocksize, nbytes));  // never more than the output
  const std::byte* end = frame + cbytes;
  for (std::size_t j = 0; j < nblocks; ++j) {
    const bool last_partial = j == nblocks - 1 && leftover != 0;
    const std::size_t bsize = last_partial ? leftover : blocksize;
    const bool split = (flags & kDontSplitFlag) == 0 && typesize <= kMaxSplits &&
                       blocksize / typesize >= kMinSplitBytes && !last_partial;
    const std::size_t nsplits = split ? typesize : 1;
    const std::size_t stream_bytes = bsize / nsplits;
    if (stream_bytes * nsplits != bsize)
      corrupt(j, std::to_string(bsize) + " bytes do not split into " + std::to_string(nsplits) + " streams");

    const std::size_t start = load_le32(frame + kHeaderBytes + 4 * j);
    if (start > cbytes) corrupt(j, "offset " + std::to_string(start) + " is past the end");
    const std::byte* p = frame + start;
    std::byte* block_out = dest.data() + j * blocksize;
    // Streams decode into the block buffer when shuffled (then unshuffle into place), else
    // straight into place. A stream stored uncompressed is unshuffled from the frame itself.
    std::byte* decoded = shuffled ? block_buffer.data() : block_out;
    const std::byte* streams[kMaxSplits];
    for (std::size_t k = 0; k < nsplits; ++k) {
      if (end - p < 4) corrupt(j, "truncated stream header");
      const std::size_t stream_cbytes = load_le32(p);
      p += 4;
      if (stream_cbytes > static_cast<std::size_t>(end - p)) corrupt(j, "truncated stream");
      if (stream_bytes > INT_MAX || stream_cbytes > INT_MAX) corrupt(j, "stream over 2 GiB");
      std::byte* target = decoded + k * stream_bytes;
      if (stream_cbytes == stream_bytes) {
        streams[k] = p;
        if (!shuffled) std::memcpy(target, p, stream_bytes);
      } else {
        const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(p), reinterpret_cast<char*>(target),
                                          static_cast<int>(stream_cbytes), static_cast<int>(stream_bytes));
        if (n < 0 || static_cast<std::size_t>(n) != stream_bytes) corrupt(j, "bad lz4 stream");
        streams[k] = target;
      }
      p += stream_cbytes;
    }
    if (shuffled) {
      // Split: one stream per byte plane. Not split: the planes follow each other in the one
      // stream, and the bytes after the last whole element stay as they are.
      const std::size_t count = bsize / typesize;
      const std::byte* planes[kMaxSplits];
      for (std::size_t b = 0; b < typesize; ++b) planes[b] = split ? streams[b] : streams[0] + b * count;
      unshuffle_planes(planes, typesize, count, block_out);
      const std::size_t whole = count * typesize;
      if (!split && bsize > whole) std::memcpy(block_out + whole, streams[0] + whole, bsize - whole);
    }
  }
  return true;
}

}  // namespace lazycube::codec::detail
