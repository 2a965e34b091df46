// Where an HDF5 dataset keeps its values and how they are encoded, in Zarr v2 terms: the
// element type, the chunk grid, the filter pipeline as Zarr v2 codecs, the byte range of every
// written chunk. Shared by kerchunk reference generation (hdf5_refs.cpp) and the native chunk
// reads of NetCDF4/HDF5 variables (hdf5_native_chunks.cpp): one reading of the
// HDF5 layout, one mapping of its filters.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lazycube::refs {

struct Hdf5ChunkLayout {
  std::string dtype;  // Zarr v2 dtype ("<f4", ">i2", "|S8"); empty when the type has none
  std::vector<std::uint64_t> shape;
  std::vector<std::uint64_t> chunks;  // the chunk shape; the whole shape (at least 1) when not chunked
  H5D_layout_t layout = H5D_LAYOUT_ERROR;
  std::size_t type_size = 0;
  // The filters as Zarr v2 codec objects in encode order (deflate → zlib, shuffle, fletcher32);
  // empty when not chunked.
  nlohmann::ordered_json codecs = nlohmann::ordered_json::array();
};

// The layout of dataset `dset` (`var` names it in errors). MetadataError naming the variable and
// the filter for a filter with no Zarr codec here.
Hdf5ChunkLayout chunk_layout(hid_t dset, const std::string& var);

// One stored chunk: its grid index, byte range in the file, and HDF5's filter mask (bit k set:
// filter k was skipped for this chunk, which Zarr cannot express).
struct Hdf5StoredChunk {
  const std::vector<std::uint64_t>& index;
  std::uint64_t offset;
  std::uint64_t size;
  unsigned filter_mask;
};

// A chunk's grid index as Zarr v2 spells it in keys and messages ("2.0.1"; "0" for a scalar).
std::string chunk_index_text(std::span<const std::uint64_t> index);

// Calls `visit` for every chunk of a chunked dataset that has storage, in C order of the grid
// (unwritten chunks are skipped); a contiguous dataset is one chunk at index 0..0 when written.
// MetadataError naming the variable when HDF5 cannot say where a chunk is.
void for_each_stored_chunk(hid_t dset, const Hdf5ChunkLayout& layout, const std::string& var,
                           const std::function<void(const Hdf5StoredChunk&)>& visit);

}  // namespace lazycube::refs
