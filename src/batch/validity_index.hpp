// ValidityIndex: which time steps of which variables hold missing values (NaN, or fill values
// decoded to NaN), for forecast samples with missing="skip". Built in one parallel streaming
// pass per variable (the statistics engine, compute_stats keeping the time dim) and kept on disk
// keyed by the variable's identity and data version (Array::data_version: a local store's file
// versions, an object's ETag, an Icechunk snapshot), so that a second construction reads no data.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lazycube/dataset/variable.hpp"

namespace lazycube::batch {

class ValidityIndex {
 public:
  using Progress = std::function<void(const std::string& what, std::uint64_t done, std::uint64_t total)>;
  // The index of `vars` (each with the dim `time_dim`); `label` names their stream in progress
  // lines. `dir`: the cache directory ("" the default, "off" none; see ForecastRuntime).
  // `given`: indexes another process built (to_json() of one or more, merged: see
  // ForecastRuntime::validity_index), used for each variable whose identity (data, version,
  // selection, decoding) and length match, before the cache directory and without a pass.
  // UsageError when `given` is not such a document.
  static ValidityIndex build(const std::vector<Variable>& vars, const std::string& time_dim, const std::string& label,
                             const std::string& dir, const Progress& progress, const std::string& given = {});
  // This index as a document another process can be given (JSON text): per variable its
  // identity, length and the time indexes holding missing values. Variables of unknown
  // version (no identity) are left out.
  std::string to_json() const;
  // Whether variable `name` holds a missing value at time index `t` (false for a variable not indexed).
  bool missing(const std::string& name, std::uint64_t t) const;
  // Whether every variable's index came from the disk cache.
  bool loaded() const { return loaded_; }
  // The cache directory `dir` resolves to ("" when off).
  static std::string directory(const std::string& dir);

 private:
  std::map<std::string, std::vector<std::uint8_t>> missing_;  // per variable, per time index
  std::map<std::string, std::string> identity_;              // per variable with a known version
  bool loaded_ = true;
};

}  // namespace lazycube::batch
