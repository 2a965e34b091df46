// Label lookup on monotonic 1-D coordinates (pandas Index.get_loc / slice_indexer semantics).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "lazycube/dataset/cf_time.hpp"
#include "lazycube/dataset/variable.hpp"
#include "lazycube/error.hpp"
#include "util/element_cast.hpp"
#include "util/text.hpp"

namespace lazycube {

namespace {

struct Coordinate {
  std::string dim;
  bool is_text = false;
  bool is_time = false;  // values are ns (datetime since the epoch, or timedelta)
  bool is_datetime = false;
  std::vector<double> numbers;        // numeric coordinates
  std::vector<std::int64_t> times;    // datetime / timedelta coordinates, in ns
  std::vector<std::string> texts;     // string coordinates
  bool descending = false;
};

[[noreturn]] void fail(const std::string& dim, const Label& label, const std::string& why) {
  throw SelectionError("label " + label.to_string() + " " + why + " in dimension '" + dim + "'");
}

Coordinate load(const Variable& coord, const std::string& dim) {
  Coordinate c;
  c.dim = dim;
  const NDArray values = coord.read();
  const DataType& t = values.dtype;
  const std::uint64_t n = values.size();
  if (t.kind == DTypeKind::DateTime || t.kind == DTypeKind::TimeDelta) {
    c.is_time = true;
    c.is_datetime = t.kind == DTypeKind::DateTime;
    const std::int64_t unit = datetime_unit_ns(t.unit);
    if (unit == 0) throw SelectionError("cannot select on calendar-unit coordinate '" + dim + "'");
    for (std::uint64_t i = 0; i < n; ++i) {
      std::int64_t v;
      std::memcpy(&v, values.data.data() + i * 8, 8);
      c.times.push_back(v == cf::kNaT ? v : v * unit * t.scale);
    }
  } else if (t.kind == DTypeKind::String) {
    c.is_text = true;
    c.texts = values.strings;
  } else if (t.kind == DTypeKind::Unicode) {
    c.is_text = true;
    for (std::uint64_t i = 0; i < n; ++i) {
      std::u32string s(t.itemsize / 4, U'\0');
      std::memcpy(s.data(), values.data.data() + i * t.itemsize, t.itemsize);
      c.texts.push_back(utf32_to_utf8(s));
    }
  } else if (t.kind == DTypeKind::Bytes) {
    c.is_text = true;
    for (std::uint64_t i = 0; i < n; ++i) {
      std::string s(reinterpret_cast<const char*>(values.data.data() + i * t.itemsize), t.itemsize);
      c.texts.push_back(s.substr(0, s.find('\0')));
    }
  } else {
    // bool, integers and floats (float16 included) as doubles
    const bool numeric = detail::visit_dtype<detail::dtype_set::kBool | detail::dtype_set::kReal |
                                             detail::dtype_set::kHalf>(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (std::uint64_t i = 0; i < n; ++i)
        c.numbers.push_back(detail::as_double(detail::load_element<T>(values.data.data(), i)));
    });
    if (!numeric) throw SelectionError("cannot select by label on dimension '" + dim + "' of dtype " + t.name());
  }
  return c;
}

template <class T>
bool check_monotonic(const std::vector<T>& v, bool& descending) {
  bool inc = true, dec = true;
  for (std::size_t i = 1; i < v.size(); ++i) {
    if (v[i] < v[i - 1]) inc = false;
    if (v[i] > v[i - 1]) dec = false;
  }
  descending = !inc && dec;
  return inc || dec;
}

// Index of the first position whose value is not before `x` in the coordinate's order.
template <class T>
std::size_t lower(const std::vector<T>& v, T x, bool descending) {
  if (descending)
    return static_cast<std::size_t>(std::lower_bound(v.begin(), v.end(), x, std::greater<T>()) - v.begin());
  return static_cast<std::size_t>(std::lower_bound(v.begin(), v.end(), x) - v.begin());
}
template <class T>
std::size_t upper(const std::vector<T>& v, T x, bool descending) {
  if (descending)
    return static_cast<std::size_t>(std::upper_bound(v.begin(), v.end(), x, std::greater<T>()) - v.begin());
  return static_cast<std::size_t>(std::upper_bound(v.begin(), v.end(), x) - v.begin());
}

template <class T>
Indexer point(const std::vector<T>& v, T x, bool descending, const SelOptions& opt,
              double tolerance_scale, const std::string& dim, const Label& label) {
  const std::size_t i = lower(v, x, descending);
  if (opt.method == SelMethod::Exact) {
    if (i < v.size() && v[i] == x) return static_cast<std::int64_t>(i);
    fail(dim, label, "not found");
  }
  if (v.empty()) fail(dim, label, "not found (empty coordinate)");
  // Nearest: candidates i-1 and i; ties go to the later position like pandas on an
  // increasing index.
  std::size_t best = i < v.size() ? i : v.size() - 1;
  auto dist = [&](std::size_t k) {
    return std::fabs(static_cast<double>(v[k]) - static_cast<double>(x));
  };
  if (i > 0 && (i == v.size() || dist(i - 1) < dist(i))) best = i - 1;
  if (opt.tolerance && dist(best) > *opt.tolerance * tolerance_scale)
    fail(dim, label, "has no coordinate value within the tolerance");
  return static_cast<std::int64_t>(best);
}

template <class T>
Indexer range(const std::vector<T>& v, std::optional<T> a, std::optional<T> b, bool descending) {
  const std::size_t begin = a ? lower(v, *a, descending) : 0;
  const std::size_t end = b ? upper(v, *b, descending) : v.size();
  const auto s = static_cast<std::int64_t>(begin);
  return Slice{s, std::max(s, static_cast<std::int64_t>(end)), 1};
}

double number_label(const Label& label, const std::string& dim) {
  if (const auto* d = std::get_if<double>(&label.value)) return *d;
  const std::string& s = std::get<std::string>(label.value);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size())
    fail(dim, label, "is not a number, but the coordinate is numeric");
  return v;
}

