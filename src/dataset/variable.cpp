#include "lazycube/dataset/variable.hpp"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "lazycube/cache/chunk_cache.hpp"
#include "lazycube/error.hpp"
#include "util/thread_pool.hpp"
#include "util/text.hpp"

namespace lazycube {

struct Variable::Source {
  std::string name;
  ArrayPtr array;
  CfDecoding cf;
  nlohmann::json encoding;
};

namespace {
// encoding["chunks"]: the chunk shape, or on a rectilinear grid per dim the chunk lengths inside
// the array (a list) where the dim is rectilinear (what xarray's zarr engine gives there).
nlohmann::json chunks_encoding(const Array& array) {
  const ChunkGrid grid = array.chunk_grid();
  if (grid.is_regular()) return array.chunk_shape();
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t d = 0; d < grid.rank(); ++d)
    out.push_back(grid.is_regular(d) ? nlohmann::json(grid.regular_shape()[d]) : nlohmann::json(grid.extents(d)));
  return out;
}
}  // namespace

Variable::Variable(std::string name, ArrayPtr array, std::vector<std::string> dims, CfDecoding cf) {
  if (!array) throw UsageError("Variable '" + name + "' needs an array");
  const Shape& shape = array->shape();
  if (dims.size() != shape.size())
    throw MetadataError("variable '" + name + "' has " + std::to_string(shape.size()) +
                        " dimensions but " + std::to_string(dims.size()) + " dimension names");
  auto source = std::make_shared<Source>();
  source->name = std::move(name);
  source->encoding = cf.encoding();
  source->encoding["dtype"] = array->dtype().numpy_str();
  source->encoding["chunks"] = chunks_encoding(*array);
  source->cf = std::move(cf);
  source->array = std::move(array);
  for (std::size_t i = 0; i < shape.size(); ++i)
    axes_.push_back({IndexRange::all(shape[i]), false, dims[i]});
  source_ = std::move(source);
  refresh_dims();
}

Variable Variable::as_stored() const {
  if (source_->cf.is_identity()) return *this;
  Variable out = *this;
  auto source = std::make_shared<Source>(*source_);
  source->cf = CfDecoding::identity(source_->array->dtype(), source_->array->attrs());
  source->encoding = {{"dtype", source_->array->dtype().numpy_str()}, {"chunks", chunks_encoding(*source_->array)}};
  out.source_ = std::move(source);
  return out;
}

void Variable::refresh_dims() {
  dims_.clear();
  for (const auto& a : axes_)
    if (!a.dropped) dims_.push_back(a.dim);
}

Variable::Axis* Variable::find_axis(const std::string& dim) {
  for (auto& a : axes_)
    if (!a.dropped && a.dim == dim) return &a;
  return nullptr;
}

const Variable::Axis* Variable::find_axis(const std::string& dim) const {
  return const_cast<Variable*>(this)->find_axis(dim);
}

const std::string& Variable::name() const {
  static const std::string empty;
  return source_ ? source_->name : empty;
}

Shape Variable::shape() const {
  Shape s;
  for (const auto& a : axes_)
    if (!a.dropped) s.push_back(a.range.count);
  return s;
}

bool Variable::has_dim(const std::string& dim) const { return find_axis(dim) != nullptr; }

std::uint64_t Variable::dim_size(const std::string& dim) const {
  const Axis* a = find_axis(dim);
  if (a == nullptr)
    throw SelectionError("dimension '" + dim + "' not found in variable '" + name() +
                         "' (dims: " + join_names(dims_) + ")");
  return a->range.count;
}

const DataType& Variable::dtype() const { return source_->cf.decoded_dtype(); }
const DataType& Variable::stored_dtype() const { return source_->cf.stored_dtype(); }
const nlohmann::json& Variable::attrs() const { return source_->cf.attrs(); }
const nlohmann::json& Variable::encoding() const { return source_->encoding; }
const CfDecoding& Variable::cf() const { return source_->cf; }
const ArrayPtr& Variable::array() const { return source_->array; }

Shape Variable::chunks() const {
  const Shape& stored = source_->array->chunk_shape();
  Shape out;
  for (std::size_t i = 0; i < axes_.size(); ++i) {
    const Axis& a = axes_[i];
    if (a.dropped) continue;
    const std::uint64_t step = static_cast<std::uint64_t>(a.range.step < 0 ? -a.range.step
                                                                           : a.range.step);
    std::uint64_t c = i < stored.size() ? stored[i] : a.range.count;
    c = (c + step - 1) / step;
    if (c > a.range.count) c = a.range.count;
    if (c == 0 && a.range.count > 0) c = 1;
    out.push_back(c);
  }
  return out;
}

