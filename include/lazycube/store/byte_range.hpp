// Resolving a ByteRange against an object size (the local backends, the kerchunk reference store).
#pragma once

#include <cstdint>
#include <string>

#include "lazycube/error.hpp"
#include "lazycube/store/store.hpp"

namespace lazycube::detail {

struct ResolvedRange {
  std::uint64_t offset;
  std::uint64_t length;
};

// Clips a range to an object of `size` bytes. A range starting past the end is an error
// (like HTTP 416); one reaching past the end is clipped.
inline ResolvedRange resolve_range(const ByteRange& r, std::uint64_t size, const std::string& what) {
  switch (r.kind) {
    case ByteRange::Kind::Full: return {0, size};
    case ByteRange::Kind::Suffix: {
      std::uint64_t n = r.length < size ? r.length : size;
      return {size - n, n};
    }
    case ByteRange::Kind::Offset:
    case ByteRange::Kind::Range: {
      if (r.offset > size)
        throw StoreError(what + ": " + r.describe() + " starts past the end (" +
                         std::to_string(size) + " bytes)");
      std::uint64_t avail = size - r.offset;
      std::uint64_t n = r.kind == ByteRange::Kind::Offset ? avail : (r.length < avail ? r.length : avail);
      return {r.offset, n};
    }
  }
  return {0, size};
}

// Refuses `size` bytes for a read bounded by `max_bytes` (ByteRequest::max_bytes; 0: no bound),
// in the words of the HTTP engine's bound errors; `what` names the object.
inline void check_read_bound(std::uint64_t size, std::uint64_t max_bytes, const std::string& what) {
  if (max_bytes != 0 && size > max_bytes)
    throw StoreError(what + ": the read would return " + std::to_string(size) + " bytes, more than the " +
                     std::to_string(max_bytes) + " bytes the object may hold by its metadata");
}

}  // namespace lazycube::detail
