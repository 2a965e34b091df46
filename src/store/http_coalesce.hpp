// Coalescing of nearby byte ranges of one object into fewer, larger requests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lazycube/store/store.hpp"

namespace lazycube::http {

struct CoalescePlan {
  struct Fetch {
    std::string key;
    ByteRange range;
  };
  struct Part {
    std::size_t fetch = 0;     // which fetch delivers this request
    bool sliced = false;       // false: the fetch is exactly this request
    std::uint64_t offset = 0;  // sliced: position inside the fetched bytes
    std::uint64_t length = 0;
  };
  std::vector<Fetch> fetches;
  std::vector<Part> parts;  // one per request, in request order
};

// Ranges (Kind::Range) of the same key whose gap is at most `gap` bytes are merged while the
// merged request stays within `max_size` bytes. Whole-object, offset and suffix requests are
// fetched as they are.
CoalescePlan coalesce(const std::vector<ByteRequest>& requests, std::uint64_t gap, std::uint64_t max_size);

}  // namespace lazycube::http
