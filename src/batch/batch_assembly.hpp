// Copying window data into batch buffers: a permuted (transposing) copy for xbatcher layouts,
// an element cast for channels of another dtype, and batch buffer allocation.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "lazycube/batch/batch_generator.hpp"
#include "lazycube/dtype.hpp"
#include "lazycube/ndarray.hpp"

namespace lazycube::batch {

// Copies `src` (C order over `src_shape`, `item` bytes per element) into `dst`, whose C-order
// axes are `dst_shape`; dst axis j reads src axis `src_axes[j]` (-1: broadcast, the same
// source element along that axis).
void permuted_copy(const std::byte* src, const Shape& src_shape, std::byte* dst,
                   const Shape& dst_shape, const std::vector<int>& src_axes, std::size_t item);

// Casts `count` elements of type `from` to type `to` (numpy astype; NaN -> 0 and saturation for
// float -> int). Both must be real numeric or bool.
void cast_elements(const std::byte* src, const DataType& from, std::byte* dst, const DataType& to,
                   std::size_t count);

// Whether cast_elements supports the dtype (bool, ints, uints, float32/64).
bool castable(const DataType& t);

// The dtype channels of these dtypes share by default: the common one when all agree, else
// the widest float (float64 when an integer wider than 16 bits is among them, as numpy's
// promotion of int32/int64 with floats).
DataType common_dtype(const std::vector<DataType>& dtypes);

// A batch buffer of `bytes` bytes from `allocator` (or lazycube's aligned allocation).
std::shared_ptr<std::byte> allocate_batch_buffer(const BatchAllocator& allocator, std::size_t bytes);

// Counts NaN elements (float dtypes; 0 for others).
std::uint64_t count_nans(const std::byte* data, const DataType& t, std::size_t count);

}  // namespace lazycube::batch
