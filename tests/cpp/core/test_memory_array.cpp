// MemoryArray: reads of memory it does not own, in place, through any byte strides (C order,
// transposed, reversed), and the window engine over a Dataset of them.
#include <gtest/gtest.h>

#include <numeric>
#include <nlohmann/json.hpp>

#include "lazycube/batch/batch_generator.hpp"
#include "lazycube/dataset/dataset.hpp"
#include "lazycube/error.hpp"
#include "lazycube/memory_array.hpp"

using namespace lazycube;

namespace {

// values[i][j] = 100 * i + j, shape 4 x 6, C order.
std::shared_ptr<std::vector<float>> cell_values() {
  auto v = std::make_shared<std::vector<float>>(24);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) (*v)[i * 6 + j] = static_cast<float>(100 * i + j);
  return v;
}

std::vector<float> read(const MemoryArray& a, const ArraySelection& sel) {
  std::uint64_t n = 1;
  for (const auto& r : sel) n *= r.count;
  std::vector<float> out(n);
  a.read(sel, {reinterpret_cast<std::byte*>(out.data()), n * 4});
  return out;
}

}  // namespace

TEST(MemoryArray, ReadsThroughAnyStrides) {
  auto v = cell_values();
  const auto* base = reinterpret_cast<const std::byte*>(v->data());
  MemoryArray c("v", DataType::float_(4), {4, 6}, {24, 4}, base, v, {"y", "x"}, nlohmann::json::object());
  EXPECT_EQ(read(c, {{1, 2, 1}, {2, 3, 1}}), (std::vector<float>{102, 103, 104, 202, 203, 204}));
  EXPECT_EQ(read(c, {{3, 2, -2}, {5, 2, -5}}), (std::vector<float>{305, 300, 105, 100}));
  // The transpose (x, y): strides swapped, the same memory.
  MemoryArray t("t", DataType::float_(4), {6, 4}, {4, 24}, base, v, {"x", "y"}, nlohmann::json::object());
  EXPECT_EQ(read(t, {{1, 2, 1}, {0, 2, 1}}), (std::vector<float>{1, 101, 2, 102}));
  // Rows reversed (NumPy's a[::-1]): a negative stride from the last row.
  MemoryArray r("r", DataType::float_(4), {4, 6}, {-24, 4}, base + 3 * 24, v, {"y", "x"}, nlohmann::json::object());
  EXPECT_EQ(read(r, {{0, 2, 1}, {0, 2, 1}}), (std::vector<float>{300, 301, 200, 201}));
  EXPECT_THROW(read(c, {{3, 2, 1}, {0, 1, 1}}), UsageError);  // past the last row
  EXPECT_NE(c.cache_id(), t.cache_id());
}

TEST(MemoryArray, StackedBatchesAreItsWindows) {
  auto v = cell_values();
  auto a = std::make_shared<MemoryArray>("v", DataType::float_(4), Shape{4, 6}, std::vector<std::int64_t>{24, 4},
                                         reinterpret_cast<const std::byte*>(v->data()), v,
                                         std::vector<std::string>{"y", "x"}, nlohmann::json::object());
  Dataset ds({Variable("v", a, {"y", "x"}, CfDecoding::identity(a->dtype(), a->attrs()))}, nlohmann::json::object());
  batch::BatchOptions o;
  o.input_dims = {{"y", 2}, {"x", 3}};
  o.batch_size = 4;
  o.shuffle = batch::Shuffle::Random;
  batch::BatchGenerator g(ds, o);
  auto b = g.next();
  ASSERT_TRUE(b);
  ASSERT_EQ(b->windows.size(), 4u);
  const float* x = reinterpret_cast<const float*>(b->arrays.at(0).data.get());
  for (std::size_t k = 0; k < 4; ++k) {
    const auto& w = b->windows[k];
    for (std::uint64_t i = 0; i < 2; ++i)
      for (std::uint64_t j = 0; j < 3; ++j)
        EXPECT_EQ(x[k * 6 + i * 3 + j], static_cast<float>(100 * (w[0].start + i) + w[1].start + j));
  }
}
