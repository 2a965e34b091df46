#include "lazycube/dataset/selection.hpp"

#include <cmath>
#include <sstream>

#include "lazycube/error.hpp"

namespace lazycube {

namespace {

std::string dim_label(std::string_view dim) {
  return dim.empty() ? std::string("axis") : "dim '" + std::string(dim) + "'";
}

}  // namespace

IndexRange resolve_slice(const Slice& slice, std::uint64_t size, std::string_view dim) {
  if (slice.step == 0) throw SelectionError("slice step cannot be zero (" + dim_label(dim) + ")");
  const auto n = static_cast<std::int64_t>(size);
  const std::int64_t step = slice.step;
  std::int64_t start = 0;
  std::int64_t stop = 0;
  std::int64_t count = 0;
  if (step > 0) {
    auto clip = [n](std::int64_t v) {
      if (v < 0) v += n;
      return v < 0 ? 0 : (v > n ? n : v);
    };
    start = slice.start ? clip(*slice.start) : 0;
    stop = slice.stop ? clip(*slice.stop) : n;
    count = stop > start ? (stop - start + step - 1) / step : 0;
  } else {
    // -1 stands for "before the first element".
    auto clip = [n](std::int64_t v) {
      if (v < 0) v += n;
      return v < 0 ? -1 : (v >= n ? n - 1 : v);
    };
    start = slice.start ? clip(*slice.start) : n - 1;
    stop = slice.stop ? clip(*slice.stop) : -1;
    count = start > stop ? (start - stop - 1) / (-step) + 1 : 0;
  }
  if (count == 0) return {0, 0, step};
  return {static_cast<std::uint64_t>(start), static_cast<std::uint64_t>(count), step};
}

std::uint64_t resolve_index(std::int64_t index, std::uint64_t size, std::string_view dim) {
  const auto n = static_cast<std::int64_t>(size);
  const std::int64_t i = index < 0 ? index + n : index;
  if (i < 0 || i >= n) {
    throw SelectionError("index " + std::to_string(index) + " is out of range for " +
                         dim_label(dim) + " of size " + std::to_string(size));
  }
  return static_cast<std::uint64_t>(i);
}

IndexRange compose(const IndexRange& outer, const IndexRange& inner) {
  if (inner.count == 0) return {0, 0, outer.step * inner.step};
  return {outer.at(inner.start), inner.count, outer.step * inner.step};
}

std::string Label::to_string() const {
  if (const auto* s = std::get_if<std::string>(&value)) return "'" + *s + "'";
  const double v = std::get<double>(value);
  std::ostringstream out;
  out.precision(17);
  if (std::floor(v) == v && std::fabs(v) < 1e15)
    out << static_cast<std::int64_t>(v);
  else
    out << v;
  return out.str();
}

}  // namespace lazycube
