// The footprint of a window grid for the epoch planner (docs/batching.md "The epoch planner"):
// which chunks along the grid's first dim (the locality axis) the windows of each position
// along it read, their target shifted too.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "lazycube/batch/sampler.hpp"

namespace lazycube::batch {

// Where a window grid's first dim lies on the data: the data's chunk starts along it (element
// coordinates of the variable, ascending from 0), where the input windows start in them
// (`lead` + the window's start), the target's shift from the input, and the decoded bytes of
// one chunk along it over every variable read and the whole extent of the other dims.
struct WindowAxis {
  std::vector<std::uint64_t> chunk_starts;
  std::uint64_t lead = 0;
  std::int64_t shift = 0;
  std::uint64_t unit_bytes = 0;
};

// Grids of more positions along the axis than this keep the chunk groups (a footprint holds two
// numbers per position).
inline constexpr std::uint64_t kMostFootprintPositions = std::uint64_t{1} << 24;

// The footprint of `grid`'s windows along its first dim: position q (a window start along it)
// holds the grid.size() / positions consecutive windows that start there (row-major numbering),
// and reads the chunks from the one of its earliest element (input or target) to that of its
// last. Null when the windows of every position read one chunk along the axis (the chunk
// groups already read each chunk about once), when the axis is one chunk, or past
// kMostFootprintPositions.
std::shared_ptr<const SampleFootprint> window_footprint(const WindowGrid& grid, const WindowAxis& axis);

}  // namespace lazycube::batch
