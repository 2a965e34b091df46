#include "batch_source.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <future>
#include <numeric>
#include <set>
#include <nlohmann/json.hpp>

#include "batch_assembly.hpp"
#include "fetch_ahead.hpp"
#include "sample_order.hpp"
#include "window_footprint.hpp"
#include "window_reader.hpp"
#include "lazycube/error.hpp"
#include "util/text.hpp"
#include "util/thread_pool.hpp"
#include "lazycube/util/dim_vec.hpp"

namespace lazycube::batch {

namespace {

std::int64_t find_index(const std::vector<std::string>& names, const std::string& name) {
  auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : static_cast<std::int64_t>(it - names.begin());
}

// A resumed epoch in a state's configuration: a state taken in it continues only in it.
nlohmann::json resume_json(const EpochRemainder& r) {
  nlohmann::json ranges = nlohmann::json::array();
  for (const PositionRange& p : r.remaining) ranges.push_back({p.begin, p.end});
  nlohmann::json out = {{"epoch", r.epoch}, {"remaining", ranges}};
  if (r.planned_world_size > 0) out["planned_for"] = {r.planned_world_size, r.planned_num_workers};
  if (r.blocks.block_samples > 0 || r.blocks.active_blocks > 0)
    out["blocks"] = {r.blocks.block_samples, r.blocks.active_blocks};
  return out;
}

nlohmann::json dims_json(const DimSizes& dims) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [d, n] : dims) j.push_back({d, n});
  return j;
}

// Rows [start, start + count) of a 1-D coordinate, for each window, as a (windows, count) array.
NDArray window_labels(const NDArray& coord, const std::vector<IndexRange>& ranges) {
  NDArray out;
  out.dtype = coord.dtype;
  const std::uint64_t count = ranges.empty() ? 0 : ranges.front().count;
  out.shape = {ranges.size(), count};
  if (coord.dtype.is_variable_length()) {
    out.strings.reserve(ranges.size() * count);
    for (const auto& r : ranges)
      for (std::uint64_t k = 0; k < count; ++k) out.strings.push_back(coord.strings[r.at(k)]);
    return out;
  }
  const std::size_t item = coord.dtype.itemsize;
  out.data.resize(ranges.size() * count * item);
  for (std::size_t w = 0; w < ranges.size(); ++w)
    std::memcpy(out.data.data() + w * count * item, coord.data.data() + ranges[w].start * item, count * item);
  return out;
}

}  // namespace

