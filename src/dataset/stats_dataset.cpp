// stats_dataset: statistics as in-memory variables (include/lazycube/dataset/stats.hpp).
#include <memory>
#include <nlohmann/json.hpp>

#include "lazycube/dataset/stats.hpp"
#include "lazycube/memory_array.hpp"

namespace lazycube {

namespace {

template <class T>
Variable memory_variable(const std::string& name, const std::vector<T>& values, const VariableStats& s,
                         nlohmann::json attrs) {
  auto owner = std::make_shared<const std::vector<T>>(values);
  const DataType dtype = std::is_floating_point_v<T> ? DataType::float_(sizeof(T)) : DataType::uint(sizeof(T));
  std::vector<std::int64_t> strides(s.shape.size());
  std::int64_t stride = sizeof(T);
  for (std::size_t d = s.shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= static_cast<std::int64_t>(s.shape[d]);
  }
  auto array = std::make_shared<MemoryArray>(name, dtype, s.shape, strides,
                                             reinterpret_cast<const std::byte*>(owner->data()), owner, s.dims, attrs);
  return Variable(name, array, s.dims, CfDecoding::identity(dtype, attrs));
}

}  // namespace

Dataset stats_dataset(const std::vector<VariableStats>& stats) {
  std::vector<Variable> vars;
  for (const auto& s : stats) {
    auto attrs = [&](const std::string& what) {
      return nlohmann::json{{"long_name", what + " of " + s.name}, {"variable", s.name}};
    };
    vars.push_back(memory_variable(s.name + "_count", s.count, s, attrs("non-NaN values")));
    vars.push_back(memory_variable(s.name + "_nan_count", s.nan_count, s, attrs("NaN values")));
    vars.push_back(memory_variable(s.name + "_mean", s.mean, s, attrs("mean")));
    auto std_attrs = attrs("population standard deviation");
    std_attrs["ddof"] = 0;
    vars.push_back(memory_variable(s.name + "_std", s.std, s, std_attrs));
    vars.push_back(memory_variable(s.name + "_min", s.min, s, attrs("minimum")));
    vars.push_back(memory_variable(s.name + "_max", s.max, s, attrs("maximum")));
  }
  return Dataset(std::move(vars), nlohmann::json{{"title", "lazycube stats"}, {"ddof", 0}});
}

}  // namespace lazycube
