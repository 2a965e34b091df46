// The chunks of one NetCDF4/HDF5 variable of a local file, read with pread and decoded by
// lazycube's own codecs (zlib, shuffle, fletcher32) instead of through GDAL and the HDF5
// library. Why: HDF5 holds one global lock around every call, so through GDAL only one thread
// decodes at a time; converting or streaming a zlib-compressed file was bound to one core. The
// HDF5 library is still asked once, for where each chunk lies (refs/hdf5_chunk_layout.hpp, the
// reading kerchunk references use); the values are the file's bytes decoded as HDF5 would.
// Used by the GDAL backend (src/netcdf/gdal_array.cpp) for the variables it qualifies.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lazycube/codec/codec.hpp"
#include "lazycube/dtype.hpp"
#include "lazycube/store/store.hpp"
#include "lazycube/util/buffer.hpp"

namespace lazycube::refs {

class Hdf5NativeChunks {
 public:
  // The chunks of variable `var` ("v" or "group/v", of shape `shape` as GDAL shows it) of the
  // local HDF5 file `path`, when its storage maps exactly onto read units of shape `block` with
  // elements of `dtype`; nullptr
  // when it does not (a filter lazycube does not decode, a byte order or type GDAL converts,
  // chunks that are not the read unit, a compact or virtual dataset, not an HDF5 file...): the
  // caller reads through GDAL then. Never throws for such files; typed errors only for a file
  // HDF5 cannot index.
  static std::shared_ptr<const Hdf5NativeChunks> open(const std::string& path, const std::string& var,
                                                       const std::vector<std::uint64_t>& shape,
                                                       const std::vector<std::uint64_t>& block, const DataType& dtype);
  ~Hdf5NativeChunks();
  Hdf5NativeChunks(const Hdf5NativeChunks&) = delete;
  Hdf5NativeChunks& operator=(const Hdf5NativeChunks&) = delete;

  // Decodes read unit `unit` into `out` (the unit's bytes, C order); an unwritten chunk is the
  // variable's HDF5 fill value. false (nothing written) for a chunk stored with some filters
  // skipped, which only the HDF5 library decodes. CodecError naming the file, variable and chunk
  // for bytes that do not decode; StoreError for a read error or a file cut short.
  bool read_unit(std::span<const std::uint64_t> unit, MutableByteView out) const;

 private:
  struct Chunk {
    std::uint64_t offset = 0;
    std::uint64_t size = 0;  // 0: not written
    bool skips_filters = false;
  };
  Hdf5NativeChunks() = default;

  std::string path_, var_;
  std::shared_ptr<Store> store_;  // the file's folder; key_ the file
  std::string key_;
  std::vector<std::uint64_t> block_, grid_;
  std::vector<Chunk> chunks_;  // C order of the chunk grid
  codec::CodecPipeline pipeline_;
  codec::ChunkSpec spec_;
  Buffer fill_;  // one element
};

}  // namespace lazycube::refs
