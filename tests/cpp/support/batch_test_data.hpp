// Datasets for batch-generator tests: in-memory variables whose values encode their position
// (value = 1e6 * variable + 1e4 * t + 100 * y + x), so expected batches are computed, not read.
#pragma once

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "dataset_fake_array.hpp"
#include "lazycube/dataset/dataset.hpp"

namespace lazycube::testing {

inline double cell_value(int var, std::uint64_t t, std::uint64_t y, std::uint64_t x) {
  return 1e6 * var + 1e4 * static_cast<double>(t) + 100.0 * static_cast<double>(y) + static_cast<double>(x);
}

// Variables a, b, ... over (time, y, x), float32 (or `dtypes` per variable: "f4", "f8", "i4"),
// chunked `chunks`; a `time` coordinate (hours, int64) and `x` coordinate (float64 x / 4).
// `nan_if(t, y, x)` marks cells of variable 0 that are NaN.
template <class NanIf>
Dataset position_dataset(std::uint64_t nt, std::uint64_t ny, std::uint64_t nx, Shape chunks,
                         std::vector<std::string> dtypes, NanIf nan_if) {
  std::vector<Variable> vars;
  for (std::size_t v = 0; v < dtypes.size(); ++v) {
    const std::uint64_t n = nt * ny * nx;
    std::shared_ptr<FakeArray> arr;
    auto fill = [&](auto tag, DataType dt) {
      using T = decltype(tag);
      std::vector<T> values(n);
      for (std::uint64_t t = 0; t < nt; ++t)
        for (std::uint64_t y = 0; y < ny; ++y)
          for (std::uint64_t x = 0; x < nx; ++x) {
            double val = cell_value(static_cast<int>(v), t, y, x);
            if (v == 0 && nan_if(t, y, x)) val = std::numeric_limits<double>::quiet_NaN();
            values[(t * ny + y) * nx + x] = static_cast<T>(val);
          }
      arr = FakeArray::of(dt, {nt, ny, nx}, values);
    };
    if (dtypes[v] == "f8") fill(double{}, DataType::float_(8));
    else if (dtypes[v] == "i4") fill(std::int32_t{}, DataType::int_(4));
    else fill(float{}, DataType::float_(4));
    arr->with_dims({"time", "y", "x"}).with_chunks(chunks);
    vars.push_back(variable_from_array(std::string(1, static_cast<char>('a' + v)), arr, false, 2));
  }
  std::vector<std::int64_t> hours(nt);
  for (std::uint64_t t = 0; t < nt; ++t) hours[t] = static_cast<std::int64_t>(t);
  auto time = FakeArray::of(DataType::int_(8), {nt}, hours);
  time->with_dims({"time"});
  vars.push_back(variable_from_array("time", time, false, 2));
  std::vector<double> xs(nx);
  for (std::uint64_t x = 0; x < nx; ++x) xs[x] = static_cast<double>(x) / 4.0;
  auto xc = FakeArray::of(DataType::float_(8), {nx}, xs);
  xc->with_dims({"x"});
  vars.push_back(variable_from_array("x", xc, false, 2));
  return Dataset(std::move(vars), nlohmann::json::object());
}

inline Dataset position_dataset(std::uint64_t nt, std::uint64_t ny, std::uint64_t nx, Shape chunks,
                                std::vector<std::string> dtypes = {"f4", "f4"}) {
  return position_dataset(nt, ny, nx, std::move(chunks), std::move(dtypes),
                          [](std::uint64_t, std::uint64_t, std::uint64_t) { return false; });
}

}  // namespace lazycube::testing
