// Byte order reversal of element bytes (stored big-endian <-> native little-endian).
#pragma once

#include <cstddef>

#include "lazycube/dtype.hpp"
#include "lazycube/util/buffer.hpp"

namespace lazycube {

// Reverses each `unit`-byte group of `data` in place (unit <= 1: nothing to do).
void swap_bytes(MutableByteView data, std::size_t unit);

// Reverses the byte order of each element of `t` in `data` (elements back to back): a record
// field by field (nested records too), every other type per DataType::swap_unit().
void swap_elements(MutableByteView data, const DataType& t);

}  // namespace lazycube
