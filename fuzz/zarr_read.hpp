// Zarr fuzz targets: metadata (and one chunk's bytes) in a memory store, opened and read through
// the real Hierarchy, with reads bounded so that valid metadata declaring huge arrays stays cheap.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_common.hpp"
#include "lazycube/array.hpp"
#include "lazycube/store/store.hpp"
#include "lazycube/zarr/hierarchy.hpp"

namespace lazycube::fuzz {

// Puts `chunk` under every key the first chunk of an array at `prefix` may have (v2 "0.0",
// "0/0"; v3 "c/0/0", "c.0.0"; up to four dims; "0" and "c" for zero-dim arrays).
inline void put_first_chunk(MemoryStore& store, const std::string& prefix, std::string_view chunk) {
  const std::string base = prefix.empty() ? "" : prefix + "/";
  // fanout (any max_children: coordinate 0 is one digit) and the seeds' ".bin" suffix.
  std::string fanout;
  for (int dims = 0; dims <= 4; ++dims) {
    store.set(base + fanout + "c", chunk);
    fanout += "d" + std::to_string(dims) + "/0/";
  }
  store.set(base + "c/0.bin", chunk);
  for (const char sep : {'.', '/'}) {
    std::string v2 = "0", v3 = "c";
    store.set(base + v3, chunk);
    for (int dims = 1; dims <= 4; ++dims) {
      store.set(base + v2, chunk);
      v3 += std::string(1, sep) + "0";
      store.set(base + v3, chunk);
      v2 += std::string(1, sep) + "0";
    }
  }
}

// Reads the start of `array`: at most two chunks per dim, at most 64 Ki elements, and nothing
// when one chunk's decoded size passes 64 MiB (metadata may declare big chunks legitimately;
// the fuzzer's memory limit is not the library's). Checks that what comes back has the size
// the selection says.
inline void read_start(const Array& array) {
  const Shape& shape = array.shape();
  const Shape& chunks = array.read_chunk_shape();
  check(chunks.size() == shape.size(), "chunk shape rank differs from the array's: " + array.describe());
  const std::uint64_t item = std::max<std::uint64_t>(array.dtype().itemsize, 8);
  std::uint64_t chunk_bytes = item;
  for (const auto c : chunks) {
    if (c == 0 || chunk_bytes > (std::uint64_t{64} << 20) / c) return;
    chunk_bytes *= c;
  }
  ArraySelection sel;
  std::uint64_t elements = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    std::uint64_t n = std::min<std::uint64_t>(shape[d], 2 * chunks[d]);
    n = std::min<std::uint64_t>(n, (std::uint64_t{1} << 16) / std::max<std::uint64_t>(elements, 1));
    sel.push_back({0, n, 1});
    elements *= std::max<std::uint64_t>(n, 1);
  }
  typed_or_valid([&] {
    const NDArray got = array.read(sel);
    std::uint64_t expect = 1;
    for (const auto& r : sel) expect *= r.count;
    check(got.size() == expect, "read returned " + std::to_string(got.size()) +
                                            " elements, the selection has " + std::to_string(expect));
  });
}

}  // namespace lazycube::fuzz
