// Validation and folding of ChannelTransforms into ChannelParams (channel_params.hpp): the one
// place that decides what the CPU reference and the CUDA kernel compute.
#pragma once

#include <span>
#include <vector>

#include "channel_params.hpp"
#include "lazycube/adapters/cuda.hpp"
#include "util/element_cast.hpp"

namespace lazycube::cuda::detail {

// The dtypes the transform reads: integers and float32/64 (lazycube::detail::visit_dtype).
inline constexpr unsigned kInputDTypes = lazycube::detail::dtype_set::kReal;

// The input type of `dtype`; UsageError naming it when it is not int8..uint64, float32 or
// float64.
InType input_type(const DataType& dtype);

// One ChannelParams per channel. UsageError when channels.size() != shape.channels, or a
// channel has std <= 0 or a non-finite scale, offset, mean or std (naming the channel).
std::vector<ChannelParams> plan_channels(InType type, const BatchShape& shape,
                                         std::span<const ChannelTransform> channels);

// Bytes per element of `type`.
std::size_t input_size(InType type);

}  // namespace lazycube::cuda::detail
