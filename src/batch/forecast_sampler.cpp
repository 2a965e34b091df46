// ForecastSampler: a ForecastSpec resolved against its streams (time coordinates, grids,
// channels, anchors, validity) and the assembly of batches of samples.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <future>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "batch_assembly.hpp"
#include "derived_forcings.hpp"
#include "lazycube/batch/forecast.hpp"
#include "lazycube/dataset/cf_time.hpp"
#include "lazycube/error.hpp"
#include "util/text.hpp"
#include "util/thread_pool.hpp"
#include "validity_index.hpp"
#include "window_reader.hpp"

namespace lazycube::batch {

namespace {
namespace forecast_sampling {

// Dims whose elements become channels (pressure levels, model levels, depths) rather than grid
// dims: by name, or by the CF attributes of their coordinate (axis "Z", `positive`, a vertical
// standard_name).
bool is_vertical_dim(const Dataset& ds, const std::string& dim) {
  static const std::set<std::string> names = {"level", "lev", "levels", "plev", "pressure", "pressure_level",
                                              "isobaricInhPa", "height", "depth", "altitude", "model_level",
                                              "hybrid", "z"};
  if (names.count(dim)) return true;
  if (!ds.contains(dim)) return false;
  const auto& a = ds.variable(dim).attrs();
  if (a.contains("axis") && a["axis"].is_string() && a["axis"].get<std::string>() == "Z") return true;
  if (a.contains("positive")) return true;
  if (a.contains("standard_name") && a["standard_name"].is_string()) {
    const std::string sn = a["standard_name"].get<std::string>();
    static const std::set<std::string> vertical = {"air_pressure", "height", "depth", "altitude",
                                                   "model_level_number", "atmosphere_hybrid_sigma_pressure_coordinate"};
    if (vertical.count(sn)) return true;
  }
  return false;
}

// A coordinate value as channel-name text: 500 for 500.0, 0.5, "sfc".
std::string label_text(const NDArray& coord, std::uint64_t i) {
  const DataType& t = coord.dtype;
  if (t.is_variable_length()) return coord.strings[i];
  double v = 0;
  std::vector<std::byte> one(8);
  cast_elements(coord.data.data() + i * t.itemsize, t, one.data(), DataType::float_(8), 1);
  std::memcpy(&v, one.data(), 8);
  if (std::isfinite(v) && std::trunc(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<std::int64_t>(v));
  std::string s = std::to_string(v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  return s;
}

std::vector<double> as_doubles(const NDArray& a, const std::string& what) {
  if (!castable(a.dtype)) throw UsageError(what + " has dtype " + a.dtype.name() + ", not a number");
  std::vector<double> out(a.size());
  cast_elements(a.data.data(), a.dtype, reinterpret_cast<std::byte*>(out.data()), DataType::float_(8), out.size());
  return out;
}

bool attr_is(const nlohmann::json& attrs, const char* key, const std::set<std::string>& values) {
  return attrs.contains(key) && attrs[key].is_string() && values.count(attrs[key].get<std::string>());
}

}  // namespace forecast_sampling
}  // namespace

// One variable of a stream as it enters a batch.
struct ForecastField {
  std::string name;
  Variable var;
  bool has_time = false;
  std::size_t time_axis = 0;            // in var.dims()
  std::vector<std::size_t> grid_axes;   // var axis of each grid dim, in the stream's grid order
  std::vector<std::size_t> extra_axes;  // var axes flattened into channels, in var order
  Shape extra_shape;
  std::uint64_t channels = 1;
};

struct ForecastStream {
  std::string name;
  Dataset ds;
  StreamVariables vars;
  std::vector<std::int64_t> times;  // ns, strictly increasing
  std::vector<std::string> grid_dims;
  Shape grid_shape;
  std::vector<ForecastField> inputs, targets, forcing_fields;
  struct Forcing {
    bool derived = false;
    std::size_t field = 0;  // forcing_fields index when read
    std::string name;
  };
  std::vector<Forcing> forcings;
  std::vector<std::string> input_channels, target_channels, forcing_channels;
  std::uint64_t input_count = 0, target_count = 0, forcing_count = 0;  // channels
  bool needs_input_times = false, needs_target_times = false;
  ForcingPoints points;  // the whole grid's latitude/longitude (derived forcings on the grid)
  ValidityIndex validity;
  std::vector<std::uint64_t> time_chunk_starts;  // of the first input, along time

  // Index of time `t` in `times`, or -1.
  std::int64_t find(std::int64_t t) const {
    auto it = std::lower_bound(times.begin(), times.end(), t);
    return it != times.end() && *it == t ? it - times.begin() : -1;
  }
  std::string label() const { return name.empty() ? std::string("the data") : "stream '" + name + "'"; }
};

struct ForecastSampler::Impl {
  ForecastSpec spec;
  ForecastRuntime runtime;
  std::shared_ptr<ChunkCache> cache;
  std::vector<ForecastStream> streams;
  std::vector<std::int64_t> anchors;
  ExcludedAnchors excluded;
  WindowGrid patch_grid;  // over the patched grid dims of stream 0 (size 1 without patches)
  std::vector<std::size_t> patch_axes;  // grid position of each patch grid dim
  bool index_loaded = true;

