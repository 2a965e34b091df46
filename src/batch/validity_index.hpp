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
  static ValidityIndex build(const std::vector<Variable>& vars, const std::string& time_dim, const std::string& label,
                             const std::string& dir, const Progress& progress);
  // Whether variable `name` holds a missing value at time index `t` (false for a variable not indexed).
  bool missing(const std::string& name, std::uint64_t t) const;
  // Whether every variable's index came from the disk cache.
  bool loaded() const { return loaded_; }
  // The cache directory `dir` resolves to ("" when off).
  static std::string directory(const std::string& dir);

 private:
  std::map<std::string, std::vector<std::uint8_t>> missing_;  // per variable, per time index
  bool loaded_ = true;
};

}  // namespace lazycube::batch
