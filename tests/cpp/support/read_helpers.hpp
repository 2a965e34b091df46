// Small helpers several C++ test files use, defined once: the test files are compiled in unity
// units (tests/CMakeLists.txt), where two file-local copies of a name would clash.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/util/buffer.hpp"
#include "test_support.hpp"

namespace lazycube::test {

inline std::string as_string(const Buffer& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The float32 values of variable "x" of the dataset at `url` (the one array of the reference-set
// tests), raw (no CF decoding).
inline std::vector<float> read_x(const std::string& url, const StoreOptions& options = {}) {
  OpenOptions o;
  o.storage_options = options;
  const NDArray a = open(url, o)["x"].read_raw();
  auto v = a.values<float>();
  return {v.begin(), v.end()};
}

// The StoreError message that reading `url` as read_x does raises ("<no exception>" when none).
inline std::string refused(const std::string& url, const StoreOptions& options = {}) {
  return message_of<StoreError>([&] { read_x(url, options); });
}

}  // namespace lazycube::test
