// XbatcherSchema: xbatcher 0.4.0's BatchGenerator grouping and batch dims, computed per batch
// index (see xbatcher_schema.hpp and ../shared/docs/XBATCHER.md §1).
//
// Every regime reduces to one rule: each sliced dim d has `groups` batch groups of `per_group`
// consecutive windows (the last group may be shorter or empty); batch b is the row-major
// group multi-index of b, and its patches are the Cartesian product of the per-dim window
// ranges, last dim fastest, which is the order xbatcher appends patches to a batch.
#include "lazycube/batch/xbatcher_schema.hpp"

#include <algorithm>
#include <set>

#include "lazycube/error.hpp"

namespace lazycube::batch {
namespace {

const std::string kSample = "sample";
const std::string kInputBatch = "input_batch";
const std::string kInputSuffix = "_input";

bool has_dim(const DimSizes& dims, const std::string& dim) {
  return std::any_of(dims.begin(), dims.end(), [&](const auto& e) { return e.first == dim; });
}

void reject_repeats(const DimSizes& dims, const char* option) {
  std::set<std::string> seen;
  for (const auto& [dim, len] : dims) {
    if (!seen.insert(dim).second) {
      throw UsageError(std::string(option) + " names dim '" + dim + "' twice");
    }
  }
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0); }

}  // namespace

XbatcherSchema::XbatcherSchema(const DimSizes& dataset_dims, XbatcherConfig config)
    : dataset_dims_(dataset_dims), config_(std::move(config)) {
  reject_repeats(config_.input_dims, "input_dims");
  reject_repeats(config_.batch_dims, "batch_dims");
  const auto& input = config_.input_dims;
  const auto& batch = config_.batch_dims;

  // Sliced dims: batch-only dims (batch_dims order, windowed with their batch length), then
  // the input dims (input_dims order). A dim in both is sliced by its input length.
  DimSizes sliced;
  DimSizes duplicated;
  for (const auto& entry : batch) {
    (has_dim(input, entry.first) ? duplicated : sliced).push_back(entry);
  }
  const std::size_t n_batch_only = sliced.size();
  sliced.insert(sliced.end(), input.begin(), input.end());
  // Validates each dim in this order, as xbatcher does: missing (KeyError), longer than the
  // dim or overlap >= length (ValueError).
  const WindowGrid grid(dataset_dims_, sliced, config_.input_overlap);

  if (!duplicated.empty() && !config_.concat_input_dims) {
    std::string names;
    for (const auto& [dim, len] : duplicated) {
      names += (names.empty() ? "'" : ", '") + dim + "': " + std::to_string(len);
    }
    warnings_.push_back(
        "The following dimensions were included in both input_dims and batch_dims. Since "
        "concat_input_dims is False, these dimensions will not impact batch generation: {" +
        names + "}");
  }

  sliced_.reserve(grid.ndim());
  for (std::size_t k = 0; k < grid.ndim(); ++k) {
    SlicedDim s;
    s.windows = grid.dims()[k];
    s.input = k >= n_batch_only;
    const std::uint64_t count = s.windows.count;
    if (!config_.concat_input_dims) {
      // Regime 1: one patch per batch.
      s.groups = count;
      s.per_group = 1;
    } else if (batch.empty()) {
      // Regime 2: every patch in one batch.
      s.groups = 1;
      s.per_group = count;
    } else if (duplicated.empty()) {
      // Regime 3: consecutive patches sharing their batch-only slices.
      s.groups = s.input ? 1 : count;
      s.per_group = s.input ? count : 1;
    } else {
      // Regime 4: floor(size / batch length) groups of ceil(batch length / stride) windows
      // along each batch dim; windows past the last group are dropped.
      const auto dup = std::find_if(duplicated.begin(), duplicated.end(),
                                    [&](const auto& e) { return e.first == s.windows.dim; });
      if (!s.input) {
        s.groups = s.windows.size / s.windows.length;
        s.per_group = 1;
      } else if (dup != duplicated.end()) {
        if (dup->second == 0) {
          throw UsageError("batch length of dim '" + dup->first + "' must be positive");
        }
        s.groups = s.windows.size / dup->second;
        s.per_group = ceil_div(dup->second, s.windows.stride);
      } else {
        s.groups = 1;
        s.per_group = count;
      }
    }
    sliced_.push_back(std::move(s));
  }
}

std::uint64_t XbatcherSchema::size() const {
  std::uint64_t n = 1;
  for (const auto& s : sliced_) n *= s.groups;
  return n;
}

