// NumPy .npy files (format 1.0), written the way numpy.save writes them: little-endian
// descr, C order, header padded with spaces to a multiple of 64 bytes. Variable-length strings
// become fixed-width '<U{max code points}' (UTF-32LE), variable-length bytes '|S{max length}';
// object arrays (pickles) are never written.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "lazycube/ndarray.hpp"

namespace lazycube::npy {

// The descr numpy would use for `array` (after fixed-width conversion of vlen types); records: the
// list literal "[('a', '<i4'), ('p', [('x', '<f4')])]".
std::string descr_of(const NDArray& array);
// The magic, version, header length and padded header dict.
std::string header(const std::string& descr, const Shape& shape);

void write(std::ostream& out, const NDArray& array);
// Writes `path` whole or not at all (write_local_file: StoreError naming the path and the cause).
void write_file(const std::string& path, const NDArray& array);

// A parsed .npy file: the descr as written, the shape and the raw data bytes.
struct File {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
  Buffer data;
};
File read(std::istream& in);
File read_file(const std::string& path);

}  // namespace lazycube::npy
