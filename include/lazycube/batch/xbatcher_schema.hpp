// xbatcher 0.4.0 compatibility: which patches (window selectors) form batch b, and the dims,
// shape and element order of each variable in that batch, exactly as xbatcher's
// BatchGenerator builds them (../shared/docs/XBATCHER.md): batch-only dims, the four
// grouping regimes of concat_input_dims / batch_dims, the `sample` stacking rule, `input_batch`
// and `<dim>_input` names. Pure arithmetic over dim sizes: batch b is computed from b.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lazycube/array.hpp"
#include "lazycube/batch/window_grid.hpp"

namespace lazycube::batch {

struct XbatcherConfig {
  DimSizes input_dims;
  DimOverlaps input_overlap;
  DimSizes batch_dims;
  bool concat_input_dims = false;
};

// One patch: a slice per sliced dim (batch-only dims first, in batch_dims order, then the
// input dims in input_dims order); dims not listed are taken whole.
using Patch = std::vector<std::pair<std::string, IndexRange>>;

// One variable of one batch. The data is built from `sources`: the patches' windows of the
// variable, each read in the variable's own dim order, laid one after another (patch-major);
// the output is that source with its axes permuted.
struct XbatcherLayout {
  std::vector<std::string> dims;  // output dims, e.g. {"sample", "x"}, {"input_batch", "x_input"}
  Shape shape;                    // output shape
  // Dims stacked into `sample`, in stacking order (its MultiIndex levels; may contain
  // "input_batch"); empty when the output has no `sample` dim.
  std::vector<std::string> sample_dims;
  Shape source_shape;  // {patches, window extent of each variable dim...}
  // For each output axis, with `sample` expanded into its levels: the source axis it comes
  // from (0 = patch axis, 1 + k = variable dim k), or -1 for a dim the variable lacks
  // (broadcast, as xarray's stack does).
  std::vector<int> source_axes;
  // Extent of each expanded output axis.
  Shape expanded_shape;
};

class XbatcherSchema {
 public:
  XbatcherSchema() = default;
  // `dataset_dims`: every dim of the dataset with its size, in xarray's `.sizes` order.
  // Errors as xbatcher's: UsageError (ValueError) when a window is longer than its dim or an
  // overlap is >= its window; SelectionError (KeyError) naming a dim the dataset lacks.
  XbatcherSchema(const DimSizes& dataset_dims, XbatcherConfig config);

  const XbatcherConfig& config() const { return config_; }
  // Number of batches (xbatcher's len()).
  std::uint64_t size() const;
  // Patches of batch b (b < size(), else UsageError "list index out of range").
  std::uint64_t num_patches(std::uint64_t b) const;
  std::vector<Patch> patches(std::uint64_t b) const;
  // Layout of a data variable with dims `var_dims` (a subset of the dataset's dims, its own
  // order) in batch b. UsageError when batch b has no patch (regime 4 with a batch length
  // shorter than the stride; xbatcher fails on such a batch too). Concat mode: xarray orders
  // the concatenated dataset's dims by first appearance over its variables, so `input_batch`
  // comes first (and leads the `sample` levels) when the dataset's first variable is a data
  // variable, as with xr.Dataset(data_vars, coords); a dataset listing a coordinate of a
  // non-input dim first would put that dim before `input_batch` in xbatcher.
  XbatcherLayout layout(const std::vector<std::string>& var_dims, std::uint64_t b) const;
  // Messages xbatcher gives as UserWarning (e.g. a dim in both input_dims and batch_dims
  // without concat_input_dims).
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  DimSizes dataset_dims_;
  XbatcherConfig config_;
  std::vector<std::string> warnings_;
  // Implementation state (grouping per sliced dim) is the implementer's choice.
  struct SlicedDim {
    DimWindows windows;
    std::uint64_t groups = 1;             // batch groups along this dim
    std::uint64_t per_group = 1;          // windows per group (last group may be shorter)
    bool input = false;                   // an input dim (renamed <dim>_input when concat)
  };
  std::vector<SlicedDim> sliced_;
  // Per sliced dim, the first window of batch b and its number of windows.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> patch_ranges(std::uint64_t b) const;
  // Extent of a dataset dim within a batch (its window length when sliced).
  std::uint64_t batch_extent(const std::string& dim) const;
};

}  // namespace lazycube::batch