std::int64_t time_label(const Label& label, const Coordinate& c) {
  if (const auto* d = std::get_if<double>(&label.value)) return static_cast<std::int64_t>(*d);
  const std::string& s = std::get<std::string>(label.value);
  if (!c.is_datetime) fail(c.dim, label, "is text, but the coordinate is a timedelta");
  const auto ns = cf::parse_datetime_ns(s);
  if (!ns) fail(c.dim, label, "is not an ISO date-time");
  return *ns;
}

std::string text_label(const Label& label, const std::string& dim) {
  if (const auto* s = std::get_if<std::string>(&label.value)) return *s;
  fail(dim, label, "is a number, but the coordinate holds strings");
}

}  // namespace

Indexer label_to_indexer(const Variable& coord, const std::string& dim, const LabelIndexer& label,
                         const SelOptions& options) {
  const Coordinate c = load(coord, dim);
  if (c.is_text) {
    // String coordinates: exact matches only.
    if (const auto* l = std::get_if<Label>(&label)) {
      const std::string key = text_label(*l, dim);
      for (std::size_t i = 0; i < c.texts.size(); ++i)
        if (c.texts[i] == key) return static_cast<std::int64_t>(i);
      fail(dim, *l, "not found");
    }
    throw SelectionError("label slices are not supported on string dimension '" + dim + "'");
  }
  bool descending = false;
  const bool monotonic = c.is_time ? check_monotonic(c.times, descending)
                                   : check_monotonic(c.numbers, descending);
  if (!monotonic)
    throw SelectionError("coordinate of dimension '" + dim +
                         "' is not monotonic: label selection needs a sorted index");
  if (const auto* l = std::get_if<Label>(&label)) {
    if (c.is_time)
      return point(c.times, time_label(*l, c), descending, options, 1e9, dim, *l);
    return point(c.numbers, number_label(*l, dim), descending, options, 1.0, dim, *l);
  }
  const auto& s = std::get<LabelSlice>(label);
  if (c.is_time) {
    std::optional<std::int64_t> a, b;
    if (s.start) a = time_label(*s.start, c);
    if (s.stop) b = time_label(*s.stop, c);
    return range(c.times, a, b, descending);
  }
  std::optional<double> a, b;
  if (s.start) a = number_label(*s.start, dim);
  if (s.stop) b = number_label(*s.stop, dim);
  return range(c.numbers, a, b, descending);
}

}  // namespace lazycube
