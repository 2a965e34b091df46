// ArrayWriter's state: set up by Writer::create_array, read-only afterwards (so that units can
// be written from several threads at once).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "writer_internal.hpp"

namespace lazycube::zarr {

struct ArrayWriter::Impl {
  std::shared_ptr<writer::Destination> dest;
  std::string path;   // node path under the destination
  std::string where;  // the array in messages
  ArraySpec spec;
  writer::BuiltArray built;
  ChunkGrid units;                           // the grid of units (chunks, or shards)
  Shape grid;                                // units per dim
  const ShardingCodec* sharding = nullptr;   // the chain's sharding codec, when sharded

  void check_index(const std::vector<std::uint64_t>& index) const;
  // The whole (decoded) shape of a unit: the unit shape, or its own on a rectilinear grid.
  Shape full_shape(const std::vector<std::uint64_t>& index) const;
  // The sharding codec for a unit of that shape (a rectilinear grid's shards differ).
  std::shared_ptr<const ShardingCodec> sharding_for(const Shape& shard) const;
  // write_unit_by_chunks' inner chunks of the shard at `index` (extent: its part inside the
  // array): those inside asked of `fill`, those across the end padded, those past it fill.
  ShardingCodec::InnerFill inner_filler(const std::vector<std::uint64_t>& index, const Shape& extent,
                                        const ShardingCodec& codec, const ArrayWriter::ChunkFill& fill) const;
  // write_unit(index, data) for fixed-size types.
  bool write_bytes(const ArrayWriter& self, const std::vector<std::uint64_t>& index, ByteView data) const;
  // Leaves out a unit of only fill (per options), else encodes and stores it under `key`;
  // false when nothing was stored. `extent`: the unit's part inside the array. Any failure
  // is recorded, so that commit refuses.
  // The unit is `fixed` (fixed-size types, the whole unit's bytes, read in place) or `strings`.
  // Or, sharded only, `filled`: the inner chunks asked of it one at a time, the shard encoded
  // into `scratch`.
  bool store_unit(const std::vector<std::uint64_t>& index, const Shape& extent, const std::string& key,
                  ByteView fixed, const codec::ChunkData* strings, const ArrayWriter::ChunkFill* filled = nullptr,
                  Buffer* scratch = nullptr) const;
};

}  // namespace lazycube::zarr
