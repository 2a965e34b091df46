// Several datasets as one (lazycube.open_mfdataset / lazycube.merge): concatenation along a dim
// (xarray's open_mfdataset(paths, combine="nested", concat_dim=dim)) and merging of variables
// (xarray.merge with every shared variable equal). Lazy: data variables stay views of the parts'
// arrays (ConcatArray); only the concat dim's coordinate and the variables compared for
// equality are read.
#pragma once

#include <string>
#include <vector>

#include "lazycube/dataset/dataset.hpp"

namespace lazycube {

// The parts joined along `dim`, in the given order; `labels` name the parts in messages (their
// URLs; "part <i>" when empty). Parts are datasets as opened (no selection). Rules:
// - every part has the same variable names (MetadataError naming the variable and the part
//   lacking it) and `dim` (MetadataError naming the part);
// - a variable with `dim` is concatenated along it: same dims, stored dtype and CF encoding in
//   every part (scale_factor, add_offset, _FillValue, time units...; MetadataError naming the
//   variable, the encoding key and both parts), decoded with the first part's plan;
// - the 1-D coordinate of `dim` is read decoded from each part (each with its own plan, so
//   per-file time units are fine) and concatenated in memory;
// - a variable without `dim` (coordinates such as latitude, static fields) must be equal in every
//   part: dims, decoded dtype and values (MetadataError naming the variable and both parts);
//   the first part's is kept (xarray: data_vars="minimal", coords="minimal", compat="equals");
// - attributes are the first part's (xarray's combine_attrs="override").
Dataset concat(const std::vector<Dataset>& parts, const std::string& dim,
               const std::vector<std::string>& labels = {});

// The variables of all parts in one dataset, in order of first appearance. A variable present in
// several parts must be equal in them (dims, decoded dtype and values: index coordinates included,
// so shared dims must have the same labels: xarray's join="exact", compat="equals"); otherwise
// a MetadataError names the variable and both parts. Attributes are the first part's.
Dataset merge(const std::vector<Dataset>& parts, const std::vector<std::string>& labels = {});

}  // namespace lazycube