ChunkStarts BatchSource::chunk_groups(const Variable& first, std::size_t nvars, std::uint64_t& working_set_bytes) const {
  // Chunk shuffle groups windows by the chunk their start falls in. A window crossing into the
  // next chunk needs that chunk too, which is evicted before its own group comes round unless
  // groups span several chunks: along dims where windows cross chunk boundaries, groups grow
  // to k chunks (extra fetches ~1/k) while one group's chunks fit in a quarter of the cache.
  const Shape chunks = first.chunks();
  const std::size_t ng = grid_dims_.size();
  std::vector<std::uint64_t> chunk(ng), k(ng, 1), most(ng, 1);
  std::vector<bool> crossing(ng, false);
  double group_chunks = 1.0;  // chunks along the dims not windowed
  for (std::size_t d = 0; d < first.dims().size(); ++d)
    if (find_index(grid_dims_, first.dims()[d]) < 0)
      group_chunks *= static_cast<double>((first.shape()[d] + chunks[d] - 1) / std::max<std::uint64_t>(chunks[d], 1));
  for (std::size_t g = 0; g < ng; ++g) {
    chunk[g] = chunks[static_cast<std::size_t>(find_index(first.dims(), grid_dims_[g]))];
    const DimWindows& w = grid_.dims()[g];
    if (chunk[g] == 0 || chunk[g] >= w.size) continue;
    most[g] = (w.size + chunk[g] - 1) / chunk[g];
    // Window starts modulo the chunk length are multiples of gcd(stride, chunk).
    const std::uint64_t step = std::gcd(w.stride, chunk[g]);
    crossing[g] = w.length > step && w.count > 1;
  }
  // Bytes of one (outer) chunk of every variable, decoded as stored.
  const double unit_bytes = static_cast<double>(shape_size(chunks) * first.stored_dtype().itemsize) *
                            static_cast<double>(nvars);
  const double room = static_cast<double>(cache_->budget()) / 4.0;
  auto working_set = [&] {
    double n = group_chunks;
    for (std::size_t g = 0; g < ng; ++g) n *= static_cast<double>(k[g] + (crossing[g] ? 1 : 0));
    return n * unit_bytes;
  };
  for (bool grew = true; grew;) {
    grew = false;
    for (std::size_t g = ng; g-- > 0;) {
      if (!crossing[g] || k[g] >= most[g]) continue;
      k[g] *= 2;
      if (working_set() > room) {
        k[g] /= 2;
        continue;
      }
      grew = true;
    }
  }
  ChunkStarts groups;
  for (std::size_t g = 0; g < ng; ++g) {
    std::vector<std::uint64_t> starts{0};
    if (chunk[g] != 0 && chunk[g] < grid_.dims()[g].size) {
      // The variable's chunk starts in grid coordinates (windows begin lead_ into the variable),
      // every k-th one.
      const auto var_starts = first.chunk_starts(static_cast<std::size_t>(find_index(first.dims(), grid_dims_[g])));
      std::uint64_t n = 0;
      for (const std::uint64_t b : var_starts) {
        if (b <= lead_[g]) continue;
        if (++n % k[g] == 0) starts.push_back(b - lead_[g]);
      }
    }
    groups.starts.push_back(std::move(starts));
  }
  working_set_bytes = static_cast<std::uint64_t>(working_set());
  return groups;
}

BatchSource::BatchSource(Dataset dataset, BatchOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
  cache_ = options_.cache ? options_.cache : ChunkCache::global();
  options_.shard.validate();
  if (options_.input_dims.empty()) throw UsageError("input_dims is empty: name at least one dim to window over");
  stacked_ = options_.batch_size > 0;
  if (stacked_) resolve_stacked();
  else resolve_xbatcher();
  // Index coordinates of the windowed dims, for the labels of each window.
  std::set<std::string> windowed;
  for (const auto& [d, n] : options_.input_dims) windowed.insert(d);
  for (const auto& [d, n] : options_.batch_dims) windowed.insert(d);
  std::vector<std::pair<std::string, Variable>> coords;
  for (const auto& d : windowed)
    if (dataset_.contains(d) && dataset_.variable(d).dims() == std::vector<std::string>{d})
      coords.emplace_back(d, dataset_.variable(d));
  // Read at once, each on its own thread (not the pool, which may have fewer workers than
  // there are coordinates): over a remote store each read is a round trip. Nothing waits for
  // them before the first batch.
  coord_values_ = std::async(std::launch::async, [coords = std::move(coords)] {
                    std::vector<std::future<NDArray>> reads;
                    for (const auto& [d, v] : coords)
                      reads.push_back(std::async(std::launch::async, [&v = v] { return v.read(); }));
                    std::map<std::string, NDArray> out;
                    for (std::size_t i = 0; i < coords.size(); ++i) out.emplace(coords[i].first, reads[i].get());
                    return out;
                  }).share();
}

