#include "util/local_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "lazycube/error.hpp"

namespace lazycube {

void write_local_file(const std::string& path, const std::function<void(std::ostream&)>& fill) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw StoreError("cannot open '" + path + "' for writing: " + std::strerror(errno));
  errno = 0;
  fill(out);
  out.close();  // flushes: a full disk often shows only here
  if (!out) {
    const std::string why = errno ? std::strerror(errno) : "write failed";
    std::remove(path.c_str());
    throw StoreError("cannot write '" + path + "': " + why);
  }
}

void write_local_file(const std::string& path, std::string_view bytes) {
  write_local_file(path, [&](std::ostream& out) { out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())); });
}

}  // namespace lazycube
