// PlannedReads: what fetch-ahead walks — the positions a consumer will read, in the order it
// reads them, and the array reads each position makes. Windows (WindowReads: an epoch order of a
// BatchSource) and forecast samples (a worker's stretch of EpochBatches) both plan through it.
#pragma once
#include <cstdint>
#include <functional>

#include "lazycube/array.hpp"

namespace lazycube::batch {

class PlannedReads {
 public:
  using Visit = std::function<void(const ArrayPtr&, const ArraySelection&)>;
  virtual ~PlannedReads() = default;
  // Positions, 0 .. size() - 1, in the order the consumer reads them.
  virtual std::uint64_t size() const = 0;
  // Calls `visit` with each array read of position `p` (an array may come more than once).
  virtual void for_each_read(std::uint64_t p, const Visit& visit) const = 0;
};

}  // namespace lazycube::batch
