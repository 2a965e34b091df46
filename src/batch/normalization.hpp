// Normalisation during batch assembly (BatchOptions::normalize): (x - mean) / std per channel,
// mean and std taken at each element's position along the variable's kept dims (e.g. one pair
// per pressure level), computed in double and rounded once to the batch dtype (float32/64).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "lazycube/dataset/stats.hpp"
#include "lazycube/dtype.hpp"

namespace lazycube::batch {

class ChannelNormalization {
 public:
  // `stats` of `variable` (a channel), applied to windows laid out along `out_dims` (every dim
  // of the variable, in batch order) of dtype `dtype`. UsageError when the kept dims are not
  // dims of the variable, their sizes differ from the variable's, the dtype is not a float, or
  // a std is not a finite number > 0 or a mean not finite (NaN: a slice with no values).
  ChannelNormalization(const VariableStats& stats, const Variable& variable, const std::vector<std::string>& out_dims,
                       const DataType& dtype);
  // Normalises one window in place: `slab` holds shape_size(extent) elements along out_dims;
  // `window` is the window's selection in the variable's dim order (where its kept-dim
  // positions start).
  void apply(std::byte* slab, const Shape& extent, const ArraySelection& window) const;

 private:
  std::vector<double> mean_, std_;
  std::vector<std::uint64_t> stride_;  // per out dim: stride in the kept index (0: reduced)
  std::vector<std::size_t> var_axis_;  // per out dim: the variable's axis
  std::size_t run_from_ = 0;           // out dims [run_from_, n) are not kept
  DataType dtype_;
};

// One per channel of `vars`: the stats named like each variable (UsageError naming a channel
// variable that `stats` lacks, and the variables it has).
std::vector<ChannelNormalization> channel_normalizations(const std::vector<VariableStats>& stats,
                                                         const std::vector<Variable>& vars,
                                                         const std::vector<std::string>& out_dims,
                                                         const DataType& dtype, const char* role);

}  // namespace lazycube::batch