void BatchSource::resolve_stacked() {
  const BatchOptions& o = options_;
  if (!o.batch_dims.empty() || o.concat_input_dims)
    throw UsageError("batch_dims and concat_input_dims are xbatcher-compatibility arguments (batch_size 0); "
                     "with batch_size " + std::to_string(o.batch_size) + " batches are windows stacked on `sample`");
  for (const auto& [d, n] : o.input_dims) grid_dims_.push_back(d);
  for (const auto& [d, ov] : o.input_overlap)
    if (find_index(grid_dims_, d) < 0)
      throw UsageError("input_overlap names dim '" + d + "', which is not in input_dims (" + join_names(grid_dims_) + ")");
  // Input variables: given, or every data variable having all the input dims.
  auto has_all = [&](const Variable& v) {
    return std::all_of(grid_dims_.begin(), grid_dims_.end(), [&](const std::string& d) { return v.has_dim(d); });
  };
  std::vector<std::string> names = o.variables;
  if (names.empty()) {
    for (const auto& n : dataset_.data_var_names())
      if (has_all(dataset_.variable(n))) names.push_back(n);
    if (names.empty())
      throw UsageError("no data variable has all the input dims (" + join_names(grid_dims_) + ")");
  }
  auto take = [&](const std::vector<std::string>& list, const char* role) {
    std::vector<Variable> vars;
    for (const auto& n : list) {
      const Variable& v = dataset_.variable(n);  // NotFound naming it
      for (const auto& d : grid_dims_)
        if (!v.has_dim(d))
          throw SelectionError(std::string(role) + " variable '" + n + "' has no dim '" + d + "' (dims: " +
                               join_names(v.dims()) + ")");
      if (v.dtype().is_variable_length() || !castable(v.dtype()))
        throw UsageError(std::string(role) + " variable '" + n + "' has dtype " + v.dtype().name() +
                         ", which cannot be stacked into a numeric batch" +
                         (v.dtype().kind == DTypeKind::Record
                              ? " (records: open with struct_fields=True for one variable per field, '" + n + ".<field>')"
                              : ""));
      vars.push_back(v);
    }
    return vars;
  };
  xvars_ = take(names, "input");
  const Variable& first = xvars_.front();
  for (const auto& d : first.dims())
    if (find_index(grid_dims_, d) < 0) other_dims_.push_back(d);
  auto same_dims = [&](const Variable& v) {
    std::set<std::string> a(v.dims().begin(), v.dims().end()), b(first.dims().begin(), first.dims().end());
    if (a != b)
      throw UsageError("variable '" + v.name() + "' has dims (" + join_names(v.dims()) + "), variable '" +
                       first.name() + "' has (" + join_names(first.dims()) + "): stacked variables need the same dims");
  };
  for (const auto& v : xvars_) same_dims(v);
  if (o.float_dtype && !(o.float_dtype->kind == DTypeKind::Float && castable(*o.float_dtype)))
    throw UsageError("float_dtype must be float32 or float64, not " + o.float_dtype->name());
  // dtype, else the channels' common dtype (a float one as float_dtype when that is set)
  auto batch_dtype = [&](const std::vector<DataType>& types) {
    if (o.dtype) return *o.dtype;
    const DataType common = common_dtype(types);
    return o.float_dtype && common.kind == DTypeKind::Float ? *o.float_dtype : common;
  };
  std::vector<DataType> types;
  for (const auto& v : xvars_) types.push_back(v.dtype());
  xdtype_ = batch_dtype(types);
  if (!castable(xdtype_)) throw UsageError("batch dtype " + xdtype_.name() + " is not a numeric dtype");

  // Target: other variables and/or a shift along grid dims.
  lead_.assign(grid_dims_.size(), 0);
  shift_.assign(grid_dims_.size(), 0);
  DimSizes extents;
  for (const auto& d : grid_dims_) extents.emplace_back(d, first.dim_size(d));
  if (o.target) {
    yvars_ = take(o.target->variables.empty() ? names : o.target->variables, "target");
    for (const auto& v : yvars_) same_dims(v);
    std::vector<DataType> ytypes;
    for (const auto& v : yvars_) ytypes.push_back(v.dtype());
    ydtype_ = batch_dtype(ytypes);
    for (const auto& [d, off] : o.target->offset) {
      const std::int64_t g = find_index(grid_dims_, d);
      if (g < 0)
        throw SelectionError("target offset names dim '" + d + "', which is not in input_dims (" +
                             join_names(grid_dims_) + ")");
      const auto gi = static_cast<std::size_t>(g);
      shift_[gi] = off;
      const std::uint64_t mag = static_cast<std::uint64_t>(off < 0 ? -off : off);
      const std::uint64_t len = o.input_dims[gi].second;
      if (mag + len > extents[gi].second)
        throw UsageError("dim '" + d + "' has " + std::to_string(extents[gi].second) + " elements: too few for a window of " +
                         std::to_string(len) + " and a target offset of " + std::to_string(off));
      extents[gi].second -= mag;
      if (off < 0) lead_[gi] = mag;
    }
  }
  grid_ = WindowGrid(extents, o.input_dims, o.input_overlap);
  out_dims_ = grid_dims_;
  out_dims_.insert(out_dims_.end(), other_dims_.begin(), other_dims_.end());
  for (const auto& [d, n] : o.input_dims) out_extent_.push_back(n);
  for (const auto& d : other_dims_) out_extent_.push_back(first.dim_size(d));
  std::uint64_t group_bytes = 0;
  chunk_starts_ = chunk_groups(first, xvars_.size() + yvars_.size(), group_bytes);
  const ChunkReads reads = SampleOrderRegistry::instance().get(o.shuffle.name()).reads;
  if (o.shuffle == Shuffle::Chunk) footprint_ = windows_footprint(first);
  if (footprint_) {
    // The epoch planner's blocks (checked now: a cache too small for them is an error naming
    // the sizes). Blocks are walked front by front, so batches re-read the chunks at the fronts
    // of the active blocks: room for those, at most an eighth of the cache; fetch-ahead has the
    // rest. What it holds ahead is mostly the fronts' own chunks, pinned where they are: on the
    // issue's 32 x 64 store over 50 ms with an 8 MiB cache, room for twice the fronts (4.8 MiB
    // of fetch-ahead) ran at 0.90-0.99x the previous main's windows/s, 7 MiB at 1.29-1.40x, both
    // serving the same bytes.
    const OrderPlanning p = planning(options_.shard.count(), {}, &warnings_);
    const std::uint64_t fronts = p.blocks.active_blocks *
                                 (footprint_->units_of(p.block_front_samples) + footprint_->span_units()) *
                                 footprint_->unit_bytes;
    reuse_bytes_ = std::min(fronts, cache_->budget() / 8);
  } else if (reads == ChunkReads::ChunkGroups) {
    // Under chunk shuffle batches re-read the chunks of the group being consumed and of the one
    // before (windows straddling the two): room for two groups is what the LRU must keep.
    reuse_bytes_ = std::min(2 * group_bytes, cache_->budget() / 2);
  }
  if (reads == ChunkReads::Scattered) warn_random_reads(first);

  if (!o.normalize.empty()) {
    xnorm_ = channel_normalizations(o.normalize, xvars_, out_dims_, xdtype_, "input");
    ynorm_ = channel_normalizations(o.normalize, yvars_, out_dims_, ydtype_, "target");
  }

  if (o.filter) {
    const std::string fname = o.filter->variable.empty() ? first.name() : o.filter->variable;
    Variable fv = take({fname}, "filter").front();
    same_dims(fv);
    filter_ = std::make_unique<NanFilter>(fv, o.filter->max_nan_fraction, cache_);
  }

  nlohmann::json vars = names, yv = nlohmann::json::array(), yoff = nlohmann::json::object();
  for (const auto& v : yvars_) yv.push_back(v.name());
  if (o.target)
    for (const auto& [d, off] : o.target->offset) yoff[d] = off;
  config_ = {{"mode", "stacked"},
             {"extents", dims_json(extents)},
             {"input_dims", dims_json(o.input_dims)},
             {"input_overlap", o.input_overlap},
             {"batch_size", o.batch_size},
             {"drop_last", o.drop_last},
             {"variables", vars},
             {"target_variables", yv},
             {"target_offset", yoff},
             {"normalize", !o.normalize.empty()},
             {"filter", o.filter ? nlohmann::json{{"variable", filter_->variable().name()},
                                                  {"max_nan_fraction", o.filter->max_nan_fraction}}
                                 : nlohmann::json()},
             {"shuffle", shuffle_name(o.shuffle)},
             {"seed", o.seed},
             {"shard", {o.shard.rank, o.shard.world_size, o.shard.worker, o.shard.num_workers}}};
  if (o.blocks.block_samples > 0 || o.blocks.active_blocks > 0)
    config_["blocks"] = {o.blocks.block_samples, o.blocks.active_blocks};
  if (o.resume) config_["resume"] = resume_json(*o.resume);
}