std::uint64_t XbatcherSchema::num_patches(std::uint64_t b) const {
  std::uint64_t n = 1;
  for (const auto& r : patch_ranges(b)) n *= r.second;
  return n;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> XbatcherSchema::patch_ranges(
    std::uint64_t b) const {
  if (b >= size()) throw UsageError("list index out of range");
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out(sliced_.size());
  for (std::size_t k = sliced_.size(); k-- > 0;) {
    const auto& s = sliced_[k];
    const std::uint64_t g = b % s.groups;
    b /= s.groups;
    const std::uint64_t first = std::min(g * s.per_group, s.windows.count);
    out[k] = {first, std::min(s.per_group, s.windows.count - first)};
  }
  return out;
}

std::vector<Patch> XbatcherSchema::patches(std::uint64_t b) const {
  const auto ranges = patch_ranges(b);
  std::vector<Patch> out;
  const std::uint64_t n = num_patches(b);
  out.reserve(n);
  for (std::uint64_t p = 0; p < n; ++p) {
    Patch patch(sliced_.size());
    std::uint64_t rest = p;
    for (std::size_t k = sliced_.size(); k-- > 0;) {
      const std::uint64_t w = ranges[k].first + rest % ranges[k].second;
      rest /= ranges[k].second;
      const auto& win = sliced_[k].windows;
      patch[k] = {win.dim, IndexRange{win.start(w), win.length, 1}};
    }
    out.push_back(std::move(patch));
  }
  return out;
}

std::uint64_t XbatcherSchema::batch_extent(const std::string& dim) const {
  for (const auto& s : sliced_) {
    if (s.windows.dim == dim) return s.windows.length;
  }
  for (const auto& [name, size] : dataset_dims_) {
    if (name == dim) return size;
  }
  throw SelectionError("variable dim '" + dim + "' is not a dim of the dataset");
}

// How xbatcher shapes a batch: non-concat, the dataset window as is; concat, the patches
// renamed (<dim>_input) and concatenated along a new leading `input_batch` dim, which xarray
// places first in every data variable and (the first variable being a data variable, as in
// xr.Dataset(data_vars, coords)) first among the dataset's dims. Then, when >= 2 dataset dims
// are not (renamed) input dims, they are stacked into `sample` in the dataset's dim order and
// every variable is transposed to (sample, *input dims); a variable holding some but not all
// stacked dims is broadcast over the missing ones, one holding none is not stacked.
XbatcherLayout XbatcherSchema::layout(const std::vector<std::string>& var_dims,
                                      std::uint64_t b) const {
  const std::uint64_t n_patches = num_patches(b);
  if (n_patches == 0) {
    // xbatcher lists such a batch but fails to build it (min() of an empty sequence).
    throw UsageError("batch " + std::to_string(b) +
                     " has no patches: a batch_dims length is shorter than its input stride");
  }
  const bool concat = config_.concat_input_dims;
  auto renamed = [&](const std::string& dim) {
    return concat && has_dim(config_.input_dims, dim) ? dim + kInputSuffix : dim;
  };

  XbatcherLayout out;
  out.source_shape.push_back(n_patches);
  std::vector<std::string> source_names;  // the variable's dims as named in the batch
  for (const auto& dim : var_dims) {
    out.source_shape.push_back(batch_extent(dim));
    source_names.push_back(renamed(dim));
  }
  // Source axis and extent of a dim named as in the batch (-1: broadcast).
  auto source_axis = [&](const std::string& name) {
    if (concat && name == kInputBatch) return 0;
    const auto it = std::find(source_names.begin(), source_names.end(), name);
    return it == source_names.end() ? -1 : static_cast<int>(it - source_names.begin()) + 1;
  };
  auto extent = [&](const std::string& name) -> std::uint64_t {
    if (concat && name == kInputBatch) return n_patches;
    for (const auto& [dim, size] : dataset_dims_) {
      if (renamed(dim) == name) return batch_extent(dim);
    }
    throw SelectionError("dim '" + name + "' is not a dim of the batch");
  };

  // The variable's dims in the batch before stacking (concat prepends input_batch), and the
  // batch dataset's dims in .sizes order.
  std::vector<std::string> var_names = source_names;
  std::vector<std::string> batch_dims;
  if (concat) {
    batch_dims.push_back(kInputBatch);
    var_names.insert(var_names.begin(), kInputBatch);
  }
  for (const auto& [dim, size] : dataset_dims_) batch_dims.push_back(renamed(dim));
  std::vector<std::string> model_dims;  // (renamed) input dims, input_dims order
  for (const auto& [dim, len] : config_.input_dims) model_dims.push_back(renamed(dim));
  auto is_model = [&](const std::string& name) {
    return std::find(model_dims.begin(), model_dims.end(), name) != model_dims.end();
  };
  std::vector<std::string> stacked;
  for (const auto& name : batch_dims) {
    if (!is_model(name)) stacked.push_back(name);
  }
  auto var_has = [&](const std::string& name) {
    return std::find(var_names.begin(), var_names.end(), name) != var_names.end();
  };

  if (stacked.size() < 2) {
    out.dims = var_names;
  } else {
    const bool var_stacked = std::any_of(stacked.begin(), stacked.end(), var_has);
    if (var_stacked) {
      out.dims.push_back(kSample);
      out.sample_dims = stacked;
    }
    for (const auto& name : model_dims) {
      if (var_has(name)) out.dims.push_back(name);
    }
  }
  // `sample` is the stacked dim only when dims were stacked: a data dim may be called `sample`
  // too (a table of samples x features), and is then a dim like any other.
  const bool stacked_sample = !out.sample_dims.empty();
  for (const auto& name : out.dims) {
    const std::vector<std::string> levels =
        name == kSample && stacked_sample ? out.sample_dims : std::vector<std::string>{name};
    std::uint64_t size = 1;
    for (const auto& level : levels) {
      out.source_axes.push_back(source_axis(level));
      out.expanded_shape.push_back(extent(level));
      size *= out.expanded_shape.back();
    }
    out.shape.push_back(size);
  }
  return out;
}

}  // namespace lazycube::batch
