// Every registered window order (taken from the registry, so a new order file is tested
// without editing this one): its name selects it, each epoch visits every window exactly once,
// the same (seed, epoch) gives the same order, and rank/worker shards cut it into consecutive
// blocks. What each order does beyond that is in test_sampler.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "lazycube/batch/sampler.hpp"
#include "lazycube/error.hpp"

namespace lazycube::batch {
// Names the parameterised cases after the order.
inline void PrintTo(const Shuffle& s, std::ostream* os) { *os << s.name(); }
}  // namespace lazycube::batch

namespace lazycube::batch {
namespace {

class RegisteredOrders : public ::testing::TestWithParam<Shuffle> {};

std::vector<std::uint64_t> visits(const EpochOrder& order) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t p = 0; p < order.size(); ++p) out.push_back(order.window(p));
  return out;
}

TEST_P(RegisteredOrders, NameSelectsIt) {
  EXPECT_EQ(parse_shuffle(shuffle_name(GetParam())), GetParam());
}

TEST_P(RegisteredOrders, ShardsCutOneEpochThatVisitsEveryWindowOnce) {
  // 7 x 3 windows (overlap along t) over chunks of 4 x 5.
  const WindowGrid grid({{"t", 30}, {"x", 15}}, {{"t", 6}, {"x", 5}}, {{"t", 2}});
  const std::vector<std::uint64_t> chunks = {4, 5};
  const EpochOrder whole(grid, GetParam(), 7, 2, ShardSpec{}, chunks);
  std::vector<std::uint64_t> all = visits(whole);
  ASSERT_EQ(all.size(), grid.size());
  EXPECT_EQ(all, visits(EpochOrder(grid, GetParam(), 7, 2, ShardSpec{}, chunks)));
  std::vector<std::uint64_t> cut;
  for (std::uint32_t rank = 0; rank < 2; ++rank)
    for (std::uint32_t worker = 0; worker < 3; ++worker) {
      const EpochOrder part(grid, GetParam(), 7, 2, ShardSpec{rank, 2, worker, 3}, chunks);
      EXPECT_EQ(part.epoch_position(0), cut.size());
      const auto v = visits(part);
      cut.insert(cut.end(), v.begin(), v.end());
    }
  EXPECT_EQ(cut, all);
  std::sort(all.begin(), all.end());
  std::vector<std::uint64_t> every(grid.size());
  std::iota(every.begin(), every.end(), 0);
  EXPECT_EQ(all, every);
}

INSTANTIATE_TEST_SUITE_P(Registry, RegisteredOrders, ::testing::ValuesIn(registered_shuffles()),
                         [](const ::testing::TestParamInfo<Shuffle>& info) {
                           return std::string(info.param.name());
                         });

TEST(SampleOrderRegistry, ListsTheBuiltInOrdersFirst) {
  const auto all = registered_shuffles();
  ASSERT_GE(all.size(), 3u);
  EXPECT_EQ(all[0], Shuffle::None);
  EXPECT_EQ(all[1], Shuffle::Random);
  EXPECT_EQ(all[2], Shuffle::Chunk);
  EXPECT_THROW(parse_shuffle("sometimes"), UsageError);
}

}  // namespace
}  // namespace lazycube::batch
