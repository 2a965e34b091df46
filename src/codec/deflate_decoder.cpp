#include "deflate_decoder.hpp"

#include <libdeflate.h>

#include <memory>

#include "codec_util.hpp"

namespace lazycube::codec::detail {

InflateResult libdeflate_inflate(DeflateContainer container, ByteView in, MutableByteView out) {
  struct Deleter {
    void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
  };
  thread_local std::unique_ptr<libdeflate_decompressor, Deleter> d(libdeflate_alloc_decompressor());
  if (!d) fail("deflate: cannot allocate a decompressor");
  std::size_t consumed = 0, produced = 0;
  const auto result =
      container == DeflateContainer::Gzip
          ? libdeflate_gzip_decompress_ex(d.get(), in.data(), in.size(), out.data(), out.size(),
                                          &consumed, &produced)
          : libdeflate_zlib_decompress_ex(d.get(), in.data(), in.size(), out.data(), out.size(),
                                          &consumed, &produced);
  switch (result) {
    case LIBDEFLATE_SUCCESS: return {InflateOutcome::Ok, consumed, produced};
    case LIBDEFLATE_INSUFFICIENT_SPACE: return {InflateOutcome::TooMuchOutput, 0, 0};
    default: return {InflateOutcome::Corrupt, 0, 0};
  }
}

}  // namespace lazycube::codec::detail
