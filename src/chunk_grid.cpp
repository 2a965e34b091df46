#include "lazycube/chunk_grid.hpp"

#include <algorithm>
#include <string>

#include "lazycube/error.hpp"

namespace lazycube {

namespace {
std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0); }
}  // namespace

ChunkGrid::ChunkGrid() : impl_(std::make_shared<Impl>()) {}

ChunkGrid ChunkGrid::regular(const Shape& shape, const Shape& chunk) {
  std::vector<Axis> axes(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d)
    axes[d].regular_length = d < chunk.size() ? std::max<std::uint64_t>(chunk[d], 1) : std::max<std::uint64_t>(shape[d], 1);
  return from_axes(shape, std::move(axes));
}

ChunkGrid ChunkGrid::from_axes(const Shape& shape, std::vector<Axis> axes) {
  if (axes.size() != shape.size())
    throw UsageError("chunk grid: " + std::to_string(axes.size()) + " axes for a " + std::to_string(shape.size()) +
                     "-d array");
  auto impl = std::make_shared<Impl>();
  impl->shape = shape;
  impl->dims.resize(shape.size());
  impl->regular_shape.resize(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    Axis& a = axes[d];
    Dim& dim = impl->dims[d];
    const std::string where = "chunk grid dim " + std::to_string(d) + ": ";
    if (a.edges.empty()) {
      dim.length = std::max<std::uint64_t>(a.regular_length, 1);
      dim.count = ceil_div(shape[d], dim.length);
      impl->regular_shape[d] = dim.length;
      continue;
    }
    impl->regular = false;
    if (!a.decoded.empty() && a.decoded.size() != a.edges.size())
      throw UsageError(where + std::to_string(a.decoded.size()) + " decoded lengths for " +
                       std::to_string(a.edges.size()) + " edges");
    auto bounds = std::make_shared<std::vector<std::uint64_t>>();
    bounds->reserve(a.edges.size() + 1);
    bounds->push_back(0);
    std::uint64_t largest = 0;
    for (std::size_t c = 0; c < a.edges.size(); ++c) {
      const std::uint64_t e = a.edges[c];
      if (e == 0) throw UsageError(where + "edge length 0 at chunk " + std::to_string(c));
      if (!a.decoded.empty() && a.decoded[c] < e)
        throw UsageError(where + "chunk " + std::to_string(c) + " decodes to " + std::to_string(a.decoded[c]) +
                         " elements, fewer than its edge length " + std::to_string(e));
      if (bounds->back() >= shape[d] && bounds->back() > 0) break;  // chunks wholly past the end name no data
      bounds->push_back(bounds->back() + e);
      largest = std::max(largest, a.decoded.empty() ? e : a.decoded[c]);
    }
    if (bounds->back() < shape[d])
      throw UsageError(where + "edge lengths sum to " + std::to_string(bounds->back()) + ", less than the extent " +
                       std::to_string(shape[d]));
    dim.count = shape[d] == 0 ? 0 : bounds->size() - 1;
    if (!a.decoded.empty()) {
      a.decoded.resize(bounds->size() - 1);
      dim.decoded = std::make_shared<const std::vector<std::uint64_t>>(std::move(a.decoded));
    }
    dim.bounds = std::move(bounds);
    impl->regular_shape[d] = std::max<std::uint64_t>(largest, 1);
  }
  ChunkGrid g;
  g.impl_ = std::move(impl);
  return g;
}

std::size_t ChunkGrid::rank() const { return impl_->dims.size(); }
const Shape& ChunkGrid::shape() const { return impl_->shape; }
bool ChunkGrid::is_regular() const { return impl_->regular; }
bool ChunkGrid::is_regular(std::size_t d) const { return !impl_->dims[d].bounds; }
const Shape& ChunkGrid::regular_shape() const { return impl_->regular_shape; }
std::uint64_t ChunkGrid::count(std::size_t d) const { return impl_->dims[d].count; }

std::uint64_t ChunkGrid::num_chunks() const {
  std::uint64_t n = 1;
  for (const Dim& dim : impl_->dims) n *= dim.count;
  return n;
}

std::uint64_t ChunkGrid::index_of(std::size_t d, std::uint64_t i) const {
  const Dim& dim = impl_->dims[d];
  if (!dim.bounds) return i / dim.length;
  const auto& b = *dim.bounds;
  // The last boundary <= i.
  return static_cast<std::uint64_t>(std::upper_bound(b.begin(), b.end(), i) - b.begin()) - 1;
}

std::uint64_t ChunkGrid::start(std::size_t d, std::uint64_t c) const {
  const Dim& dim = impl_->dims[d];
  return dim.bounds ? (*dim.bounds)[c] : c * dim.length;
}

std::uint64_t ChunkGrid::length(std::size_t d, std::uint64_t c) const {
  const Dim& dim = impl_->dims[d];
  return dim.bounds ? (*dim.bounds)[c + 1] - (*dim.bounds)[c] : dim.length;
}

std::uint64_t ChunkGrid::decoded_length(std::size_t d, std::uint64_t c) const {
  const Dim& dim = impl_->dims[d];
  if (!dim.bounds) return dim.length;
  return dim.decoded ? (*dim.decoded)[c] : (*dim.bounds)[c + 1] - (*dim.bounds)[c];
}

std::uint64_t ChunkGrid::extent(std::size_t d, std::uint64_t c) const {
  const std::uint64_t s = start(d, c), n = impl_->shape[d];
  return s >= n ? 0 : std::min(length(d, c), n - s);
}

std::vector<std::uint64_t> ChunkGrid::starts(std::size_t d) const {
  std::vector<std::uint64_t> out{0};
  for (std::uint64_t c = 1; c < count(d); ++c) out.push_back(start(d, c));
  return out;
}

std::vector<std::uint64_t> ChunkGrid::extents(std::size_t d) const {
  std::vector<std::uint64_t> out;
  for (std::uint64_t c = 0; c < count(d); ++c) out.push_back(extent(d, c));
  return out;
}

bool ChunkGrid::operator==(const ChunkGrid& other) const {
  if (impl_ == other.impl_) return true;
  if (shape() != other.shape()) return false;
  for (std::size_t d = 0; d < rank(); ++d) {
    if (is_regular(d) != other.is_regular(d) || count(d) != other.count(d)) return false;
    for (std::uint64_t c = 0; c < count(d); ++c)
      if (length(d, c) != other.length(d, c) || decoded_length(d, c) != other.decoded_length(d, c)) return false;
  }
  return true;
}

}  // namespace lazycube
