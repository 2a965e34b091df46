#include "http_coalesce.hpp"

#include <algorithm>
#include <map>

#include "lazycube/error.hpp"

namespace lazycube::http {

CoalescePlan coalesce(const std::vector<ByteRequest>& requests, std::uint64_t gap, std::uint64_t max_size) {
  CoalescePlan plan;
  plan.parts.resize(requests.size());
  std::map<std::string_view, std::vector<std::size_t>> ranges_by_key;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    if (r.range.kind == ByteRange::Kind::Range && r.range.length > 0) {
      ranges_by_key[r.key].push_back(i);
    } else {
      plan.parts[i].fetch = plan.fetches.size();
      plan.fetches.push_back({r.key, r.range, r.condition, r.max_bytes});
    }
  }
  for (auto& [key, idx] : ranges_by_key) {
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
      return requests[a].range.offset < requests[b].range.offset;
    });
    std::size_t run_begin = 0;
    while (run_begin < idx.size()) {
      const std::uint64_t start = requests[idx[run_begin]].range.offset;
      std::uint64_t end = start + requests[idx[run_begin]].range.length;
      std::size_t run_end = run_begin + 1;
      while (run_end < idx.size()) {
        const auto& next = requests[idx[run_end]].range;
        const std::uint64_t next_end = std::max(end, next.offset + next.length);
        if (next.offset > end + gap || next_end - start > max_size) break;
        if (requests[idx[run_end]].condition != requests[idx[run_begin]].condition) break;
        end = next_end;
        ++run_end;
      }
      const std::size_t f = plan.fetches.size();
      if (run_end - run_begin == 1) {
        const ByteRequest& only = requests[idx[run_begin]];
        plan.fetches.push_back({std::string(key), only.range, only.condition, only.max_bytes});
        plan.parts[idx[run_begin]].fetch = f;
      } else {
        plan.fetches.push_back({std::string(key), ByteRange::range(start, end - start), requests[idx[run_begin]].condition});
        for (std::size_t k = run_begin; k < run_end; ++k) {
          auto& p = plan.parts[idx[k]];
          p.fetch = f;
          p.sliced = true;
          p.offset = requests[idx[k]].range.offset - start;
          p.length = requests[idx[k]].range.length;
        }
      }
      run_begin = run_end;
    }
  }
  plan.requests_of.resize(plan.fetches.size());
  for (std::size_t i = 0; i < requests.size(); ++i) plan.requests_of[plan.parts[i].fetch].push_back(i);
  return plan;
}

std::uint64_t max_body_of(const ByteRange& range, std::uint64_t max_bytes) {
  if (max_bytes == 0 || range.kind != ByteRange::Kind::Range) return max_bytes;
  return std::min(max_bytes, range.length);
}

void deliver(const CoalescePlan& plan, std::size_t f, std::optional<Buffer>&& bytes,
             const std::vector<ByteRequest>& requests, const std::function<std::string(std::string_view)>& describe,
             const Store::ByteSink& sink) {
  for (const std::size_t i : plan.requests_of[f]) {
    const auto& part = plan.parts[i];
    if (!bytes) {
      sink(i, std::nullopt);
    } else if (!part.sliced) {
      sink(i, std::move(bytes));  // the fetch serves this request alone
    } else {
      const std::uint64_t have = bytes->size();
      if (part.offset > have)
        throw StoreError(describe(requests[i].key) + ": " + requests[i].range.describe() +
                         " starts past the end of the object");
      const std::uint64_t n = std::min(part.length, have - part.offset);
      sink(i, Buffer::copy_of(bytes->view().subspan(part.offset, n)));
    }
  }
}

}  // namespace lazycube::http
