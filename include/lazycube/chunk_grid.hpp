// The chunk boundaries of an array along each dim: regular (one edge length, the last chunk
// padded past the array's end) or rectilinear (a list of edge lengths, Zarr's `rectilinear`
// chunk grid). Everything that maps elements to chunks (the read planner, shard lookup, chunk
// shuffle, fetch-ahead, the writer) asks a ChunkGrid, so irregular chunks are read from their
// real boundaries and never assumed to be multiples of one length.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "lazycube/ndarray.hpp"

namespace lazycube {

class ChunkGrid {
 public:
  // An empty (rank 0) grid.
  ChunkGrid();
  // Blocks of `chunk` over `shape` (a chunk length of 0 counts as 1).
  static ChunkGrid regular(const Shape& shape, const Shape& chunk);
  // Per dim: an empty list is regular with length regular_chunk[d]; otherwise the edge lengths
  // (each >= 1, summing to at least shape[d]). `decoded` (per dim, empty: the edge lengths)
  // gives the length each chunk decodes to (>= its edge length; Zarr's encoded_chunk_shapes).
  // UsageError naming the dim for lengths that do not fit; the Zarr parser checks first and
  // names the metadata field.
  struct Axis {
    std::uint64_t regular_length = 1;          // when `edges` is empty
    std::vector<std::uint64_t> edges;          // rectilinear edge lengths
    std::vector<std::uint64_t> decoded;        // rectilinear decoded lengths (empty: edges)
  };
  static ChunkGrid from_axes(const Shape& shape, std::vector<Axis> axes);

  std::size_t rank() const;
  const Shape& shape() const;
  // Every dim regular (then every chunk decodes to regular_shape()).
  bool is_regular() const;
  bool is_regular(std::size_t d) const;
  // Regular grids: the chunk shape. Rectilinear ones: per dim the largest decoded length.
  const Shape& regular_shape() const;
  // Chunks along d that start inside the array (edge lengths past its end name no data).
  std::uint64_t count(std::size_t d) const;
  // Chunks in the whole grid (product of count()).
  std::uint64_t num_chunks() const;
  // The chunk holding element i (< shape[d]) along d.
  std::uint64_t index_of(std::size_t d, std::uint64_t i) const;
  // First element of chunk c along d, its edge length (may reach past the array's end) and the
  // length it decodes to.
  std::uint64_t start(std::size_t d, std::uint64_t c) const;
  std::uint64_t length(std::size_t d, std::uint64_t c) const;
  std::uint64_t decoded_length(std::size_t d, std::uint64_t c) const;
  // Elements of chunk c along d inside the array: min(length, shape - start).
  std::uint64_t extent(std::size_t d, std::uint64_t c) const;
  // The decoded shape of the chunk at `index` (one entry per dim).
  template <class Index>
  Shape decoded_shape(const Index& index) const {
    Shape s(rank());
    for (std::size_t d = 0; d < s.size(); ++d) s[d] = decoded_length(d, index[d]);
    return s;
  }
  template <class Index>
  std::uint64_t decoded_elements(const Index& index) const {
    std::uint64_t n = 1;
    for (std::size_t d = 0; d < rank(); ++d) n *= decoded_length(d, index[d]);
    return n;
  }
  // Where the chunks start along d: 0, then each boundary inside the array, ascending.
  std::vector<std::uint64_t> starts(std::size_t d) const;
  // Edge lengths along d clipped to the array (the dask-style chunks of that dim).
  std::vector<std::uint64_t> extents(std::size_t d) const;
  bool operator==(const ChunkGrid& other) const;

 private:
  struct Dim {
    std::uint64_t length = 1;  // regular
    // Rectilinear: starts of every chunk plus the end of the last (size count + 1) and the
    // decoded lengths (empty: the edge lengths).
    std::shared_ptr<const std::vector<std::uint64_t>> bounds;
    std::shared_ptr<const std::vector<std::uint64_t>> decoded;
    std::uint64_t count = 0;
  };
  struct Impl {
    Shape shape;
    Shape regular_shape;
    std::vector<Dim> dims;
    bool regular = true;
  };
  std::shared_ptr<const Impl> impl_;
};

}  // namespace lazycube
