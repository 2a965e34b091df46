// zlib-based streaming inflate/deflate shared by the gzip and zlib codecs.
#pragma once

#include <cstdint>
#include <string_view>

#include "lazycube/util/buffer.hpp"

namespace lazycube::codec::detail {

// window_bits as in zlib: 15 = zlib container, 31 = gzip. For gzip, concatenated members are
// decoded one after another. Output goes into `out` (resized to the decoded size) and never
// exceeds `cap` bytes.
void zlib_inflate(std::string_view codec, ByteView in, int window_bits, Buffer& out,
                  std::uint64_t cap);
Buffer zlib_deflate(std::string_view codec, ByteView in, int level, int window_bits);

}  // namespace lazycube::codec::detail