std::shared_ptr<const SampleFootprint> BatchSource::windows_footprint(const Variable& first) const {
  // Along the first grid dim (windows of a position are consecutive in grid numbering), in the
  // first variable's chunks; a unit's bytes: its mean chunk length of every variable read (x,
  // y, the filter's), decoded as stored, over the whole extent of the other dims.
  const std::string& dim = grid_dims_.front();
  const auto axis_of = [&](const Variable& v) { return static_cast<std::size_t>(find_index(v.dims(), dim)); };
  WindowAxis axis;
  axis.chunk_starts = first.chunk_starts(axis_of(first));
  axis.lead = lead_.front();
  axis.shift = shift_.front();
  std::set<std::string> seen;
  double bytes = 0;
  auto add = [&](const Variable& v) {
    if (!seen.insert(v.name()).second) return;
    const double chunks = static_cast<double>(std::max<std::size_t>(v.chunk_starts(axis_of(v)).size(), 1));
    bytes += static_cast<double>(v.size() * v.stored_dtype().itemsize) / chunks;
  };
  for (const auto* vars : {&xvars_, &yvars_})
    for (const Variable& v : *vars) add(v);
  axis.unit_bytes = static_cast<std::uint64_t>(bytes);
  return window_footprint(grid_, axis);
}

