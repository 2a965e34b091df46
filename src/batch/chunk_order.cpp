// shuffle "chunk": windows grouped by the chunk their start falls in; the groups in a random
// order, the windows of a group in a random order before the next group starts, so each chunk
// is needed during one stretch of the epoch.
//
// Windows spanning a chunk boundary: a group's windows may also need the next chunk, which
// with the groups in random order is usually evicted before its own group comes, so it is
// fetched about twice. Passing a multiple k of the chunk length groups k chunks together and
// leaves the extra fetch only at group edges (about 1 + 1/k).
#include <algorithm>

#include "lazycube/error.hpp"
#include "sample_order.hpp"

namespace lazycube::batch {
namespace {

// Distinct sub-streams of the epoch's seed for the group order and the per-group orders.
constexpr std::uint64_t kGroupOrderTag = 1;
constexpr std::uint64_t kInGroupTag = 2;

struct GroupDim {  // chunk groups along one grid dim
  std::vector<std::uint64_t> firsts;  // the first window of each group, ascending, from 0
  std::uint64_t count = 0;            // windows

  std::uint64_t groups() const { return firsts.size(); }
  // First window of group g (g == groups(): the end).
  std::uint64_t first(std::uint64_t g) const { return g < firsts.size() ? firsts[g] : count; }
};

// The groups along one dim: windows grouped by the chunk their start falls in (a window starting
// at w * stride is in the chunk of the last start <= it); chunks where no window starts hold no
// group.
GroupDim group_dim(const DimWindows& dw, const std::vector<std::uint64_t>* starts) {
  GroupDim gd;
  gd.count = dw.count;
  gd.firsts.push_back(0);
  if (starts == nullptr || dw.count == 0) return gd;
  const std::uint64_t stride = std::max<std::uint64_t>(dw.stride, 1);
  for (const std::uint64_t b : *starts) {
    const std::uint64_t w = (b + stride - 1) / stride;  // the first window starting at or after b
    if (w >= dw.count) break;
    if (w > gd.firsts.back()) gd.firsts.push_back(w);
  }
  return gd;
}

class ChunkOrder final : public SampleOrder {
 public:
  explicit ChunkOrder(const SampleOrderContext& c);
  std::uint64_t size() const override { return total_; }
  std::uint64_t window(std::uint64_t position) const override;

 private:
  WindowGrid grid_;
  std::uint64_t total_ = 0, seed_ = 0;
  std::vector<GroupDim> group_dims_;
  std::vector<std::uint64_t> group_of_rank_;  // permuted group order
  std::vector<std::uint64_t> offsets_;        // first epoch position of each visited group
};

ChunkOrder::ChunkOrder(const SampleOrderContext& c)
    : grid_(c.grid), total_(c.grid.size()), seed_(c.seed) {
  if (c.chunk_starts.empty() && grid_.ndim() > 0)
    throw UsageError("shuffle 'chunk' needs the data's chunk lengths (one per window dim)");
  if (total_ == 0) return;
  std::uint64_t groups = 1;
  for (std::size_t d = 0; d < grid_.ndim(); ++d) {
    const auto& starts = c.chunk_starts[d];
    group_dims_.push_back(group_dim(grid_.dims()[d], starts.empty() ? nullptr : &starts));
    groups *= group_dims_.back().groups();
  }
  const Permutation perm(groups, derive_seed(seed_, kGroupOrderTag));
  group_of_rank_.resize(groups);
  offsets_.resize(groups + 1);
  offsets_[0] = 0;
  for (std::uint64_t r = 0; r < groups; ++r) {
    const std::uint64_t group = perm(r);
    group_of_rank_[r] = group;
    std::uint64_t rest = group, windows = 1;
    for (std::size_t d = group_dims_.size(); d-- > 0;) {
      const GroupDim& gd = group_dims_[d];
      const std::uint64_t gi = rest % gd.groups();
      rest /= gd.groups();
      windows *= gd.first(gi + 1) - gd.first(gi);
    }
    offsets_[r + 1] = offsets_[r] + windows;
  }
}

std::uint64_t ChunkOrder::window(std::uint64_t position) const {
  // The visited group holding `position`, then the position's window inside that group.
  const auto it = std::upper_bound(offsets_.begin(), offsets_.end(), position);
  const std::size_t rank = static_cast<std::size_t>(it - offsets_.begin()) - 1;
  const std::uint64_t group = group_of_rank_[rank];
  const std::uint64_t in_group = offsets_[rank + 1] - offsets_[rank];
  const Permutation within(in_group, derive_seed(derive_seed(seed_, kInGroupTag), group));
  std::uint64_t k = within(position - offsets_[rank]);
  // The group is a box of contiguous per-dim window ranges: unravel k inside it.
  std::vector<std::uint64_t> per_dim(group_dims_.size());
  std::uint64_t rest = group;
  for (std::size_t d = group_dims_.size(); d-- > 0;) {
    const GroupDim& gd = group_dims_[d];
    const std::uint64_t gi = rest % gd.groups();
    rest /= gd.groups();
    const std::uint64_t lo = gd.first(gi), n = gd.first(gi + 1) - lo;
    per_dim[d] = lo + k % n;
    k /= n;
  }
  return grid_.ravel(per_dim);
}

std::unique_ptr<const SampleOrder> make_chunk(const SampleOrderContext& c) {
  // Samples that declare a footprint (forecast samples) get the epoch planner's blocks.
  if (c.planning != nullptr && c.planning->footprint) return make_block_order(c);
  return std::make_unique<ChunkOrder>(c);
}

}  // namespace
}  // namespace lazycube::batch

LAZYCUBE_REGISTER_SAMPLE_ORDER(chunk) {
  registry.add({.name = "chunk",
                .make = lazycube::batch::make_chunk,
                .reads = lazycube::batch::ChunkReads::ChunkGroups,
                .listed = 2});
}
