// ChunkedArray: the one read planner of the chunked formats (Zarr and Icechunk, GDAL). Cached
// reads go selections → the distinct read units they touch → the chunk cache (one load per unit
// however many readers ask: single flight through ChunkCache claims) → the missing units fetched
// in rounds of bounded bytes → each selection's regions copied out of the decoded units. A format
// says only how it fetches and decodes a batch of units (fetch_units) and which selections it
// refuses (check_selection); its direct reads (read, read_converted, read_strings) stay its own.
// It sits in the cache layer, above Array (core), because it reads through the ChunkCache.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "lazycube/array.hpp"
#include "lazycube/cache/chunk_cache.hpp"

namespace lazycube {

class ChunkedArray : public Array {
 public:
  // Array's cached entry points, planned here for every chunked format. read_cached: with a
  // disabled cache (budget 0) each selection is read() directly; otherwise the units are served
  // in rounds of min(budget / 16, 32 MiB) bytes, a round's units pinned only until its copies are
  // done. load_units loads for readers still to come (ChunkCache::Purpose::FetchAhead).
  void read_cached(std::span<const ArraySelection> selections, std::span<const MutableByteView> dests,
                   ChunkCache& cache) const final;
  std::vector<std::vector<std::uint64_t>> read_units(std::span<const ArraySelection> selections) const final;
  std::vector<std::shared_ptr<const Buffer>> load_units(const std::vector<std::vector<std::uint64_t>>& units,
                                                        ChunkCache& cache,
                                                        const std::atomic<bool>* cancel = nullptr) const final;
  std::vector<std::shared_ptr<const Buffer>> pin_cached(const std::vector<std::vector<std::uint64_t>>& units,
                                                        ChunkCache& cache,
                                                        std::vector<std::vector<std::uint64_t>>& missing) const final;

  // A read unit: its index in read_grid().
  using Unit = std::vector<std::uint64_t>;
  // Writes one whole decoded unit (read_grid().decoded_shape(unit) elements in C order, dtype()
  // as stored, edge units padded) into the buffer it is given.
  using UnitDecoder = std::function<void(MutableByteView)>;
  // Receives unit i's decoder; the planner gives it the buffer the unit is cached in.
  using UnitSink = std::function<void(std::size_t i, const UnitDecoder& decode)>;

 protected:
  // Fetches units[i] for every i and calls sink(i, decode) once for each, from any thread and
  // in any order (a network store fetches them as one batch and hands each over as it arrives;
  // a local one reads them on the pool). An exception thrown here or by sink ends the load: the
  // planner fails the claims of the units not yet delivered with it.
  virtual void fetch_units(std::span<const Unit> units, const UnitSink& sink) const = 0;
  // Throws what read() throws for a selection of the wrong rank or outside the array.
  virtual void check_selection(const ArraySelection& selection) const = 0;

 private:
  // The cached chunks of `units`: looked up, the ones this call claims fetched together
  // (fetch_units) and decoded into the cache, then the loads of other callers joined (a joined
  // load that its caller cancelled is loaded here instead). `cancel`: see load_units.
  std::vector<ChunkCache::Chunk> cached_units(std::span<const Unit> units, ChunkCache& cache,
                                              ChunkCache::Purpose purpose,
                                              const std::atomic<bool>* cancel = nullptr) const;
};

}  // namespace lazycube
