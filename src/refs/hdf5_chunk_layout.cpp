#include "hdf5_chunk_layout.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "hdf5_handle.hpp"
#include "lazycube/error.hpp"

namespace lazycube::refs {

namespace {

using json = nlohmann::ordered_json;

// Zarr v2 dtype of an HDF5 type ("<f4", ">i2", "|u1", "|S8"); empty when unsupported.
std::string zarr_dtype(hid_t type) {
  const std::size_t size = H5Tget_size(type);
  const H5T_class_t cls = H5Tget_class(type);
  const char order = size == 1 ? '|' : (H5Tget_order(type) == H5T_ORDER_BE ? '>' : '<');
  if (cls == H5T_INTEGER) return order + std::string(H5Tget_sign(type) == H5T_SGN_NONE ? "u" : "i") + std::to_string(size);
  if (cls == H5T_FLOAT && (size == 2 || size == 4 || size == 8)) return order + std::string("f") + std::to_string(size);
  if (cls == H5T_STRING && H5Tis_variable_str(type) <= 0) return "|S" + std::to_string(size);
  return "";
}

// The filter pipeline as Zarr v2 codecs, in encode order.
json codecs_of(hid_t dcpl, std::size_t type_size, const std::string& var) {
  json codecs = json::array();
  const int n = H5Pget_nfilters(dcpl);
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0, config = 0;
    std::size_t nvalues = 8;
    unsigned values[8] = {};
    char name[256] = {};
    const H5Z_filter_t id = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &nvalues, values, sizeof name,
                                           name, &config);
    if (id == H5Z_FILTER_DEFLATE) codecs.push_back({{"id", "zlib"}, {"level", nvalues > 0 ? values[0] : 6}});
    else if (id == H5Z_FILTER_SHUFFLE) codecs.push_back({{"id", "shuffle"}, {"elementsize", type_size}});
    else if (id == H5Z_FILTER_FLETCHER32) codecs.push_back({{"id", "fletcher32"}});
    else
      throw MetadataError("variable '" + var + "': HDF5 filter " + std::to_string(id) + " ('" + name +
                          "') has no Zarr codec in lazycube (supported: deflate, shuffle, fletcher32)");
  }
  return codecs;
}

}  // namespace

std::string chunk_index_text(std::span<const std::uint64_t> index) {
  std::string out;
  for (std::size_t d = 0; d < index.size(); ++d) out += (d ? "." : "") + std::to_string(index[d]);
  return out.empty() ? "0" : out;
}

Hdf5ChunkLayout chunk_layout(hid_t dset, const std::string& var) {
  Hdf5ChunkLayout out;
  H5Type type(H5Dget_type(dset));
  out.dtype = zarr_dtype(type.get());
  out.type_size = H5Tget_size(type.get());
  H5Space space(H5Dget_space(dset));
  const int ndims = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> shape(static_cast<std::size_t>(std::max(ndims, 0)));
  if (ndims > 0) H5Sget_simple_extent_dims(space.get(), shape.data(), nullptr);
  out.shape.assign(shape.begin(), shape.end());
  H5Plist dcpl(H5Dget_create_plist(dset));
  out.layout = H5Pget_layout(dcpl.get());
  out.chunks.resize(shape.size());
  if (out.layout == H5D_CHUNKED) {
    std::vector<hsize_t> chunks(shape.size());
    H5Pget_chunk(dcpl.get(), ndims, chunks.data());
    out.chunks.assign(chunks.begin(), chunks.end());
    out.codecs = codecs_of(dcpl.get(), out.type_size, var);
  } else {
    for (std::size_t d = 0; d < shape.size(); ++d) out.chunks[d] = std::max<std::uint64_t>(shape[d], 1);
  }
  return out;
}

void for_each_stored_chunk(hid_t dset, const Hdf5ChunkLayout& layout, const std::string& var,
                           const std::function<void(const Hdf5StoredChunk&)>& visit) {
  const std::size_t nd = layout.shape.size();
  std::vector<std::uint64_t> index(nd, 0);
  if (layout.layout == H5D_CONTIGUOUS) {
    const haddr_t addr = H5Dget_offset(dset);
    if (addr != HADDR_UNDEF) visit({index, addr, H5Dget_storage_size(dset), 0});
    return;
  }
  if (layout.layout != H5D_CHUNKED) return;
  // Every chunk of the grid, looked up by its coordinates (unwritten chunks have no address).
  std::vector<std::uint64_t> grid(nd);
  std::vector<hsize_t> coord(nd);
  for (std::size_t d = 0; d < nd; ++d) {
    grid[d] = (layout.shape[d] + layout.chunks[d] - 1) / layout.chunks[d];
    if (grid[d] == 0) return;
  }
  for (;;) {
    for (std::size_t d = 0; d < nd; ++d) coord[d] = index[d] * layout.chunks[d];
    unsigned mask = 0;
    haddr_t addr = HADDR_UNDEF;
    hsize_t size = 0;
    if (H5Dget_chunk_info_by_coord(dset, coord.data(), &mask, &addr, &size) < 0)
      throw MetadataError("variable '" + var + "': cannot read the address of chunk " + chunk_index_text(index));
    if (addr != HADDR_UNDEF) visit({index, addr, size, mask});
    std::size_t d = nd;
    while (d > 0) {
      --d;
      if (++index[d] < grid[d]) break;
      index[d] = 0;
      if (d == 0) return;
    }
    if (nd == 0) return;
  }
}

}  // namespace lazycube::refs
