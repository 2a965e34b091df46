#include "normalization.hpp"

#include <algorithm>
#include <cmath>

#include "lazycube/error.hpp"
#include "util/element_cast.hpp"
#include "util/text.hpp"

namespace lazycube::batch {

ChannelNormalization::ChannelNormalization(const VariableStats& stats, const Variable& variable,
                                           const std::vector<std::string>& out_dims, const DataType& dtype)
    : mean_(stats.mean), std_(stats.std), dtype_(dtype) {
  const std::string what = "normalize: statistics of '" + stats.name + "'";
  if (dtype.kind != DTypeKind::Float)
    throw UsageError("normalize needs a float batch dtype, the batch is " + dtype.name() +
                     " (leave dtype unset or choose float32/float64)");
  if (mean_.size() != stats.size() || std_.size() != stats.size())
    throw UsageError(what + " hold " + std::to_string(mean_.size()) + " values for a shape of " +
                     std::to_string(stats.size()));
  const std::size_t n = out_dims.size();
  stride_.assign(n, 0);
  var_axis_.assign(n, 0);
  for (std::size_t j = 0; j < n; ++j) {
    const auto it = std::find(variable.dims().begin(), variable.dims().end(), out_dims[j]);
    var_axis_[j] = static_cast<std::size_t>(it - variable.dims().begin());
  }
  std::uint64_t stride = 1;
  for (std::size_t k = stats.dims.size(); k-- > 0;) {
    const std::string& dim = stats.dims[k];
    if (!variable.has_dim(dim))
      throw UsageError(what + " are kept along dim '" + dim + "', which variable '" + variable.name() +
                       "' lacks (dims: " + join_names(variable.dims()) + ")");
    if (variable.dim_size(dim) != stats.shape[k])
      throw UsageError(what + " hold " + std::to_string(stats.shape[k]) + " values along dim '" + dim +
                       "', the variable has " + std::to_string(variable.dim_size(dim)) +
                       " (statistics of another selection?)");
    stride_[static_cast<std::size_t>(std::find(out_dims.begin(), out_dims.end(), dim) - out_dims.begin())] = stride;
    stride *= stats.shape[k];
  }
  // The kept index must grow in out_dims order as it does in the stats' C order: the stats
  // keep dims in the variable's order, the batch may lay them out otherwise; strides handle it.
  for (std::size_t i = 0; i < mean_.size(); ++i)
    if (!std::isfinite(mean_[i]) || !std::isfinite(std_[i]) || std_[i] <= 0)
      throw UsageError(what + ": element " + std::to_string(i) + " has mean " + std::to_string(mean_[i]) +
                       " and std " + std::to_string(std_[i]) +
                       "; normalising needs a finite mean and a finite std > 0 (a constant or all-NaN slice "
                       "cannot be normalised)");
  run_from_ = n;
  while (run_from_ > 0 && stride_[run_from_ - 1] == 0) --run_from_;
}

void ChannelNormalization::apply(std::byte* slab, const Shape& extent, const ArraySelection& window) const {
  const std::size_t n = extent.size();
  std::uint64_t run = 1;
  for (std::size_t j = run_from_; j < n; ++j) run *= extent[j];
  std::uint64_t key = 0;
  for (std::size_t j = 0; j < run_from_; ++j) key += window[var_axis_[j]].start * stride_[j];
  const std::uint64_t total = shape_size(extent);
  const std::uint64_t runs = run == 0 ? 0 : total / run;
  std::vector<std::uint64_t> idx(run_from_, 0);
  detail::visit_dtype<detail::dtype_set::kFloat>(dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      T* x = reinterpret_cast<T*>(slab);
      for (std::uint64_t r = 0; r < runs; ++r) {
        const double mean = mean_[key], std = std_[key];
        T* p = x + r * run;
        for (std::uint64_t i = 0; i < run; ++i) p[i] = static_cast<T>((static_cast<double>(p[i]) - mean) / std);
        for (std::size_t j = run_from_; j-- > 0;) {
          key += stride_[j];
          if (++idx[j] < extent[j]) break;
          key -= stride_[j] * extent[j];
          idx[j] = 0;
        }
      }
    }
  });
}

std::vector<ChannelNormalization> channel_normalizations(const std::vector<VariableStats>& stats,
                                                         const std::vector<Variable>& vars,
                                                         const std::vector<std::string>& out_dims,
                                                         const DataType& dtype, const char* role) {
  std::vector<ChannelNormalization> out;
  for (const auto& v : vars) {
    const auto it = std::find_if(stats.begin(), stats.end(), [&](const VariableStats& s) { return s.name == v.name(); });
    if (it == stats.end()) {
      std::vector<std::string> names;
      for (const auto& s : stats) names.push_back(s.name);
      throw UsageError(std::string("normalize: no statistics for ") + role + " variable '" + v.name() +
                       "' (the statistics hold: " + join_names(names) + ")");
    }
    out.emplace_back(*it, v, out_dims, dtype);
  }
  return out;
}

}  // namespace lazycube::batch
