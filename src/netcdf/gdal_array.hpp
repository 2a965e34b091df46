// One GDAL multidimensional array (a NetCDF/HDF5 variable, a GRIB field) as a lazycube Array.
// Reads go through the calling thread's GDAL handle; cached reads (ChunkedArray's planner) read
// whole read units (the file's block: HDF5 chunk, GRIB message) into the chunk cache.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <cpl_port.h>
#include <nlohmann/json.hpp>

#include "gdal_source.hpp"
#include "lazycube/cache/chunked_array.hpp"
#include "lazycube/refs/hdf5_native_chunks.hpp"

namespace lazycube::netcdf {

// What open() learns about an array from its metadata (on the opening thread).
struct GdalArrayInfo {
  std::string name;  // "var" or "group/var"
  Shape shape;
  DataType dtype;
  int gdal_type = 0;  // GDALDataType of the numeric element
  Shape block;        // the read unit
  std::vector<std::string> dims;
  nlohmann::json attrs = nlohmann::json::object();
  Buffer fill_bytes;  // native bytes of the no-data value (zeros when none)
  bool has_fill = false;
  std::string driver;
};

class GdalArray final : public ChunkedArray {
 public:
  GdalArray(std::shared_ptr<GdalSource> source, GdalArrayInfo info);

  std::string path() const override { return info_.name; }
  std::string describe() const override { return source_->url() + "/" + info_.name; }
  const Shape& shape() const override { return info_.shape; }
  const DataType& dtype() const override { return info_.dtype; }
  const Shape& chunk_shape() const override { return info_.block; }
  const std::vector<std::string>& dimension_names() const override { return info_.dims; }
  const nlohmann::json& attrs() const override { return info_.attrs; }
  const Buffer& fill_value_bytes() const override { return info_.fill_bytes; }
  const std::string& fill_value_string() const override { return empty_; }
  bool has_fill_value() const override { return info_.has_fill; }
  nlohmann::json codecs_json() const override;

  void read(const ArraySelection& selection, MutableByteView dest) const override;
  void read_converted(const ArraySelection& selection, MutableByteView dest,
                      const ElementConversion& conversion) const override;
  void read_strings(const ArraySelection& selection, std::vector<std::string>& dest) const override;
  std::string cache_id() const override { return "gdal:" + describe(); }

 private:
  void check_selection(const ArraySelection& selection) const override;
  // check_selection, and `dest_bytes` must hold the selection's elements.
  void check_read(const ArraySelection& selection, std::size_t dest_bytes) const;
  // The planner's hook (ChunkedArray): each unit read whole (read_unit) on the pool.
  void fetch_units(std::span<const Unit> units, const UnitSink& sink) const override;
  // read() and read_converted() (conv null: as stored); the selection is already checked.
  void read_pieces(const ArraySelection& selection, MutableByteView dest, const ElementConversion* conv) const;
  // read_pieces() for a variable read natively: every read unit the selection touches, decoded
  // whole on the pool's threads and copied (converted) into `dest`.
  void read_by_units(const ArraySelection& selection, MutableByteView dest, const ElementConversion* conv) const;
  // One GDAL Read on this thread's handle: `count` elements from `start` with `step`, into
  // `dest` laid out with element strides `dest_strides` (nullptr: C order of count).
  void gdal_read(const std::vector<GUInt64>& start, const std::vector<size_t>& count,
                 const std::vector<GInt64>& step, const std::vector<GPtrDiff_t>* dest_strides,
                 void* dest) const;
  // Reads read unit `unit` whole into `out`: decoded by lazycube when the variable's chunks are
  // read natively (what lies beyond the array's edge is then the file's), else through GDAL
  // (edge units padded with zeros). Only the part inside the array is ever copied out.
  void read_unit(const std::vector<std::uint64_t>& unit, MutableByteView out) const;
  // The variable's chunks read natively (a local NetCDF4/HDF5 file whose chunks are the read
  // units), found on first use; null: every read goes through GDAL.
  const refs::Hdf5NativeChunks* native_chunks() const;

  std::shared_ptr<GdalSource> source_;
  GdalArrayInfo info_;
  mutable std::once_flag native_once_;
  mutable std::shared_ptr<const refs::Hdf5NativeChunks> native_;
  std::string empty_;
};

}  // namespace lazycube::netcdf