  void resolve_stream(ForecastStream& s);
  void resolve_times(ForecastStream& s);
  void resolve_points(ForecastStream& s);
  void resolve_anchors();
  // The selection of field `f` (of stream `s`) one sample reads at time `at` (unused for a
  // static field) within its patch (null: the whole grid).
  ArraySelection window_of(const ForecastStream& s, const ForecastField& f, std::int64_t at,
                           const std::vector<IndexRange>* patch) const;
  void fill_block(const ForecastStream& s, const ForecastField& f, const std::vector<std::int64_t>& sample_anchors,
                  const std::vector<std::vector<IndexRange>>& patches, const std::vector<std::int64_t>& offsets,
                  std::uint64_t times_out, std::uint64_t time_first, std::uint64_t channels_out,
                  std::uint64_t channel_first, float* out) const;
};

void ForecastSampler::Impl::resolve_times(ForecastStream& s) {
  const std::string& dim = spec.time_dim;
  bool uses = false;
  for (const auto& [n, size] : s.ds.dims()) uses = uses || n == dim;
  if (!uses)
    throw SelectionError(s.label() + " has no time dim '" + dim + "' (dims: " + [&] {
      std::vector<std::string> d;
      for (const auto& [n, size] : s.ds.dims()) d.push_back(n);
      return join_names(d);
    }() + "); name it with time_dim=");
  if (!s.ds.contains(dim))
    throw SelectionError(s.label() + " has no coordinate for its time dim '" + dim + "': times are matched by value");
  const Variable& tv = s.ds.variable(dim);
  if (tv.dims() != std::vector<std::string>{dim})
    throw SelectionError(s.label() + ": the time coordinate '" + dim + "' is not 1-D along '" + dim + "'");
  if (tv.dtype().kind != DTypeKind::DateTime)
    throw UsageError(s.label() + ": the time coordinate '" + dim + "' has dtype " + tv.dtype().name() +
                     " (units " + (tv.attrs().contains("units") ? tv.attrs()["units"].dump() : std::string("none")) +
                     "), not datetime64: its times cannot be compared with durations and other streams (open it with "
                     "decode_cf, in a standard calendar)");
  const NDArray values = tv.read();
  const std::int64_t unit = datetime_unit_ns(tv.dtype().unit) * tv.dtype().scale;
  if (unit <= 0) throw UsageError(s.label() + ": the time coordinate's unit " + tv.dtype().name() + " has no fixed length");
  s.times.resize(values.size());
  std::memcpy(s.times.data(), values.data.data(), s.times.size() * 8);
  for (std::size_t i = 0; i < s.times.size(); ++i) {
    if (s.times[i] == cf::kNaT)
      throw UsageError(s.label() + ": the time coordinate '" + dim + "' holds NaT at index " + std::to_string(i));
    __int128 ns = static_cast<__int128>(s.times[i]) * unit;
    if (ns > std::numeric_limits<std::int64_t>::max() || ns < std::numeric_limits<std::int64_t>::min() + 1)
      throw UsageError(s.label() + ": time " + std::to_string(i) + " lies outside the years 1678-2262 that nanoseconds hold");
    s.times[i] = static_cast<std::int64_t>(ns);
    if (i > 0 && s.times[i] <= s.times[i - 1])
      throw UsageError(s.label() + ": the time coordinate '" + dim + "' is not increasing: " +
                       cf::format_datetime_ns(s.times[i - 1]) + " at index " + std::to_string(i - 1) + ", then " +
                       cf::format_datetime_ns(s.times[i]) + " at index " + std::to_string(i));
  }
  if (s.times.empty()) throw UsageError(s.label() + ": the time dim '" + dim + "' is empty");
}

void ForecastSampler::Impl::resolve_stream(ForecastStream& s) {
  using namespace forecast_sampling;
  resolve_times(s);
  const std::string& tdim = spec.time_dim;
  auto var_of = [&](const std::string& n, const char* role) -> Variable {
    if (!s.ds.contains(n)) {
      throw NotFound(std::string(role) + " variable '" + n + "' is not in " + s.label() + " (variables: " +
                     join_names(s.ds.data_var_names()) + ")");
    }
    const Variable& v = s.ds.variable(n);
    if (v.dtype().is_variable_length() || !castable(v.dtype()))
      throw UsageError(std::string(role) + " variable '" + n + "' of " + s.label() + " has dtype " + v.dtype().name() +
                       ", not a number");
    return v;
  };
  // Grid dims: the non-vertical dims the time-varying fields share, in the first input's order.
  std::vector<Variable> timed;
  for (const auto& n : s.vars.inputs) timed.push_back(var_of(n, "input"));
  for (const auto& n : s.vars.targets) timed.push_back(var_of(n, "target"));
  for (const auto& n : s.vars.forcings)
    if (!is_derived_forcing(n)) {
      if (!s.ds.contains(n) && n.find("progress") != std::string::npos)
        throw UsageError("forcing '" + n + "' is neither a variable of " + s.label() + " nor a derived forcing (" +
                         join_names(derived_forcing_names()) + ")");
      if (!s.ds.contains(n))
        throw NotFound("forcing '" + n + "' is neither a variable of " + s.label() + " (variables: " +
                       join_names(s.ds.data_var_names()) + ") nor a derived forcing (" +
                       join_names(derived_forcing_names()) + ")");
      const Variable v = var_of(n, "forcing");
      if (v.has_dim(tdim)) timed.push_back(v);
    }
  for (const auto& v : timed)
    if (!v.has_dim(tdim))
      throw SelectionError("variable '" + v.name() + "' of " + s.label() + " has no time dim '" + tdim + "' (dims: " +
                           join_names(v.dims()) + "): a field without time is a forcing");
  if (!timed.empty()) {
    for (const auto& d : timed.front().dims()) {
      if (d == tdim || is_vertical_dim(s.ds, d)) continue;
      bool all = true;
      for (const auto& v : timed) all = all && v.has_dim(d);
      if (all) s.grid_dims.push_back(d);
    }
  } else {
    throw UsageError(s.label() + " has no time-varying variable among its inputs, targets and forcings");
  }
  for (const auto& d : s.grid_dims) s.grid_shape.push_back(*s.ds.dim_size(d));
  auto field_of = [&](const std::string& n, const char* role) {
    ForecastField f;
    f.name = n;
    f.var = var_of(n, role);
    const auto& dims = f.var.dims();
    for (const auto& g : s.grid_dims) {
      auto it = std::find(dims.begin(), dims.end(), g);
      if (it == dims.end())
        throw SelectionError(std::string(role) + " variable '" + n + "' of " + s.label() + " lacks the grid dim '" + g +
                             "' (its dims: " + join_names(dims) + "; the grid: " + join_names(s.grid_dims) + ")");
      f.grid_axes.push_back(static_cast<std::size_t>(it - dims.begin()));
    }
    const Shape shape = f.var.shape();
    for (std::size_t a = 0; a < dims.size(); ++a) {
      if (dims[a] == tdim) {
        f.has_time = true;
        f.time_axis = a;
      } else if (std::find(s.grid_dims.begin(), s.grid_dims.end(), dims[a]) == s.grid_dims.end()) {
        f.extra_axes.push_back(a);
        f.extra_shape.push_back(shape[a]);
        f.channels *= shape[a];
      }
    }
    return f;
  };
  // Channel names: the variable, then the label of each element along its extra dims.
  auto channels_of = [&](const ForecastField& f, std::vector<std::string>& out) {
    std::vector<NDArray> labels;
    for (std::size_t a : f.extra_axes) {
      const std::string& d = f.var.dims()[a];
      labels.push_back(s.ds.contains(d) && s.ds.variable(d).dims() == std::vector<std::string>{d} ? s.ds.variable(d).read()
                                                                                                  : NDArray{});
    }
    for (std::uint64_t c = 0; c < f.channels; ++c) {
      std::string name = f.name;
      std::uint64_t rest = c;
      std::vector<std::uint64_t> idx(f.extra_axes.size());
      for (std::size_t k = f.extra_axes.size(); k-- > 0;) {
        idx[k] = rest % f.extra_shape[k];
        rest /= f.extra_shape[k];
      }
      for (std::size_t k = 0; k < idx.size(); ++k)
        name += "_" + (labels[k].size() > 0 ? label_text(labels[k], idx[k]) : std::to_string(idx[k]));
      out.push_back(name);
    }
  };
  for (const auto& n : s.vars.inputs) {
    s.inputs.push_back(field_of(n, "input"));
    if (!s.inputs.back().has_time)
      throw SelectionError("input variable '" + n + "' of " + s.label() + " has no time dim '" + tdim + "'");
    channels_of(s.inputs.back(), s.input_channels);
  }
  for (const auto& n : s.vars.targets) {
    s.targets.push_back(field_of(n, "target"));
    channels_of(s.targets.back(), s.target_channels);
  }
  bool needs_points = false;
  for (const auto& n : s.vars.forcings) {
    ForecastStream::Forcing fc;
    fc.name = n;
    if (is_derived_forcing(n) && !s.ds.contains(n)) {
      fc.derived = true;
      needs_points = needs_points || derived_forcing_needs_grid(n);
      s.forcing_channels.push_back(n);
    } else {
      fc.field = s.forcing_fields.size();
      s.forcing_fields.push_back(field_of(n, "forcing"));
      channels_of(s.forcing_fields.back(), s.forcing_channels);
    }
    s.forcings.push_back(fc);
  }
  s.input_count = s.input_channels.size();
  s.target_count = s.target_channels.size();
  s.forcing_count = s.forcing_channels.size();
  bool timed_forcing = false;
  for (const auto& f : s.forcing_fields) timed_forcing = timed_forcing || f.has_time;
  s.needs_input_times = !s.inputs.empty() || timed_forcing;
  s.needs_target_times = (!s.targets.empty() || timed_forcing) && !spec.target_offsets.empty();
  if (needs_points) resolve_points(s);
  // where the time chunks of the first time-varying field start (chunk shuffle)
  const Variable& first = timed.front();
  const auto dims = first.dims();
  const std::size_t ta = static_cast<std::size_t>(std::find(dims.begin(), dims.end(), tdim) - dims.begin());
  s.time_chunk_starts = first.chunk_starts(ta);
}

void ForecastSampler::Impl::resolve_points(ForecastStream& s) {
  using namespace forecast_sampling;
  // Latitude / longitude: coordinates over grid dims, recognised by name, units or standard_name.
  static const std::set<std::string> lat_names = {"lat", "latitude", "nav_lat", "y_lat"};
  static const std::set<std::string> lon_names = {"lon", "longitude", "nav_lon", "x_lon"};
  std::optional<Variable> lat, lon;
  for (const auto& n : s.ds.variable_names()) {
    const Variable& v = s.ds.variable(n);
    bool on_grid = v.ndim() > 0;
    for (const auto& d : v.dims()) on_grid = on_grid && std::find(s.grid_dims.begin(), s.grid_dims.end(), d) != s.grid_dims.end();
    if (!on_grid) continue;
    const auto& a = v.attrs();
    if (!lat && (lat_names.count(n) || attr_is(a, "standard_name", {"latitude"}) ||
                 attr_is(a, "units", {"degrees_north", "degree_north", "degree_N", "degrees_N", "degreeN", "degreesN"})))
      lat = v;
    else if (!lon && (lon_names.count(n) || attr_is(a, "standard_name", {"longitude"}) ||
                      attr_is(a, "units", {"degrees_east", "degree_east", "degree_E", "degrees_E", "degreeE", "degreesE"})))
      lon = v;
  }
  std::string needing;
  for (const auto& f : s.forcings)
    if (f.derived && derived_forcing_needs_grid(f.name)) needing = f.name;
  if (!lat || !lon)
    throw UsageError("derived forcing '" + needing + "' needs the latitude and longitude of " + s.label() +
                     "'s grid (" + join_names(s.grid_dims) + "), but " + (!lat ? "no latitude" : "no longitude") +
                     " coordinate was found (a coordinate over grid dims named lat/latitude, or with units "
                     "degrees_north / degrees_east)");
  // Broadcast each over the whole grid, C order over grid_dims.
  const std::uint64_t n = shape_size(s.grid_shape);
  auto spread = [&](const Variable& v) {
    const std::vector<double> vals = as_doubles(v.read(), "coordinate '" + v.name() + "'");
    std::vector<double> out(n);
    std::vector<std::size_t> axis_of;  // grid position of each of v's dims
    for (const auto& d : v.dims())
      axis_of.push_back(static_cast<std::size_t>(std::find(s.grid_dims.begin(), s.grid_dims.end(), d) - s.grid_dims.begin()));
    const Shape vs = v.shape();
    std::vector<std::uint64_t> idx(s.grid_dims.size());
    for (std::uint64_t p = 0; p < n; ++p) {
      std::uint64_t rest = p;
      for (std::size_t g = s.grid_dims.size(); g-- > 0;) {
        idx[g] = rest % s.grid_shape[g];
        rest /= s.grid_shape[g];
      }
      std::uint64_t off = 0;
      for (std::size_t k = 0; k < axis_of.size(); ++k) off = off * vs[k] + idx[axis_of[k]];
      out[p] = vals[off];
    }
    return out;
  };
  s.points = ForcingPoints(spread(*lat), spread(*lon));
}

void ForecastSampler::Impl::resolve_anchors() {
  const ForecastStream& first = streams.front();
  std::int64_t step = 0;
  if (spec.anchor_step) {
    step = *spec.anchor_step;
  } else {
    for (std::size_t i = 1; i < first.times.size(); ++i) {
      const std::int64_t d = first.times[i] - first.times[i - 1];
      if (step == 0 || d < step) step = d;
    }
    if (step == 0) throw UsageError(first.label() + " has a single time: give anchor_step");
  }
  std::vector<AnchorRange> ranges = spec.anchors;
  if (ranges.empty()) ranges.push_back({});
  std::vector<std::int64_t> candidates;
  for (const auto& r : ranges) {
    const std::int64_t a = r.start ? *r.start : first.times.front();
    const std::int64_t b = r.end ? *r.end : first.times.back();
    if (b < a) continue;
    const std::uint64_t count = static_cast<std::uint64_t>((static_cast<__int128>(b) - a) / step) + 1;
    if (count > 200'000'000)
      throw UsageError("anchors: " + std::to_string(count) + " anchors from " + cf::format_datetime_ns(a) + " to " +
                       cf::format_datetime_ns(b) + " every " + format_duration(step) + " is too many");
    for (std::uint64_t k = 0; k < count; ++k) candidates.push_back(a + static_cast<std::int64_t>(k) * step);
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  for (const std::int64_t t : candidates) {
    enum { Ok, OutOfRange, Absent, Missing } why = Ok;
    for (const auto& s : streams) {
      auto check = [&](const std::vector<std::int64_t>& offsets, const std::vector<ForecastField>& fields,
                       bool forcing_fields) {
        for (const std::int64_t off : offsets) {
          const std::int64_t at = t + off;
          if (at < s.times.front() || at > s.times.back()) {
            why = std::max(why, OutOfRange) == OutOfRange ? OutOfRange : why;
            if (why == Ok) why = OutOfRange;
            return;
          }
          const std::int64_t i = s.find(at);
          if (i < 0) {
            if (why == Ok) why = Absent;
            return;
          }
          if (spec.missing == MissingPolicy::Skip)
            for (const auto& f : fields)
              if (f.has_time && (!forcing_fields || true) && s.validity.missing(f.name, static_cast<std::uint64_t>(i))) {
                if (why == Ok) why = Missing;
                return;
              }
        }
      };
      if (s.needs_input_times) {
        check(spec.input_offsets, s.inputs, false);
        if (why == Ok) check(spec.input_offsets, s.forcing_fields, true);
      }
      if (why == Ok && s.needs_target_times) {
        check(spec.target_offsets, s.targets, false);
        if (why == Ok) check(spec.target_offsets, s.forcing_fields, true);
      }
      if (why != Ok) break;
    }
    if (why == Ok) anchors.push_back(t);
    else if (why == OutOfRange) ++excluded.out_of_range;
    else if (why == Absent) ++excluded.time_absent;
    else ++excluded.missing_values;
  }
  if (anchors.empty()) {
    std::string spans;
    for (const auto& s : streams)
      spans += "; " + s.label() + " has times " + cf::format_datetime_ns(s.times.front()) + " to " +
               cf::format_datetime_ns(s.times.back());
    throw UsageError("no anchor is a sample: of " + std::to_string(candidates.size()) + " anchors, " +
                     std::to_string(excluded.out_of_range) + " need times outside the data, " +
                     std::to_string(excluded.time_absent) + " need absent time steps, " +
                     std::to_string(excluded.missing_values) + " have missing values" + spans);
  }
}

ForecastSampler::ForecastSampler(std::vector<std::pair<std::string, Dataset>> streams, ForecastSpec spec,
                                 ForecastRuntime runtime)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.spec = std::move(spec);
  m.runtime = std::move(runtime);
  m.cache = m.runtime.cache ? m.runtime.cache : ChunkCache::global();
  if (streams.size() != m.spec.streams.size())
    throw UsageError("the specification names " + std::to_string(m.spec.streams.size()) + " streams, the data has " +
                     std::to_string(streams.size()));
  for (std::size_t i = 0; i < streams.size(); ++i) {
    if (streams[i].first != m.spec.streams[i].first)
      throw UsageError("stream " + std::to_string(i) + " is '" + streams[i].first + "' in the data but '" +
                       m.spec.streams[i].first + "' in the specification");
    ForecastStream s;
    s.name = streams[i].first;
    s.ds = std::move(streams[i].second);
    s.vars = m.spec.streams[i].second;
    m.resolve_stream(s);
    m.streams.push_back(std::move(s));
  }
  if (!m.spec.patch_dims.empty()) {
    const ForecastStream& s = m.streams.front();
    DimSizes extents;
    for (std::size_t g = 0; g < s.grid_dims.size(); ++g) extents.emplace_back(s.grid_dims[g], s.grid_shape[g]);
    for (const auto& [d, n] : m.spec.patch_dims) {
      auto it = std::find(s.grid_dims.begin(), s.grid_dims.end(), d);
      if (it == s.grid_dims.end())
        throw SelectionError("patch_dims names '" + d + "', which is not a grid dim of " + s.label() + " (" +
                             join_names(s.grid_dims) + ")");
      m.patch_axes.push_back(static_cast<std::size_t>(it - s.grid_dims.begin()));
    }
    m.patch_grid = WindowGrid(extents, m.spec.patch_dims, m.spec.patch_overlap);
  }
  if (m.spec.missing == MissingPolicy::Skip) {
    for (auto& s : m.streams) {
      std::vector<Variable> vars;
      std::set<std::string> seen;
      for (const auto* fields : {&s.inputs, &s.targets, &s.forcing_fields})
        for (const auto& f : *fields)
          if (f.has_time && seen.insert(f.name).second) vars.push_back(f.var);
      s.validity = ValidityIndex::build(vars, m.spec.time_dim, s.label(), m.runtime.index_dir, m.runtime.progress,
                                        m.runtime.validity_index);
      m.index_loaded = m.index_loaded && s.validity.loaded();
    }
  }
  m.resolve_anchors();
}

ForecastSampler::~ForecastSampler() = default;

const ForecastSpec& ForecastSampler::spec() const { return impl_->spec; }
std::uint64_t ForecastSampler::patches() const { return impl_->patch_grid.size(); }
std::uint64_t ForecastSampler::size() const { return impl_->anchors.size() * patches(); }
const std::vector<std::int64_t>& ForecastSampler::anchor_times() const { return impl_->anchors; }
const ExcludedAnchors& ForecastSampler::excluded() const { return impl_->excluded; }
const std::shared_ptr<ChunkCache>& ForecastSampler::cache() const { return impl_->cache; }
bool ForecastSampler::index_loaded() const { return impl_->index_loaded; }

std::string ForecastSampler::validity_index() const {
  if (impl_->spec.missing != MissingPolicy::Skip) return {};
  nlohmann::json merged;
  for (const auto& s : impl_->streams) {
    nlohmann::json doc = nlohmann::json::parse(s.validity.to_json());
    if (merged.is_null()) {
      merged = std::move(doc);
      continue;
    }
    for (auto& e : doc["indexes"]) merged["indexes"].push_back(std::move(e));
  }
  return merged.is_null() ? std::string() : merged.dump();
}

std::vector<std::string> ForecastSampler::stream_names() const {
  std::vector<std::string> out;
  for (const auto& s : impl_->streams) out.push_back(s.name);
  return out;
}

std::vector<ForecastChannel> ForecastSampler::channels(std::size_t stream, ForecastRole role) const {
  if (stream >= impl_->streams.size()) throw UsageError("stream " + std::to_string(stream) + " is out of range");
  const ForecastStream& s = impl_->streams[stream];
  std::vector<ForecastChannel> out;
  auto add = [&](const ForecastField& f) {
    for (std::uint64_t c = 0; c < f.channels; ++c) {
      ForecastChannel ch;
      ch.variable = f.name;
      std::uint64_t rest = c;
      for (std::size_t k = f.extra_axes.size(); k-- > 0;) {
        ch.at.insert(ch.at.begin(), {f.var.dims()[f.extra_axes[k]], rest % f.extra_shape[k]});
        rest /= f.extra_shape[k];
      }
      out.push_back(std::move(ch));
    }
  };
  if (role == ForecastRole::Inputs) for (const auto& f : s.inputs) add(f);
  if (role == ForecastRole::Targets) for (const auto& f : s.targets) add(f);
  if (role == ForecastRole::Forcings)
    for (const auto& fc : s.forcings) {
      if (fc.derived) out.push_back(ForecastChannel{fc.name, fc.name, {}, true});
      else add(s.forcing_fields[fc.field]);
    }
  const auto& names = role == ForecastRole::Inputs ? s.input_channels : role == ForecastRole::Targets ? s.target_channels
                                                                                                      : s.forcing_channels;
  for (std::size_t i = 0; i < out.size(); ++i) out[i].name = names[i];
  return out;
}

std::shared_ptr<const SampleFootprint> ForecastSampler::footprint() const {
  const Impl& m = *impl_;
  auto fp = std::make_shared<SampleFootprint>();
  fp->samples_per_position = patches();
  const ForecastStream& s = m.streams.front();
  // the offsets the first stream reads
  std::vector<std::int64_t> offsets;
  if (s.needs_input_times) offsets.insert(offsets.end(), m.spec.input_offsets.begin(), m.spec.input_offsets.end());
  if (s.needs_target_times) offsets.insert(offsets.end(), m.spec.target_offsets.begin(), m.spec.target_offsets.end());
  if (offsets.empty()) offsets.push_back(0);
  const auto [lo, hi] = std::minmax_element(offsets.begin(), offsets.end());
  auto unit_of = [&](std::int64_t t) -> std::uint64_t {
    const auto i = static_cast<std::uint64_t>(std::max<std::int64_t>(s.find(t), 0));
    return static_cast<std::uint64_t>(std::upper_bound(s.time_chunk_starts.begin(), s.time_chunk_starts.end(), i) -
                                      s.time_chunk_starts.begin()) - 1;
  };
  fp->first_unit.reserve(m.anchors.size());
  fp->last_unit.reserve(m.anchors.size());
  for (const std::int64_t a : m.anchors) {
    fp->first_unit.push_back(unit_of(a + *lo));
    fp->last_unit.push_back(std::max(fp->first_unit.back(), unit_of(a + *hi)));
  }
  // A unit: the first stream's time chunk (its mean length in steps) of every time-varying field
  // of every stream, decoded.
  const double steps = static_cast<double>(s.times.size()) / static_cast<double>(std::max<std::size_t>(s.time_chunk_starts.size(), 1));
  double bytes = 0;
  for (const auto& st : m.streams) {
    std::set<std::string> seen;
    for (const auto* fields : {&st.inputs, &st.targets, &st.forcing_fields})
      for (const auto& f : *fields)
        if (f.has_time && seen.insert(f.name).second) {
          const Shape shape = f.var.shape();
          const double per_step = static_cast<double>(shape_size(shape)) / static_cast<double>(std::max<std::uint64_t>(shape[f.time_axis], 1));
          bytes += per_step * static_cast<double>(f.var.dtype().itemsize);
        }
  }
  fp->unit_bytes = static_cast<std::uint64_t>(bytes * steps);
  return fp;
}

void ForecastSampler::for_each_read(std::uint64_t id, std::uint64_t rollout,
                                    const std::function<void(const ArrayPtr&, const ArraySelection&)>& visit) const {
  const Impl& m = *impl_;
  if (id >= size())
    throw SelectionError("sample " + std::to_string(id) + " is out of range (" + std::to_string(size()) + " samples)");
  const std::uint64_t P = patches();
  const std::int64_t anchor = m.anchors[id / P];
  std::vector<IndexRange> patch;
  if (!m.spec.patch_dims.empty()) patch = m.patch_grid.ranges(id % P);
  const std::vector<IndexRange>* patch_ptr = m.spec.patch_dims.empty() ? nullptr : &patch;
  const auto& leads = m.spec.target_offsets;
  const std::size_t R = rollout == 0 ? leads.size() : std::min<std::size_t>(rollout, leads.size());
  auto visit_field = [&](const ForecastStream& s, const ForecastField& f, bool inputs, bool targets) {
    auto at = [&](std::int64_t offset) {
      const ArraySelection w = m.window_of(s, f, anchor + offset, patch_ptr);
      visit(f.var.array(), f.var.array_selection_of(w));
    };
    if (!f.has_time) return at(0);
    if (inputs)
      for (const std::int64_t o : m.spec.input_offsets) at(o);
    if (targets)
      for (std::size_t k = 0; k < R; ++k) at(leads[k]);
  };
  for (const auto& s : m.streams) {
    for (const auto& f : s.inputs) visit_field(s, f, true, false);
    for (const auto& f : s.targets) visit_field(s, f, false, true);
    for (const auto& fc : s.forcings)
      if (!fc.derived) visit_field(s, s.forcing_fields[fc.field], true, true);
  }
}

OrderPlanning ForecastSampler::planning(BlockPlan blocks) const {
  OrderPlanning p;
  p.footprint = footprint();
  p.cache_bytes = impl_->cache ? impl_->cache->stats().budget_bytes : 0;
  p.blocks = blocks;
  return p;
}

ArraySelection ForecastSampler::Impl::window_of(const ForecastStream& s, const ForecastField& f, std::int64_t at,
                                               const std::vector<IndexRange>* patch) const {
  const std::size_t nd = f.var.ndim();
  const Shape vshape = f.var.shape();
  ArraySelection w(nd);
  for (std::size_t a = 0; a < nd; ++a) w[a] = IndexRange::all(vshape[a]);
  if (f.has_time) {
    const std::int64_t i = s.find(at);
    if (i < 0) throw UsageError("internal: time " + cf::format_datetime_ns(at) + " of an anchor is absent");
    w[f.time_axis] = {static_cast<std::uint64_t>(i), 1, 1};
  }
  if (patch)
    for (std::size_t k = 0; k < patch_axes.size(); ++k) w[f.grid_axes[patch_axes[k]]] = (*patch)[k];
  return w;
}

// Field `f` at the times anchor + offsets of each sample, into out (samples, times_out,
// channels_out, grid...) at times [time_first, + offsets) and channels [channel_first, + f.channels).
void ForecastSampler::Impl::fill_block(const ForecastStream& s, const ForecastField& f,
                                       const std::vector<std::int64_t>& sample_anchors,
                                       const std::vector<std::vector<IndexRange>>& patches,
                                       const std::vector<std::int64_t>& offsets, std::uint64_t times_out,
                                       std::uint64_t time_first, std::uint64_t channels_out,
                                       std::uint64_t channel_first, float* out) const {
  if (sample_anchors.empty()) return;  // an empty batch (a rank's share of the last round)
  const std::size_t nd = f.var.ndim();
  const Shape vshape = f.var.shape();
  const std::size_t B = sample_anchors.size();
  const std::uint64_t T = f.has_time ? offsets.size() : 1;  // a static field is read once per patch
  Shape grid_out = s.grid_shape;
  if (!patches.empty())
    for (std::size_t k = 0; k < patch_axes.size(); ++k) grid_out[patch_axes[k]] = patches.front()[k].count;
  const std::uint64_t grid_n = shape_size(grid_out);
  const std::uint64_t block_n = f.channels * grid_n;  // elements of one (sample, time) window
  // windows: one per (sample, time) (a static field: one per sample with a patch, else one)
  const std::size_t reads = f.has_time ? B * T : (patches.empty() ? 1 : B);
  std::vector<ArraySelection> windows(reads);
  for (std::size_t r = 0; r < reads; ++r) {
    const std::size_t b = f.has_time ? r / T : r;
    windows[r] = window_of(s, f, f.has_time ? sample_anchors[b] + offsets[r % T] : 0, patches.empty() ? nullptr : &patches[b]);
  }
  // the window's own axes (the var's dims without time) and, for each output axis, its source
  WindowLayout layout;
  std::vector<int> src_pos(nd, -1);
  for (std::size_t a = 0; a < nd; ++a) {
    if (f.has_time && a == f.time_axis) continue;
    src_pos[a] = static_cast<int>(layout.src_shape.size());
    layout.src_shape.push_back(windows[0][a].count);
  }
  for (std::size_t k = 0; k < f.extra_axes.size(); ++k) {
    layout.dst_shape.push_back(f.extra_shape[k]);
    layout.src_axes.push_back(src_pos[f.extra_axes[k]]);
  }
  for (std::size_t g = 0; g < f.grid_axes.size(); ++g) {
    layout.dst_shape.push_back(grid_out[g]);
    layout.src_axes.push_back(src_pos[f.grid_axes[g]]);
  }
  // The (sample, time) blocks of the output, channels before the grid: contiguous, so a field
  // with time is read straight into them; a static one is read once (per patch) and copied to
  // every time of its sample.
  const std::uint64_t times_block = f.has_time ? T : offsets.size();
  auto block_of = [&](std::size_t b, std::size_t k) {
    return out + ((b * times_out + time_first + k) * channels_out + channel_first) * grid_n;
  };
  const DataType f32 = DataType::float_(4);
  if (f.has_time) {
    std::vector<std::byte*> dests(reads);
    for (std::size_t r = 0; r < reads; ++r) dests[r] = reinterpret_cast<std::byte*>(block_of(r / T, r % T));
    read_windows_as(f.var, windows, layout, f32, dests, cache.get());
  } else {
    std::vector<float> once(reads * block_n);
    std::vector<std::byte*> dests(reads);
    for (std::size_t r = 0; r < reads; ++r) dests[r] = reinterpret_cast<std::byte*>(once.data() + r * block_n);
    read_windows_as(f.var, windows, layout, f32, dests, cache.get());
    parallel_for(B * times_block, [&](std::size_t job) {
      const std::size_t b = job / times_block, k = job % times_block;
      std::memcpy(block_of(b, k), once.data() + (patches.empty() ? 0 : b) * block_n, block_n * sizeof(float));
    });
  }
  if (spec.missing == MissingPolicy::Error) {
    for (std::size_t job = 0; job < B * times_block; ++job) {
      const std::size_t b = job / times_block, k = job % times_block;
      const float* dst = out + ((b * times_out + time_first + k) * channels_out + channel_first) * grid_n;
      for (std::uint64_t e = 0; e < block_n; ++e)
        if (std::isnan(dst[e]))
          throw MissingDataError("variable '" + f.name + "' of " + s.label() + " has missing values at " +
                                 (f.has_time ? "time " + cf::format_datetime_ns(sample_anchors[b] + offsets[k])
                                             : std::string("its static field")) +
                                 " (the sample anchored at " + cf::format_datetime_ns(sample_anchors[b]) +
                                 "; missing=\"error\")");
    }
  }
}

namespace {
namespace forecast_sampling {

BatchArray float_array(const std::string& name, std::vector<std::string> dims, Shape shape) {
  BatchArray a;
  a.name = name;
  a.dtype = DataType::float_(4);
  a.dims = std::move(dims);
  a.shape = std::move(shape);
  a.nbytes = shape_size(a.shape) * sizeof(float);
  a.data = allocate_batch_buffer(nullptr, std::max<std::size_t>(a.nbytes, 1));
  return a;
}

BatchArray mask_of(const BatchArray& a) {
  BatchArray m;
  m.name = a.name + "_mask";
  m.dtype = DataType::boolean();
  m.dims = a.dims;
  m.shape = a.shape;
  m.nbytes = a.size();
  m.data = allocate_batch_buffer(nullptr, std::max<std::size_t>(m.nbytes, 1));
  const float* v = reinterpret_cast<const float*>(a.data.get());
  auto* out = reinterpret_cast<std::uint8_t*>(m.data.get());
  // In slices on the pool, each a plain loop over local restrict pointers that the compiler
  // vectorises (a byte store may alias anything: a.size() in the condition, or pointers read
  // through a capture, were re-read per element, 44 % of a keep-mode epoch's time).
  const std::uint64_t n = a.size();
  constexpr std::uint64_t kSlice = std::uint64_t{1} << 18;
  parallel_for(static_cast<std::size_t>((n + kSlice - 1) / kSlice), [v, out, n](std::size_t job) {
    const std::uint64_t begin = job * kSlice, end = std::min(n, begin + kSlice);
    const float* __restrict src = v + begin;
    std::uint8_t* __restrict dst = out + begin;
    for (std::uint64_t i = 0; i < end - begin; ++i) dst[i] = src[i] == src[i] ? 1 : 0;  // false for NaN only
  });
  return m;
}

}  // namespace forecast_sampling
}  // namespace

ForecastBatch ForecastSampler::batch(std::span<const std::uint64_t> ids, std::uint64_t rollout) const {
  using namespace forecast_sampling;
  const Impl& m = *impl_;
  const std::uint64_t leads = m.spec.target_offsets.size();
  if (rollout > leads)
    throw UsageError("rollout " + std::to_string(rollout) + " exceeds the " + std::to_string(leads) +
                     " lead times of target_offsets");
  const std::uint64_t R = rollout == 0 ? leads : rollout;
  ForecastBatch out;
  out.rollout = R;
  const std::uint64_t P = patches();
  std::vector<std::int64_t> anchors;
  std::vector<std::vector<IndexRange>> patch_ranges;
  for (const std::uint64_t id : ids) {
    if (id >= size())
      throw SelectionError("sample " + std::to_string(id) + " is out of range (" + std::to_string(size()) + " samples)");
    out.samples.push_back(id);
    anchors.push_back(m.anchors[id / P]);
    if (!m.spec.patch_dims.empty()) patch_ranges.push_back(m.patch_grid.ranges(id % P));
  }
  out.anchors = anchors;
  const std::vector<std::int64_t> leads_used(m.spec.target_offsets.begin(), m.spec.target_offsets.begin() + R);
  std::vector<std::int64_t> all_times = m.spec.input_offsets;
  all_times.insert(all_times.end(), leads_used.begin(), leads_used.end());
  const std::uint64_t B = ids.size();
  std::vector<std::function<void()>> reads;  // one per field: run together below
  for (const auto& s : m.streams) {
    ForecastStreamBatch sb;
    sb.stream = s.name;
    sb.grid_dims = s.grid_dims;
    sb.grid_shape = s.grid_shape;
    if (!patch_ranges.empty())
      for (std::size_t k = 0; k < m.patch_axes.size(); ++k) sb.grid_shape[m.patch_axes[k]] = patch_ranges.front()[k].count;
    sb.patches = patch_ranges;
    sb.input_channels = s.input_channels;
    sb.target_channels = s.target_channels;
    sb.forcing_channels = s.forcing_channels;
    auto dims_of = [&](const char* time_name) {
      std::vector<std::string> d = {"sample", time_name, "channel"};
      d.insert(d.end(), s.grid_dims.begin(), s.grid_dims.end());
      return d;
    };
    auto shape_of = [&](std::uint64_t times, std::uint64_t channels) {
      Shape sh = {B, times, channels};
      sh.insert(sh.end(), sb.grid_shape.begin(), sb.grid_shape.end());
      return sh;
    };
    const std::uint64_t Tin = m.spec.input_offsets.size();
    sb.inputs = float_array("inputs", dims_of("time"), shape_of(s.inputs.empty() ? 0 : Tin, s.input_count));
    std::uint64_t c = 0;
    for (const auto& f : s.inputs) {
      float* dst = reinterpret_cast<float*>(sb.inputs.data.get());
      reads.push_back([&m, &s, &f, &anchors, &patch_ranges, Tin, c, dst] {
        m.fill_block(s, f, anchors, patch_ranges, m.spec.input_offsets, Tin, 0, s.input_count, c, dst);
      });
      c += f.channels;
    }
    sb.targets = float_array("targets", dims_of("lead"), shape_of(s.targets.empty() ? 0 : R, s.target_count));
    c = 0;
    for (const auto& f : s.targets) {
      float* dst = reinterpret_cast<float*>(sb.targets.data.get());
      reads.push_back([&m, &s, &f, &anchors, &patch_ranges, &leads_used, R, c, dst] {
        m.fill_block(s, f, anchors, patch_ranges, leads_used, R, 0, s.target_count, c, dst);
      });
      c += f.channels;
    }
    if (!s.forcings.empty()) {
      const std::uint64_t Tf = all_times.size();
      sb.forcings = float_array("forcings", dims_of("time"), shape_of(Tf, s.forcing_count));
      float* fo = reinterpret_cast<float*>(sb.forcings->data.get());
      const std::uint64_t grid_n = shape_size(sb.grid_shape);
      c = 0;
      for (const auto& fc : s.forcings) {
        if (!fc.derived) {
          const ForecastField& f = s.forcing_fields[fc.field];
          reads.push_back([&m, &s, &f, &anchors, &patch_ranges, &all_times, Tf, c, fo] {
            m.fill_block(s, f, anchors, patch_ranges, all_times, Tf, 0, s.forcing_count, c, fo);
          });
          c += f.channels;
          continue;
        }
        // derived: on the points of each sample's patch (or the whole grid)
        const double scale = derived_forcing_scale(fc.name);
        parallel_for(B * Tf, [&](std::size_t job) {
          const std::size_t b = job / Tf, k = job % Tf;
          ForcingPoints local;
          const ForcingPoints* pts = &s.points;
          if (!patch_ranges.empty() && !s.points.lon.empty()) {
            // gather the patch's points (C order over the grid dims)
            std::vector<IndexRange> ranges;
            for (std::size_t g = 0; g < s.grid_dims.size(); ++g) ranges.push_back(IndexRange::all(s.grid_shape[g]));
            for (std::size_t p = 0; p < m.patch_axes.size(); ++p) ranges[m.patch_axes[p]] = patch_ranges[b][p];
            std::vector<std::uint64_t> idx(ranges.size(), 0);
            for (std::uint64_t q = 0; q < grid_n; ++q) {
              std::uint64_t rest = q, off = 0;
              for (std::size_t g = ranges.size(); g-- > 0;) {
                idx[g] = ranges[g].at(rest % ranges[g].count);
                rest /= ranges[g].count;
              }
              for (std::size_t g = 0; g < ranges.size(); ++g) off = off * s.grid_shape[g] + idx[g];
              local.lat.push_back(s.points.lat[off]);
              local.lon.push_back(s.points.lon[off]);
              local.sin_lat.push_back(s.points.sin_lat[off]);
              local.cos_lat.push_back(s.points.cos_lat[off]);
            }
            pts = &local;
          }
          std::vector<double> values(grid_n);
          derived_forcing_into(fc.name, anchors[b] + all_times[k], *pts, grid_n, scale, values.data());
          float* dst = fo + ((b * Tf + k) * s.forcing_count + c) * grid_n;
          for (std::uint64_t e = 0; e < grid_n; ++e) dst[e] = static_cast<float>(values[e]);
        });
        c += 1;
      }
    }
    out.streams.push_back(std::move(sb));
  }
  // Every field's reads at once, each on a thread of its own (the decoding runs on the pool):
  // over a remote store the batch then costs one round trip, not one per field.
  std::vector<std::future<void>> running;
  std::exception_ptr failed;
  for (std::size_t r = 1; r < reads.size(); ++r) running.push_back(std::async(std::launch::async, reads[r]));
  try {
    if (!reads.empty()) reads.front()();
  } catch (...) {
    failed = std::current_exception();
  }
  for (auto& f : running) {
    try {
      f.get();
    } catch (...) {
      if (!failed) failed = std::current_exception();
    }
  }
  if (failed) std::rethrow_exception(failed);
  if (m.spec.missing == MissingPolicy::Keep)
    for (auto& sb : out.streams) {
      sb.inputs_mask = mask_of(sb.inputs);
      sb.targets_mask = mask_of(sb.targets);
      if (sb.forcings) sb.forcings_mask = mask_of(*sb.forcings);
    }
  return out;
}

}  // namespace lazycube::batch