namespace {
constexpr std::uint64_t kFrontSamples = 16;
}  // namespace

OrderPlanning BatchSource::planning(std::uint64_t shards, BlockPlan resumed, std::vector<std::string>* warnings) const {
  OrderPlanning p;
  p.chunks = chunk_starts_;
  if (!footprint_) return p;
  p.footprint = footprint_;
  p.cache_bytes = cache_->budget();
  p.batch_size = std::max<std::uint64_t>(options_.batch_size, 1);
  p.shard_starts = even_shard_starts(units(), shards);
  // Blocks walked front by front, shuffled within stretches of kFrontSamples windows (whole
  // positions): a group's units are read as the fronts pass instead of all at its start (over a
  // 50 ms link the whole-group shuffle ran at 0.75x the chunk groups' windows/s). Fixed, not
  // derived from the batch size or the cache: a resumed epoch's order must not depend on them.
  const std::uint64_t spp = footprint_->samples_per_position;
  p.block_front_samples = (kFrontSamples + spp - 1) / spp * spp;
  if (resumed.block_samples > 0 && resumed.active_blocks > 0) {
    p.blocks = resumed;
    return p;
  }
  std::uint64_t smallest = units();
  for (std::size_t i = 0; i + 1 < p.shard_starts.size(); ++i)
    smallest = std::min(smallest, p.shard_starts[i + 1] - p.shard_starts[i]);
  p.blocks = plan_blocks(*footprint_, p.cache_bytes, p.batch_size, smallest, options_.blocks, warnings);
  return p;
}

