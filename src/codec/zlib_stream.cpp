#include "zlib_stream.hpp"

#include <zlib.h>

#include <algorithm>
#include <climits>

#include "codec_util.hpp"

namespace lazycube::codec::detail {

void zlib_inflate(std::string_view codec, ByteView in, int window_bits, Buffer& out,
                  std::uint64_t cap) {
  const std::string name(codec);
  z_stream zs{};
  if (inflateInit2(&zs, window_bits) != Z_OK) fail(name + ": cannot initialise zlib");
  struct Guard {
    z_stream* s;
    ~Guard() { inflateEnd(s); }
  } guard{&zs};

  std::size_t consumed = 0, produced = 0;
  out.clear();
  std::byte probe[1];
  for (;;) {
    // At the cap, inflate into a 1-byte probe: the stream may only finish its trailer.
    const bool at_cap = produced == out.size() && !grow_output(out, cap);
    std::byte* target = at_cap ? probe : out.data() + produced;
    const std::size_t in_chunk = std::min<std::size_t>(in.size() - consumed, UINT_MAX);
    const std::size_t out_chunk =
        at_cap ? 1 : std::min<std::size_t>(out.size() - produced, UINT_MAX);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data() + consumed));
    zs.avail_in = static_cast<uInt>(in_chunk);
    zs.next_out = reinterpret_cast<Bytef*>(target);
    zs.avail_out = static_cast<uInt>(out_chunk);
    const int ret = inflate(&zs, Z_NO_FLUSH);
    consumed += in_chunk - zs.avail_in;
    if (at_cap && zs.avail_out == 0)
      fail(name + ": decoded more than the limit of " + std::to_string(cap) + " bytes");
    if (!at_cap) produced += out_chunk - zs.avail_out;
    if (ret == Z_STREAM_END) {
      // gzip allows several members; anything after a zlib stream is ignored as zlib does.
      if (window_bits > 15 && consumed < in.size()) {
        if (inflateReset(&zs) != Z_OK) fail(name + ": cannot reset zlib");
        continue;
      }
      break;
    }
    if (ret == Z_BUF_ERROR && zs.avail_out != 0)
      fail(name + ": truncated stream");
    if (ret != Z_OK && ret != Z_BUF_ERROR)
      fail(name + ": corrupt stream" + (zs.msg ? std::string(" (") + zs.msg + ")" : std::string()));
    if (consumed == in.size() && zs.avail_out != 0) fail(name + ": truncated stream");
  }
  out.resize(produced);
}

Buffer zlib_deflate(std::string_view codec, ByteView in, int level, int window_bits) {
  const std::string name(codec);
  z_stream zs{};
  if (deflateInit2(&zs, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    fail(name + ": cannot initialise zlib");
  struct Guard {
    z_stream* s;
    ~Guard() { deflateEnd(s); }
  } guard{&zs};
  if (in.size() > UINT_MAX) fail(name + ": input too large to compress in one piece");
  Buffer out(deflateBound(&zs, static_cast<uLong>(in.size())));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) fail(name + ": compression failed");
  out.resize(out.size() - zs.avail_out);
  return out;
}

}  // namespace lazycube::codec::detail
