// An array of a group that lazycube cannot read (metadata it does not understand: an unknown
// codec or data type, a malformed document): the group opens without it, and the array is
// listed with its reason. Reading it, or asking that every array be readable (the Python
// open_dataset and the xarray engine), throws its own error again, naming it.
#pragma once

#include <exception>
#include <string>
#include <vector>

namespace lazycube {

struct UnreadableArray {
  std::string name;    // as the group lists it ("var", "group/var")
  std::string reason;  // the error's message
  std::exception_ptr error;
};

// Runs `open_child` for the array `name`; a MetadataError or CodecError (what the array's
// metadata makes lazycube refuse) is recorded in `unreadable` instead of thrown. Store
// errors (I/O, absence, credentials) and everything else propagate.
template <class F>
void open_or_record(std::vector<UnreadableArray>& unreadable, const std::string& name, F&& open_child);

// Throws the error of `u` again, same type, its message "array 'NAME' cannot be read: REASON"
// followed by `advice`.
[[noreturn]] void rethrow_unreadable(const UnreadableArray& u, const std::string& advice = {});

// "a: reason; b: reason" of several, for messages.
std::string unreadable_list(const std::vector<UnreadableArray>& unreadable);

}  // namespace lazycube

#include "lazycube/error.hpp"

namespace lazycube {

template <class F>
void open_or_record(std::vector<UnreadableArray>& unreadable, const std::string& name, F&& open_child) {
  try {
    open_child();
  } catch (const MetadataError& e) {
    unreadable.push_back({name, e.what(), std::current_exception()});
  } catch (const CodecError& e) {
    unreadable.push_back({name, e.what(), std::current_exception()});
  }
}

[[noreturn]] inline void rethrow_unreadable(const UnreadableArray& u, const std::string& advice) {
  const std::string message = "array '" + u.name + "' cannot be read: " + u.reason + advice;
  try {
    std::rethrow_exception(u.error);
  } catch (const CodecError&) {
    throw CodecError(message);
  } catch (const MetadataError&) {
    throw MetadataError(message);
  } catch (...) {
    throw Error(message);
  }
}

inline std::string unreadable_list(const std::vector<UnreadableArray>& unreadable) {
  std::string out;
  for (const auto& u : unreadable) out += (out.empty() ? "" : "; ") + u.name + ": " + u.reason;
  return out;
}

}  // namespace lazycube
