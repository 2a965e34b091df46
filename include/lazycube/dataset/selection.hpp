// Positional (isel) and label (sel) selection types with NumPy / xarray semantics.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "lazycube/array.hpp"

namespace lazycube {

// A Python-style slice: missing ends mean "from the start" / "to the end" (reversed for a
// negative step), negative values count from the end, out-of-range ends are clipped.
struct Slice {
  std::optional<std::int64_t> start;
  std::optional<std::int64_t> stop;
  std::int64_t step = 1;
};

// An integer picks one position and drops the dim; a Slice keeps the dim.
using Indexer = std::variant<std::int64_t, Slice>;
using Indexers = std::map<std::string, Indexer>;

// The positions `slice` selects along an axis of `size` elements. Step 0 -> SelectionError.
IndexRange resolve_slice(const Slice& slice, std::uint64_t size, std::string_view dim = {});
// `index` (negative counts from the end) checked against `size`; SelectionError naming the dim,
// the index and the size when it is out of range.
std::uint64_t resolve_index(std::int64_t index, std::uint64_t size, std::string_view dim = {});
// Composes: the positions of `inner` (relative to the positions selected by `outer`).
IndexRange compose(const IndexRange& outer, const IndexRange& inner);

// A coordinate label: a number, or a string (an ISO date-time for datetime coordinates, or the
// text of a string coordinate).
struct Label {
  std::variant<double, std::string> value;
  Label(double v) : value(v) {}                       // NOLINT(google-explicit-constructor)
  Label(int v) : value(static_cast<double>(v)) {}     // NOLINT
  Label(std::int64_t v) : value(static_cast<double>(v)) {}  // NOLINT
  Label(const char* v) : value(std::string(v)) {}     // NOLINT
  Label(std::string v) : value(std::move(v)) {}       // NOLINT
  std::string to_string() const;
};

// A label range, inclusive of both ends like pandas / xarray label slicing. On a descending
// coordinate the range runs from the larger label to the smaller one (slice(60, 40)).
struct LabelSlice {
  std::optional<Label> start;
  std::optional<Label> stop;
  LabelSlice() = default;
  LabelSlice(std::optional<Label> start_label, std::optional<Label> stop_label)
      : start(std::move(start_label)), stop(std::move(stop_label)) {}
};

using LabelIndexer = std::variant<Label, LabelSlice>;
using LabelIndexers = std::map<std::string, LabelIndexer>;

enum class SelMethod { Exact, Nearest };

struct SelOptions {
  SelMethod method = SelMethod::Exact;
  // Nearest only: the largest accepted distance, in coordinate units (seconds for datetime
  // and timedelta coordinates).
  std::optional<double> tolerance;
};

}  // namespace lazycube
