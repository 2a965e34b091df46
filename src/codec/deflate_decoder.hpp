// Whole-buffer inflate through libdeflate (gzip and zlib containers), with a per-thread
// decompressor.
#pragma once

#include <cstddef>

#include "lazycube/util/buffer.hpp"

namespace lazycube::codec::detail {

enum class DeflateContainer { Gzip, Zlib };

enum class InflateOutcome { Ok, TooMuchOutput, Corrupt };

struct InflateResult {
  InflateOutcome outcome;
  std::size_t consumed = 0;  // input bytes of the first member / stream
  std::size_t produced = 0;
};

InflateResult libdeflate_inflate(DeflateContainer container, ByteView in, MutableByteView out);

}  // namespace lazycube::codec::detail
