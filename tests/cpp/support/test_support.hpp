// Shared helpers for the C++ tests: data locations, temp dirs, file writing, .npy loading.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace lazycube::test {

namespace fs = std::filesystem;

// ../shared/data, or $LAZYCUBE_SHARED_DATA; empty when the folder is absent (tests then
// GTEST_SKIP), also when the variable names a folder that does not exist (ctest always sets it).
inline fs::path shared_data_dir() {
  fs::path p = fs::path(LAZYCUBE_SOURCE_DIR) / ".." / "shared" / "data";
  if (const char* env = std::getenv("LAZYCUBE_SHARED_DATA"); env && *env) p = env;
  return fs::exists(p) ? fs::canonical(p) : fs::path();
}

#define LAZYCUBE_REQUIRE_SHARED_DATA(dir)                                                  \
  const auto dir = ::lazycube::test::shared_data_dir();                                     \
  if (dir.empty() || !std::filesystem::exists(dir))                                          \
  GTEST_SKIP() << "shared conformance data not found (../shared/data or $LAZYCUBE_SHARED_DATA)"

// The message of the exception of type E that f throws ("<no exception>" when none).
template <class E>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "<no exception>";
}

// A fresh temporary directory removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / ("lazycube-test-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

inline void write_file(const fs::path& p, const std::string& content) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary);
  f.write(content.data(), static_cast<std::streamsize>(content.size()));
}

inline void write_file(const fs::path& p, const void* data, std::size_t n) {
  write_file(p, std::string(static_cast<const char*>(data), n));
}

inline std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A loaded .npy (format 1.x/2.x, C order only; enough for the fixtures' expected values).
struct Npy {
  std::string descr;
  std::vector<std::uint64_t> shape;
  std::string data;
  std::size_t itemsize() const {
    auto p = descr.find_first_of("0123456789");
    std::size_t n = std::stoul(descr.substr(p));
    return descr[1] == 'U' ? n * 4 : n;
  }
};

inline Npy load_npy(const fs::path& p) {
  const std::string raw = read_file(p);
  if (raw.size() < 10 || raw.compare(0, 6, "\x93NUMPY") != 0) throw std::runtime_error("not npy: " + p.string());
  std::size_t header_len, start;
  if (raw[6] == 1) {
    header_len = static_cast<unsigned char>(raw[8]) | (static_cast<unsigned char>(raw[9]) << 8);
    start = 10;
  } else {
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= std::size_t(static_cast<unsigned char>(raw[8 + i])) << (8 * i);
    start = 12;
  }
  const std::string header = raw.substr(start, header_len);
  Npy out;
  auto d = header.find("'descr':");
  auto q1 = header.find('\'', d + 8);
  auto q2 = header.find('\'', q1 + 1);
  out.descr = header.substr(q1 + 1, q2 - q1 - 1);
  if (header.find("'fortran_order': True") != std::string::npos) throw std::runtime_error("fortran npy");
  auto s = header.find("'shape':");
  auto p1 = header.find('(', s);
  auto p2 = header.find(')', p1);
  std::string dims = header.substr(p1 + 1, p2 - p1 - 1);
  std::size_t pos = 0;
  while (pos < dims.size()) {
    auto comma = dims.find(',', pos);
    std::string tok = dims.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (tok.find_first_of("0123456789") != std::string::npos) out.shape.push_back(std::stoull(tok));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  out.data = raw.substr(start + header_len);
  return out;
}

}  // namespace lazycube::test
