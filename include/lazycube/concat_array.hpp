// ConcatArray: several arrays joined end to end along one axis, read as one (the core of
// multi-store datasets: lazycube.open_mfdataset's yearly files as one time axis). A read is split
// into one read per part it touches; reads through the chunk cache and fetch-ahead go to the
// parts, which cache their own chunks under their own ids, so a chunk is fetched once however the
// windows fall across the part boundaries.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lazycube/array.hpp"

namespace lazycube {

class ConcatArray final : public Array {
 public:
  // `parts` (at least one) must agree in stored dtype, rank and every extent but `axis`'s
  // (MetadataError naming the differing parts otherwise). Metadata (dims, attributes, fill value,
  // codecs, chunk shape) is the first part's: the chunk grid along `axis` is really the union of
  // the parts' grids, which chunk_shape() cannot express; read_units() reports it exactly.
  ConcatArray(std::vector<ArrayPtr> parts, std::size_t axis);

  std::size_t axis() const { return axis_; }
  const std::vector<ArrayPtr>& parts() const { return parts_; }
  // Offset of each part along the axis, and the total as a last entry.
  const std::vector<std::uint64_t>& offsets() const { return offsets_; }

  std::string path() const override { return parts_.front()->path(); }
  std::string describe() const override;
  const Shape& shape() const override { return shape_; }
  const DataType& dtype() const override { return parts_.front()->dtype(); }
  const Shape& chunk_shape() const override { return parts_.front()->chunk_shape(); }
  const Shape& read_chunk_shape() const override { return parts_.front()->read_chunk_shape(); }
  const std::vector<std::string>& dimension_names() const override { return parts_.front()->dimension_names(); }
  const nlohmann::json& attrs() const override { return parts_.front()->attrs(); }
  const Buffer& fill_value_bytes() const override { return parts_.front()->fill_value_bytes(); }
  const std::string& fill_value_string() const override { return parts_.front()->fill_value_string(); }
  bool has_fill_value() const override { return parts_.front()->has_fill_value(); }
  nlohmann::json codecs_json() const override;
  std::string stored_dtype() const override { return parts_.front()->stored_dtype(); }

  void read(const ArraySelection& selection, MutableByteView dest) const override;
  void read_converted(const ArraySelection& selection, MutableByteView dest,
                      const ElementConversion& conversion) const override;
  void read_strings(const ArraySelection& selection, std::vector<std::string>& dest) const override;
  void read_cached(std::span<const ArraySelection> selections, std::span<const MutableByteView> dests,
                   ChunkCache& cache) const override;
  // Units are the parts' units with the axis index shifted by the read units of the parts
  // before (so units of different parts never collide); load_units and pin_cached hand them back
  // to the parts.
  // Along the axis, every part's chunk starts shifted by its offset (each part begins a chunk).
  std::vector<std::uint64_t> chunk_starts(std::size_t dim) const override;
  std::vector<std::vector<std::uint64_t>> read_units(std::span<const ArraySelection> selections) const override;
  std::vector<std::shared_ptr<const Buffer>> load_units(const std::vector<std::vector<std::uint64_t>>& units,
                                                        ChunkCache& cache,
                                                        const std::atomic<bool>* cancel = nullptr) const override;
  std::vector<std::shared_ptr<const Buffer>> pin_cached(const std::vector<std::vector<std::uint64_t>>& units,
                                                        ChunkCache& cache,
                                                        std::vector<std::vector<std::uint64_t>>& missing) const override;
  std::string cache_id() const override;
  std::string data_version() const override;

  // One part's share of a selection: the part, its selection, and where its elements go along
  // the axis of the selection's output (first index and count).
  struct Piece {
    std::size_t part = 0;
    ArraySelection selection;
    std::uint64_t out_first = 0;
  };
  std::vector<Piece> pieces(const ArraySelection& selection) const;

 private:
  std::vector<ArrayPtr> parts_;
  std::size_t axis_ = 0;
  Shape shape_;
  std::vector<std::uint64_t> offsets_;
  std::vector<std::uint64_t> unit_offsets_;  // read units along the axis before each part

  void check(const ArraySelection& selection) const;
  // `units` (this array's) split by part, each in its part's numbering.
  std::vector<std::vector<std::vector<std::uint64_t>>> units_by_part(
      const std::vector<std::vector<std::uint64_t>>& units) const;
};

}  // namespace lazycube