std::vector<std::uint64_t> Variable::chunk_starts(std::size_t d) const {
  std::size_t axis = 0, kept = 0;
  for (; axis < axes_.size(); ++axis) {
    if (axes_[axis].dropped) continue;
    if (kept++ == d) break;
  }
  if (axis == axes_.size())
    throw UsageError("variable '" + name() + "' has no dim " + std::to_string(d) + " (it has " +
                     std::to_string(dims_.size()) + ")");
  const IndexRange& r = axes_[axis].range;
  const std::vector<std::uint64_t> bounds = source_->array->chunk_starts(axis);
  std::vector<std::uint64_t> out{0};
  const auto start = static_cast<std::int64_t>(r.start);
  const std::int64_t step = r.step == 0 ? 1 : r.step;
  const std::int64_t count = static_cast<std::int64_t>(r.count);
  for (const std::uint64_t ub : bounds) {
    const auto b = static_cast<std::int64_t>(ub);
    std::int64_t j;  // the first index of the selection in the chunk starting (or, descending, ending) at b
    if (step > 0) {
      if (b <= start) continue;
      j = (b - start + step - 1) / step;
    } else {
      if (b > start || b == 0) continue;
      j = (start - b) / -step + 1;  // the first index below b
    }
    if (j > 0 && j < count) out.push_back(static_cast<std::uint64_t>(j));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

ArraySelection Variable::array_selection() const {
  ArraySelection sel;
  sel.reserve(axes_.size());
  for (const auto& a : axes_) sel.push_back(a.range);
  return sel;
}

Variable Variable::isel(const Indexers& indexers) const {
  Variable out = *this;
  for (const auto& [dim, indexer] : indexers) {
    Axis* axis = out.find_axis(dim);
    if (axis == nullptr)
      throw SelectionError("dimension '" + dim + "' not found in variable '" + name() +
                           "' (dims: " + join_names(dims_) + ")");
    if (const auto* index = std::get_if<std::int64_t>(&indexer)) {
      const std::uint64_t k = resolve_index(*index, axis->range.count, dim);
      axis->range = {axis->range.at(k), 1, 1};
      axis->dropped = true;
    } else {
      const IndexRange inner = resolve_slice(std::get<Slice>(indexer), axis->range.count, dim);
      axis->range = compose(axis->range, inner);
    }
  }
  out.refresh_dims();
  return out;
}

Variable Variable::with_index_coords(std::shared_ptr<const IndexCoords> coords) const {
  Variable out = *this;
  out.index_coords_ = std::move(coords);
  return out;
}

std::optional<Variable> Variable::index_coord(const std::string& dim) const {
  const Axis* axis = find_axis(dim);
  if (axis == nullptr) return std::nullopt;
  if (index_coords_) {
    auto it = index_coords_->find(dim);
    if (it != index_coords_->end() && it->second.axes_.size() == 1) {
      Variable coord = it->second;
      coord.index_coords_.reset();
      coord.axes_[0].range = axis->range;
      coord.axes_[0].dropped = false;
      coord.refresh_dims();
      return coord;
    }
  }
  if (name() == dim && axes_.size() == 1) {
    Variable self = *this;
    self.index_coords_.reset();
    return self;
  }
  return std::nullopt;
}

Variable Variable::sel(const LabelIndexers& labels, const SelOptions& options) const {
  Indexers indexers;
  for (const auto& [dim, label] : labels) {
    if (find_axis(dim) == nullptr)
      throw SelectionError("dimension '" + dim + "' not found in variable '" + name() +
                           "' (dims: " + join_names(dims_) + ")");
    auto coord = index_coord(dim);
    if (!coord)
      throw SelectionError("cannot select by label on dimension '" + dim +
                           "': it has no index coordinate");
    indexers.emplace(dim, label_to_indexer(*coord, dim, label, options));
  }
  return isel(indexers);
}

NDArray Variable::read_raw() const {
  NDArray out;
  out.dtype = stored_dtype();
  out.shape = shape();
  const ArraySelection sel = array_selection();
  if (out.dtype.is_variable_length()) {
    if (out.size() > 0) source_->array->read_strings(sel, out.strings);
  } else {
    out.data.resize(out.size() * out.dtype.itemsize);
    if (out.size() > 0) source_->array->read(sel, out.data.span());
  }
  return out;
}

NDArray Variable::read() const {
  const CfDecoding& cf = source_->cf;
  if (cf.is_identity()) return read_raw();
  NDArray out;
  out.dtype = cf.decoded_dtype();
  out.shape = shape();
  out.data.resize(out.size() * out.dtype.itemsize);
  read_into(out.data.span());
  return out;
}

void Variable::read_into(MutableByteView dest) const {
  const DataType& t = dtype();
  if (t.is_variable_length())
    throw UsageError("read_into: variable '" + name() + "' has variable-length dtype " + t.name());
  const std::uint64_t n = size();
  if (dest.size() != n * t.itemsize)
    throw UsageError("read_into: variable '" + name() + "' needs " +
                     std::to_string(n * t.itemsize) + " bytes, got " +
                     std::to_string(dest.size()));
  if (n == 0) return;
  const CfDecoding& cf = source_->cf;
  if (cf.is_identity()) {
    source_->array->read(array_selection(), dest);
    return;
  }
  // Each chunk is decoded and CF-decoded by one worker straight into `dest`.
  source_->array->read_converted(array_selection(), dest, cf);
}

ArraySelection Variable::window_selection(const ArraySelection& window) const {
  if (window.size() != dims_.size())
    throw UsageError("read_windows_into: variable '" + name() + "' has " + std::to_string(dims_.size()) +
                     " dims (" + join_names(dims_) + "), a window has " + std::to_string(window.size()));
  ArraySelection sel;
  sel.reserve(axes_.size());
  std::size_t k = 0;
  for (const auto& a : axes_) {
    if (a.dropped) {
      sel.push_back(a.range);
      continue;
    }
    const IndexRange& w = window[k++];
    if (w.count > 0) {
      const auto first = static_cast<std::int64_t>(w.start);
      const auto last = first + static_cast<std::int64_t>(w.count - 1) * w.step;
      const auto n = static_cast<std::int64_t>(a.range.count);
      if (w.step == 0 || first >= n || last < 0 || last >= n)
        throw SelectionError("read_windows_into: window on dim '" + a.dim + "' (start " + std::to_string(first) +
                             ", last " + std::to_string(last) + ", step " + std::to_string(w.step) +
                             ") is outside [0, " + std::to_string(n) + ") of variable '" + name() + "'");
    }
    sel.push_back(compose(a.range, w));
  }
  return sel;
}

void Variable::read_windows_into(std::span<const ArraySelection> windows, std::span<const MutableByteView> dests,
                                 ChunkCache* cache) const {
  const DataType& t = dtype();
  if (t.is_variable_length())
    throw UsageError("read_windows_into: variable '" + name() + "' has variable-length dtype " + t.name());
  if (windows.size() != dests.size())
    throw UsageError("read_windows_into: variable '" + name() + "' got " + std::to_string(windows.size()) +
                     " windows and " + std::to_string(dests.size()) + " destinations");
  std::vector<ArraySelection> sels;
  std::vector<std::uint64_t> counts;
  sels.reserve(windows.size());
  for (std::size_t i = 0; i < windows.size(); ++i) {
    sels.push_back(window_selection(windows[i]));
    std::uint64_t n = 1;
    for (const auto& r : windows[i]) n *= r.count;
    if (dests[i].size() != n * t.itemsize)
      throw UsageError("read_windows_into: window " + std::to_string(i) + " of variable '" + name() + "' needs " +
                       std::to_string(n * t.itemsize) + " bytes, got " + std::to_string(dests[i].size()));
    counts.push_back(n);
  }
  const Array& array = *source_->array;
  auto read_raw = [&](std::span<const MutableByteView> raw) {
    if (cache != nullptr) {
      array.read_cached(sels, raw, *cache);
    } else {
      for (std::size_t i = 0; i < sels.size(); ++i)
        if (counts[i] > 0) array.read(sels[i], raw[i]);
    }
  };
  const CfDecoding& cf = source_->cf;
  if (cf.is_identity()) {
    read_raw(dests);
    return;
  }
  if (cache == nullptr) {  // decoded chunk by chunk straight into each destination
    for (std::size_t i = 0; i < sels.size(); ++i)
      if (counts[i] > 0) array.read_converted(sels[i], dests[i], cf);
    return;
  }
  // Through the cache: read as stored into one scratch buffer, then decode each window into its
  // destination.
  const std::size_t stored_item = cf.stored_dtype().itemsize;
  std::uint64_t total = 0;
  for (auto n : counts) total += n;
  Buffer raw(total * stored_item);
  std::vector<MutableByteView> raw_views;
  std::uint64_t offset = 0;
  for (auto n : counts) {
    raw_views.push_back(raw.span().subspan(offset, n * stored_item));
    offset += n * stored_item;
  }
  read_raw(raw_views);
  parallel_for(counts.size(), [&](std::size_t i) {
    if (counts[i] > 0) cf.apply(raw_views[i], counts[i], dests[i]);
  });
}

}  // namespace lazycube
