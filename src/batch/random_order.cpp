// shuffle "random": a seeded permutation of every window, a different one each epoch.
#include "sample_order.hpp"

namespace lazycube::batch {
namespace {

class RandomOrder final : public SampleOrder {
 public:
  RandomOrder(std::uint64_t n, std::uint64_t seed) : perm_(n, seed) {}
  std::uint64_t size() const override { return perm_.size(); }
  std::uint64_t window(std::uint64_t position) const override { return perm_(position); }

 private:
  Permutation perm_;
};

std::unique_ptr<const SampleOrder> make_random(const SampleOrderContext& c) {
  return std::make_unique<RandomOrder>(c.grid.size(), c.seed);
}

}  // namespace
}  // namespace lazycube::batch

LAZYCUBE_REGISTER_SAMPLE_ORDER(random) {
  registry.add({.name = "random",
                .make = lazycube::batch::make_random,
                .reads = lazycube::batch::ChunkReads::Scattered,
                .listed = 1});
}
