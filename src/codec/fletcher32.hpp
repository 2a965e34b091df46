// HDF5's Fletcher-32 checksum (H5_checksum_fletcher32), as used by numcodecs' fletcher32.
#pragma once

#include <cstdint>

#include "lazycube/util/buffer.hpp"

namespace lazycube::codec::detail {

std::uint32_t fletcher32(ByteView data);

}  // namespace lazycube::codec::detail