void BatchSource::warn_random_reads(const Variable& first) {
  // Random order over more data than the cache holds: a chunk is fetched again whenever a window
  // needs it after its eviction. With uniform access, each of the k window reads of a chunk per
  // epoch misses with probability about 1 - cache/data.
  double data = 0;
  for (const auto* vars : {&xvars_, &yvars_})
    for (const auto& v : *vars) data += static_cast<double>(v.size() * v.stored_dtype().itemsize);
  const double cache = static_cast<double>(cache_->budget());
  if (cache <= 0 || data <= cache) return;
  const Shape chunks = first.chunks();
  double chunk_count = 1, reads_per_window = 1;
  for (std::size_t d = 0; d < first.dims().size(); ++d) {
    const std::uint64_t c = std::max<std::uint64_t>(chunks[d], 1);
    chunk_count *= static_cast<double>((first.shape()[d] + c - 1) / c);
    const std::int64_t g = find_index(grid_dims_, first.dims()[d]);
    if (g >= 0) reads_per_window *= 1.0 + static_cast<double>(grid_.dims()[static_cast<std::size_t>(g)].length - 1) / static_cast<double>(c);
    else reads_per_window *= static_cast<double>((first.shape()[d] + c - 1) / c);
  }
  const double per_chunk = static_cast<double>(grid_.size()) * reads_per_window / chunk_count;
  const double amplification = std::max(1.0, per_chunk * (1.0 - cache / data));
  char text[400];
  std::snprintf(text, sizeof text,
                "shuffle '%s' over %.0f MiB of data with a %.0f MiB chunk cache: expect a read amplification of "
                "about %.1f (each chunk fetched %.1f times per epoch); shuffle 'chunk' reads each chunk about once, "
                "or give the cache more than the data",
                options_.shuffle.name(), data / (1 << 20), cache / (1 << 20), amplification, amplification);
  warnings_.push_back(text);
}

void BatchSource::resolve_xbatcher() {
  const BatchOptions& o = options_;
  if (o.target || o.filter || o.dtype || o.drop_last || !o.normalize.empty())
    throw UsageError("target, filter, dtype, drop_last and normalize need a batch_size (stacked mode); "
                     "batch_size 0 is the xbatcher-compatibility mode");
  if (o.float_dtype)
    throw UsageError("float_dtype needs a batch_size (stacked mode); batch_size 0 is the "
                     "xbatcher-compatibility mode, whose batches keep the variables' dtypes");
  if (SampleOrderRegistry::instance().get(o.shuffle.name()).reads == ChunkReads::ChunkGroups)
    throw UsageError("shuffle '" + std::string(o.shuffle.name()) +
                     "' needs a batch_size (stacked mode); xbatcher-compatibility mode shuffles whole batches");
  DimSizes dims(dataset_.dims().begin(), dataset_.dims().end());
  schema_ = XbatcherSchema(dims, XbatcherConfig{o.input_dims, o.input_overlap, o.batch_dims, o.concat_input_dims});
  std::vector<std::string> names = o.variables.empty() ? dataset_.data_var_names() : o.variables;
  for (const auto& n : names) {
    const Variable& v = dataset_.variable(n);
    if (v.dtype().is_variable_length())
      throw UsageError("variable '" + n + "' has variable-length dtype " + v.dtype().name() +
                       "; leave it out of `variables`");
    cvars_.push_back(v);
  }
  if (schema_.size() > 0) batch_grid_ = WindowGrid({{"batch", schema_.size()}}, {{"batch", 1}});
  warnings_ = schema_.warnings();
  chunk_starts_.starts = {{0}};
  config_ = {{"mode", "xbatcher"},
             {"dims", dims_json(dims)},
             {"input_dims", dims_json(o.input_dims)},
             {"input_overlap", o.input_overlap},
             {"batch_dims", dims_json(o.batch_dims)},
             {"concat_input_dims", o.concat_input_dims},
             {"variables", names},
             {"shuffle", shuffle_name(o.shuffle)},
             {"seed", o.seed},
             {"shard", {o.shard.rank, o.shard.world_size, o.shard.worker, o.shard.num_workers}}};
  if (o.resume) config_["resume"] = resume_json(*o.resume);
}

ArraySelection BatchSource::window_selection(const Variable& var, std::uint64_t id, bool target) const {
  detail::DimVec<std::uint64_t> per_dim(grid_.ndim());
  grid_.unravel_into(id, {per_dim.data(), per_dim.size()});
  ArraySelection sel;
  sel.reserve(var.dims().size());
  for (const auto& d : var.dims()) {
    const std::int64_t g = find_index(grid_dims_, d);
    if (g < 0) {
      sel.push_back(IndexRange::all(var.dim_size(d)));
      continue;
    }
    const auto gi = static_cast<std::size_t>(g);
    const DimWindows& w = grid_.dims()[gi];
    std::int64_t start = static_cast<std::int64_t>(w.start(per_dim[gi]) + lead_[gi]);
    if (target) start += shift_[gi];
    sel.push_back({static_cast<std::uint64_t>(start), w.length, 1});
  }
  return sel;
}

