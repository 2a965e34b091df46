// shuffle "none": the windows in grid order.
#include "sample_order.hpp"

namespace lazycube::batch {
namespace {

class SequentialOrder final : public SampleOrder {
 public:
  explicit SequentialOrder(std::uint64_t n) : n_(n) {}
  std::uint64_t size() const override { return n_; }
  std::uint64_t window(std::uint64_t position) const override { return position; }

 private:
  std::uint64_t n_;
};

std::unique_ptr<const SampleOrder> make_sequential(const SampleOrderContext& c) {
  return std::make_unique<SequentialOrder>(c.grid.size());
}

}  // namespace
}  // namespace lazycube::batch

LAZYCUBE_REGISTER_SAMPLE_ORDER(none) {
  registry.add({.name = "none",
                .make = lazycube::batch::make_sequential,
                .reads = lazycube::batch::ChunkReads::InOrder,
                .listed = 0});
}
