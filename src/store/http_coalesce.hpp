// Coalescing of nearby byte ranges of one object into fewer, larger requests.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lazycube/store/store.hpp"

namespace lazycube::http {

struct CoalescePlan {
  struct Fetch {
    std::string key;
    ByteRange range;
    ReadCondition condition;  // the requests' (only requests with equal conditions merge)
    std::uint64_t max_bytes = 0;  // a request fetched as it is: its ByteRequest::max_bytes
  };
  struct Part {
    std::size_t fetch = 0;     // which fetch delivers this request
    bool sliced = false;       // false: the fetch is exactly this request
    std::uint64_t offset = 0;  // sliced: position inside the fetched bytes
    std::uint64_t length = 0;
  };
  std::vector<Fetch> fetches;
  std::vector<Part> parts;  // one per request, in request order
  std::vector<std::vector<std::size_t>> requests_of;  // per fetch: the requests it serves
};

// Ranges (Kind::Range) of the same key whose gap is at most `gap` bytes are merged while the
// merged request stays within `max_size` bytes and their read conditions are equal. Whole-object, offset and suffix requests are
// fetched as they are.
CoalescePlan coalesce(const std::vector<ByteRequest>& requests, std::uint64_t gap, std::uint64_t max_size);

// The body bound (http::Request::max_body) of a read of `range` bounded by `max_bytes`
// (ByteRequest::max_bytes): for a range the smaller of that and its length; 0: the engine's own.
std::uint64_t max_body_of(const ByteRange& range, std::uint64_t max_bytes);

// Hands the bytes of fetch `f` (nullopt: the object is missing) to `sink` once per request it
// serves: whole when the fetch is exactly that request, else the request's slice, clipped where
// the object ended. A slice starting past the end is a StoreError; `describe(key)` names the
// object in it.
void deliver(const CoalescePlan& plan, std::size_t f, std::optional<Buffer>&& bytes,
             const std::vector<ByteRequest>& requests, const std::function<std::string(std::string_view)>& describe,
             const Store::ByteSink& sink);

}  // namespace lazycube::http