void BatchSource::for_each_read(std::uint64_t id,
                                const std::function<void(const ArrayPtr&, const ArraySelection&)>& visit) const {
  if (!stacked_) {
    for (const auto& p : schema_.patches(id))
      for (const Variable& v : cvars_) {
        ArraySelection sel;
        for (const auto& d : v.dims()) {
          auto it = std::find_if(p.begin(), p.end(), [&](const auto& e) { return e.first == d; });
          sel.push_back(it == p.end() ? IndexRange::all(v.dim_size(d)) : it->second);
        }
        visit(v.array(), v.array_selection_of(sel));
      }
    return;
  }
  for (const Variable& v : xvars_) visit(v.array(), v.array_selection_of(window_selection(v, id, false)));
  for (const Variable& v : yvars_) visit(v.array(), v.array_selection_of(window_selection(v, id, true)));
  if (filter_) {
    const Variable& f = filter_->variable();
    visit(f.array(), f.array_selection_of(window_selection(f, id, false)));
  }
}

std::uint64_t BatchSource::reuse_bytes() const { return reuse_bytes_ ? *reuse_bytes_ : cache_->budget() / 4; }

std::uint64_t BatchSource::fetch_ahead_bytes() const {
  if (!cache_->enabled()) return 0;
  if (options_.fetch_ahead_bytes) return *options_.fetch_ahead_bytes;
  return default_fetch_ahead_bytes(cache_->budget(), reuse_bytes());
}

std::uint64_t BatchSource::fetch_ahead_most_bytes() const {
  if (!cache_->enabled() || options_.fetch_ahead_bytes) return fetch_ahead_bytes();
  return fetch_ahead_room_bytes(cache_->budget(), reuse_bytes());
}

bool BatchSource::window_passes(std::uint64_t id) const {
  if (!filter_) return true;
  return filter_->passes(window_selection(filter_->variable(), id, false));
}

BatchArray BatchSource::stack_channels(const std::string& name, const std::vector<Variable>& vars,
                                       const DataType& dtype, const std::vector<std::uint64_t>& ids,
                                       bool target) const {
  const std::size_t n = ids.size(), channels = vars.size(), item = dtype.itemsize;
  const std::uint64_t window_elems = shape_size(out_extent_);
  BatchArray out;
  out.name = name;
  out.dtype = dtype;
  out.dims = {"sample", "channel"};
  out.dims.insert(out.dims.end(), out_dims_.begin(), out_dims_.end());
  out.shape = {n, channels};
  out.shape.insert(out.shape.end(), out_extent_.begin(), out_extent_.end());
  out.nbytes = n * channels * window_elems * item;
  out.data = allocate_batch_buffer(options_.allocator, out.nbytes);
  std::byte* base = out.data.get();
  // Channels in parallel: each variable's missing chunks load (fetch + decode) at once, not one
  // variable after another (chunk shuffle needs one new chunk per variable at a group start).
  const std::vector<ChannelNormalization>& norms = target ? ynorm_ : xnorm_;
  parallel_for(channels, [&](std::size_t c) {
    const Variable& v = vars[c];
    std::vector<ArraySelection> sels(n);
    for (std::size_t k = 0; k < n; ++k) sels[k] = window_selection(v, ids[k], target);
    WindowLayout layout;
    for (const auto& d : v.dims()) layout.src_shape.push_back(out_extent_[static_cast<std::size_t>(find_index(out_dims_, d))]);
    for (const auto& d : out_dims_) layout.src_axes.push_back(static_cast<int>(find_index(v.dims(), d)));
    layout.dst_shape = out_extent_;
    std::vector<std::byte*> dests(n);
    for (std::size_t k = 0; k < n; ++k) dests[k] = base + (k * channels + c) * window_elems * item;
    read_windows_as(v, sels, layout, dtype, dests, cache_.get());
    if (!norms.empty())
      for (std::size_t k = 0; k < n; ++k) norms[c].apply(dests[k], out_extent_, sels[k]);
  });
  return out;
}

