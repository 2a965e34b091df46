#include "lazycube/refs/hdf5_native_chunks.hpp"

#include <hdf5.h>

#include <cstring>
#include <filesystem>

#include "hdf5_chunk_layout.hpp"
#include "hdf5_handle.hpp"
#include "lazycube/error.hpp"
#include "lazycube/store/store.hpp"
#include "util/hdf5_quiet.hpp"

namespace lazycube::refs {

namespace {

// The dataset's HDF5 fill value in its own (file) representation: what HDF5 returns for a chunk
// never written. Zeros when the file defines none.
Buffer fill_bytes(hid_t dset, std::size_t itemsize) {
  Buffer fill(itemsize);
  std::memset(fill.data(), 0, itemsize);
  H5Plist dcpl(H5Dget_create_plist(dset));
  H5Type type(H5Dget_type(dset));
  H5D_fill_value_t status{};
  if (H5Pfill_value_defined(dcpl.get(), &status) >= 0 && status != H5D_FILL_VALUE_UNDEFINED &&
      H5Pget_fill_value(dcpl.get(), type.get(), fill.data()) < 0)
    std::memset(fill.data(), 0, itemsize);
  return fill;
}

}  // namespace

std::shared_ptr<const Hdf5NativeChunks> Hdf5NativeChunks::open(const std::string& path, const std::string& var,
                                                               const std::vector<std::uint64_t>& shape,
                                                               const std::vector<std::uint64_t>& block,
                                                               const DataType& dtype) {
  if (!dtype.is_numeric() || dtype.kind == DTypeKind::Bool || block.empty() || shape.size() != block.size())
    return nullptr;
  quiet_hdf5_on_this_thread();
  if (H5Fis_hdf5(path.c_str()) <= 0) return nullptr;  // classic netCDF, GRIB, ...
  H5File file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file.valid()) return nullptr;
  H5Object dset(H5Oopen(file.get(), ("/" + var).c_str(), H5P_DEFAULT));
  if (!dset.valid() || H5Iget_type(dset.get()) != H5I_DATASET) return nullptr;
  Hdf5ChunkLayout layout;
  try {
    layout = chunk_layout(dset.get(), var);
  } catch (const MetadataError&) {
    return nullptr;  // a filter only the HDF5 library decodes
  }
  if (layout.layout != H5D_CHUNKED && layout.layout != H5D_CONTIGUOUS) return nullptr;
  if (layout.chunks != block || layout.shape.size() != block.size() || layout.dtype.empty()) return nullptr;
  // A variable along an unlimited dimension can be shorter in HDF5 than the dimension (netCDF-C
  // extends it when written): netCDF reads the rest as the fill value, as unwritten chunks here
  // -- when the HDF5 extent ends on a chunk boundary (a chunk cut by it would mix the two).
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (layout.shape[d] > shape[d] || (layout.shape[d] < shape[d] && layout.shape[d] % block[d] != 0)) return nullptr;
  // The stored type must be what GDAL hands out, in the byte order of memory: GDAL converts
  // anything else (big-endian, char, ...), and that conversion stays with GDAL.
  ParsedNumpyDType stored;
  try {
    stored = parse_numpy_dtype(layout.dtype);
  } catch (const MetadataError&) {
    return nullptr;
  }
  if (!(stored.dtype == dtype) || stored.order == ByteOrder::Big) return nullptr;

  std::shared_ptr<Hdf5NativeChunks> out(new Hdf5NativeChunks());
  out->path_ = path;
  out->var_ = var;
  out->block_ = block;
  out->spec_ = codec::ChunkSpec{dtype, block};
  out->pipeline_.array_to_bytes = codec::make_endian_codec(ByteOrder::Little);
  try {
    for (const auto& c : layout.codecs) out->pipeline_.bytes_codecs.push_back(codec::make_v2_bytes_codec(c, dtype));
  } catch (const CodecError&) {
    return nullptr;
  }
  std::uint64_t n = 1;
  for (std::size_t d = 0; d < block.size(); ++d) {
    out->grid_.push_back((shape[d] + block[d] - 1) / block[d]);
    n *= out->grid_.back();
  }
  out->chunks_.resize(n);
  for_each_stored_chunk(dset.get(), layout, var, [&](const Hdf5StoredChunk& c) {
    std::uint64_t k = 0;
    for (std::size_t d = 0; d < c.index.size(); ++d) k = k * out->grid_[d] + c.index[d];
    out->chunks_[k] = {c.offset, c.size, c.filter_mask != 0};
  });
  out->fill_ = fill_bytes(dset.get(), dtype.itemsize);
  const std::filesystem::path file_path(path);
  out->store_ = make_file_store(file_path.parent_path().empty() ? "." : file_path.parent_path().string());
  out->key_ = file_path.filename().string();
  return out;
}

Hdf5NativeChunks::~Hdf5NativeChunks() = default;

bool Hdf5NativeChunks::read_unit(std::span<const std::uint64_t> unit, MutableByteView out) const {
  if (unit.size() != grid_.size() || out.size() != spec_.nbytes())
    throw UsageError(path_ + "/" + var_ + ": read unit " + chunk_index_text(unit) + " does not fit the chunk grid");
  std::uint64_t k = 0;
  for (std::size_t d = 0; d < unit.size(); ++d) {
    if (unit[d] >= grid_[d])
      throw UsageError(path_ + "/" + var_ + ": read unit " + chunk_index_text(unit) + " is outside the chunk grid");
    k = k * grid_[d] + unit[d];
  }
  const Chunk& c = chunks_[k];
  if (c.skips_filters) return false;
  if (c.size == 0) {
    const std::size_t item = fill_.size();
    for (std::size_t at = 0; at < out.size(); at += item) std::memcpy(out.data() + at, fill_.data(), item);
    return true;
  }
  const std::string what = "chunk " + chunk_index_text(unit) + " of variable '" + var_ + "'";
  thread_local Buffer encoded;
  try {
    if (!store_->get_into(key_, ByteRange::range(c.offset, c.size), encoded))
      throw StoreError(path_ + " is gone (reading " + what + ")");
  } catch (const StoreError& e) {
    throw StoreError(std::string(e.what()) + " (reading " + what + ")");
  }
  if (encoded.size() != c.size)
    throw StoreError(path_ + " is cut short: " + what + " needs bytes " +
                     std::to_string(c.offset) + ".." + std::to_string(c.offset + c.size));
  try {
    pipeline_.decode_into(encoded.view(), spec_, out);
  } catch (const CodecError& e) {
    throw CodecError(path_ + ": " + what + ": " + e.what());
  }
  return true;
}

}  // namespace lazycube::refs
