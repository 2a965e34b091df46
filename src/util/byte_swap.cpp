#include "util/byte_swap.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace lazycube {

void swap_bytes(MutableByteView data, std::size_t unit) {
  if (unit <= 1) return;
  std::byte* p = data.data();
  const std::size_t count = data.size() / unit;
  switch (unit) {
    case 2:
      for (std::size_t i = 0; i < count; ++i) std::swap(p[2 * i], p[2 * i + 1]);
      return;
    case 4:
      for (std::size_t i = 0; i < count; ++i) {
        std::uint32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        v = __builtin_bswap32(v);
        std::memcpy(p + 4 * i, &v, 4);
      }
      return;
    case 8:
      for (std::size_t i = 0; i < count; ++i) {
        std::uint64_t v;
        std::memcpy(&v, p + 8 * i, 8);
        v = __builtin_bswap64(v);
        std::memcpy(p + 8 * i, &v, 8);
      }
      return;
    default:
      for (std::size_t i = 0; i < count; ++i) std::reverse(p + unit * i, p + unit * (i + 1));
  }
}

namespace {

// Swaps the fields of the record at `rec`, recursing into nested records.
void swap_record(std::byte* rec, const DataType& t) {
  for (const RecordField& f : *t.fields) {
    if (f.dtype.fields) swap_record(rec + f.offset, f.dtype);
    else swap_bytes({rec + f.offset, f.dtype.itemsize}, f.dtype.swap_unit());
  }
}

}  // namespace

void swap_elements(MutableByteView data, const DataType& t) {
  if (!t.fields) {
    swap_bytes(data, t.swap_unit());
    return;
  }
  if (t.swap_unit() <= 1 || t.itemsize == 0) return;
  for (std::size_t at = 0; at + t.itemsize <= data.size(); at += t.itemsize) swap_record(data.data() + at, t);
}

}  // namespace lazycube