void BatchSource::attach_coords(Batch& batch) const {
  const std::map<std::string, NDArray>& coord_values = coord_values_.get();
  for (std::size_t g = 0; g < batch.window_dims.size(); ++g) {
    auto it = coord_values.find(batch.window_dims[g]);
    if (it == coord_values.end()) continue;
    std::vector<IndexRange> ranges;
    for (const auto& w : batch.windows) ranges.push_back(w[g]);
    batch.coords.emplace(it->first, window_labels(it->second, ranges));
  }
}

Batch BatchSource::assemble_windows(const std::vector<std::uint64_t>& ids) const {
  Batch b;
  b.window_ids = ids;
  b.window_dims = grid_dims_;
  for (const auto id : ids) {
    detail::DimVec<std::uint64_t> per_dim(grid_.ndim());
    grid_.unravel_into(id, {per_dim.data(), per_dim.size()});
    std::vector<IndexRange> w;
    w.reserve(grid_dims_.size());
    for (std::size_t g = 0; g < grid_dims_.size(); ++g)
      w.push_back({grid_.dims()[g].start(per_dim[g]) + lead_[g], grid_.dims()[g].length, 1});
    b.windows.push_back(std::move(w));
  }
  for (const auto& v : xvars_) b.channels.push_back(v.name());
  b.arrays.push_back(stack_channels("x", xvars_, xdtype_, ids, false));
  if (!yvars_.empty()) {
    for (const auto& v : yvars_) b.target_channels.push_back(v.name());
    b.target = stack_channels("y", yvars_, ydtype_, ids, true);
  }
  attach_coords(b);
  return b;
}

Batch BatchSource::assemble_xbatcher(std::uint64_t index) const {
  Batch b;
  const std::vector<Patch> patches = schema_.patches(index);
  if (!patches.empty())
    for (const auto& [d, r] : patches.front()) b.window_dims.push_back(d);
  for (const auto& p : patches) {
    std::vector<IndexRange> w;
    for (const auto& [d, r] : p) w.push_back(r);
    b.windows.push_back(std::move(w));
  }
  for (const Variable& v : cvars_) {
    const std::size_t item = v.dtype().itemsize;
    std::vector<ArraySelection> sels;
    for (const auto& p : patches) {
      ArraySelection sel;
      for (const auto& d : v.dims()) {
        auto it = std::find_if(p.begin(), p.end(), [&](const auto& e) { return e.first == d; });
        sel.push_back(it == p.end() ? IndexRange::all(v.dim_size(d)) : it->second);
      }
      sels.push_back(std::move(sel));
    }
    const XbatcherLayout layout = schema_.layout(v.dims(), index);
    const std::uint64_t patch_elems = layout.source_shape.empty() ? 0 : shape_size(layout.source_shape) / std::max<std::uint64_t>(layout.source_shape[0], 1);
    Buffer source(sels.size() * patch_elems * item);
    std::vector<MutableByteView> dests;
    for (std::size_t k = 0; k < sels.size(); ++k)
      dests.push_back(source.span().subspan(k * patch_elems * item, patch_elems * item));
    v.read_windows_into(sels, dests, cache_.get());
    BatchArray a;
    a.name = v.name();
    a.dtype = v.dtype();
    a.dims = layout.dims;
    a.shape = layout.shape;
    a.nbytes = shape_size(layout.shape) * item;
    a.data = allocate_batch_buffer(options_.allocator, a.nbytes);
    permuted_copy(source.data(), layout.source_shape, a.data.get(), layout.expanded_shape, layout.source_axes, item);
    b.arrays.push_back(std::move(a));
    b.layouts.push_back(layout);
  }
  attach_coords(b);
  return b;
}

}  // namespace lazycube::batch
