// What every fuzz target checks: the library's contract on hostile input. An input is either
// refused with a typed lazycube error that says what was wrong, or accepted with a valid result;
// any other exception escaping (std::out_of_range, std::bad_alloc, nlohmann's, ...) is a finding,
// and so is a crash, a leak or a hang (ASan, LSan and libFuzzer's -timeout see to those).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "lazycube/error.hpp"

namespace lazycube::fuzz {

// Ends the run as a crash (libFuzzer saves the input that caused it).
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "lazycube fuzz contract broken: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline void check(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

// Runs `f`: true when it returned, false when it threw a typed lazycube error with a message.
// Every other exception fails the run, naming its type and message.
template <class F>
bool typed_or_valid(F&& f) {
  try {
    f();
    return true;
  } catch (const lazycube::Error& e) {
    check(e.what()[0] != '\0', std::string("typed error ") + typeid(e).name() + " without a message");
    return false;
  } catch (const std::exception& e) {
    fail(std::string("untyped exception ") + typeid(e).name() + ": " + e.what());
  } catch (...) {
    fail("an exception that is not a std::exception");
  }
}

// The fuzz input, read front to back: selector bytes, then text or bytes.
class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  // Everything not read yet.
  std::string_view rest() const {
    return {reinterpret_cast<const char*>(data_) + pos_, size_ - pos_};
  }
  // The rest up to the first NUL byte (a JSON document holds none), and what follows it.
  std::pair<std::string_view, std::string_view> split_at_nul() const {
    const std::string_view r = rest();
    const auto nul = r.find('\0');
    if (nul == std::string_view::npos) return {r, {}};
    return {r.substr(0, nul), r.substr(nul + 1)};
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// The rest of `text` cut into lines ('\n').
inline std::vector<std::string> lines(std::string_view text) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const auto nl = text.find('\n', begin);
    out.emplace_back(text.substr(begin, nl == std::string_view::npos ? std::string_view::npos : nl - begin));
    if (nl == std::string_view::npos) break;
    begin = nl + 1;
  }
  return out;
}

}  // namespace lazycube::fuzz
