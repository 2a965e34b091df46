// One array's units (chunks, or shards): padding edge units with the fill value, leaving out
// units and inner chunks that hold only the fill value, encoding with the parsed chain, and
// checking a stored unit back for resume.
#include <cmath>
#include <cstring>

#include "lazycube/error.hpp"
#include "lazycube/util/chunk_copy.hpp"
#include "lazycube/util/half.hpp"
#include "lazycube/util/thread_pool.hpp"
#include "writer_array_impl.hpp"

namespace lazycube::zarr {

using writer::join_path;

namespace {

template <class F>
bool all_float_fill(ByteView data, F fill) {
  const std::size_t n = data.size() / sizeof(F);
  const bool nan = std::isnan(fill);
  for (std::size_t i = 0; i < n; ++i) {
    F v;
    std::memcpy(&v, data.data() + i * sizeof(F), sizeof(F));
    if (nan ? !std::isnan(v) : !(v == fill)) return false;
  }
  return true;
}

// Whether every element of `data` equals the fill value (NaN equals a NaN fill, as numpy's
// array_equal(equal_nan=True) in zarr-python).
bool all_fill(ByteView data, const FillValue& fill, const DataType& t) {
  if (t.kind == DTypeKind::Float && t.itemsize == 4) {
    float f;
    std::memcpy(&f, fill.bytes.data(), 4);
    return all_float_fill(data, f);
  }
  if (t.kind == DTypeKind::Float && t.itemsize == 8) {
    double f;
    std::memcpy(&f, fill.bytes.data(), 8);
    return all_float_fill(data, f);
  }
  if (t.kind == DTypeKind::Float && t.itemsize == 2) {
    std::uint16_t h;
    std::memcpy(&h, fill.bytes.data(), 2);
    const bool nan = std::isnan(half_to_float(h));
    for (std::size_t i = 0; i + 2 <= data.size(); i += 2) {
      std::uint16_t v;
      std::memcpy(&v, data.data() + i, 2);
      if (nan ? !std::isnan(half_to_float(v)) : v != h) return false;
    }
    return true;
  }
  const std::size_t item = t.itemsize;
  for (std::size_t i = 0; i < data.size(); i += item)
    if (std::memcmp(data.data() + i, fill.bytes.data(), item) != 0) return false;
  return true;
}

void fill_with(MutableByteView out, const FillValue& fill, std::size_t item) {
  bool zero = true;
  for (std::size_t i = 0; i < item; ++i) zero = zero && fill.bytes.data()[i] == std::byte{0};
  if (zero) {
    std::memset(out.data(), 0, out.size());
    return;
  }
  for (std::size_t i = 0; i < out.size(); i += item) std::memcpy(out.data() + i, fill.bytes.data(), item);
}

std::string index_text(const std::vector<std::uint64_t>& index) { return nlohmann::json(index).dump(); }

}  // namespace

ArrayWriter::ArrayWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ArrayWriter::~ArrayWriter() = default;

const std::string& ArrayWriter::path() const { return impl_->path; }
const ArraySpec& ArrayWriter::spec() const { return impl_->spec; }
const Shape& ArrayWriter::unit_shape() const { return impl_->built.meta.chunk_shape; }
const Shape& ArrayWriter::grid_shape() const { return impl_->grid; }
std::uint64_t ArrayWriter::num_units() const { return shape_size(impl_->grid); }

std::vector<std::uint64_t> ArrayWriter::unit_index(std::uint64_t i) const {
  if (i >= num_units())
    throw UsageError(impl_->where + ": unit " + std::to_string(i) + " is past the last of " +
                     std::to_string(num_units()));
  const auto at = grid::unravel(i, impl_->grid);
  return {at.begin(), at.end()};
}

void ArrayWriter::Impl::check_index(const std::vector<std::uint64_t>& index) const {
  if (index.size() != grid.size())
    throw UsageError(where + ": unit index " + index_text(index) + " has " + std::to_string(index.size()) +
                     " dims, the array " + std::to_string(grid.size()));
  for (std::size_t d = 0; d < grid.size(); ++d)
    if (index[d] >= grid[d])
      throw UsageError(where + ": unit index " + index_text(index) + " is outside the grid " +
                       nlohmann::json(grid).dump() + " along dim " + std::to_string(d));
}

std::vector<std::uint64_t> ArrayWriter::unit_origin(const std::vector<std::uint64_t>& index) const {
  impl_->check_index(index);
  std::vector<std::uint64_t> origin(index.size());
  for (std::size_t d = 0; d < index.size(); ++d) origin[d] = index[d] * unit_shape()[d];
  return origin;
}

Shape ArrayWriter::unit_extent(const std::vector<std::uint64_t>& index) const {
  const auto origin = unit_origin(index);
  Shape extent(origin.size());
  for (std::size_t d = 0; d < origin.size(); ++d)
    extent[d] = std::min(unit_shape()[d], impl_->spec.shape[d] - origin[d]);
  return extent;
}

std::string ArrayWriter::unit_key(const std::vector<std::uint64_t>& index) const {
  impl_->check_index(index);
  return impl_->dest->key(impl_->path, impl_->built.meta.key_encoding.key(index));
}

bool ArrayWriter::write_unit(const std::vector<std::uint64_t>& index, ByteView data) {
  const ArrayMetadata& m = impl_->built.meta;
  const std::size_t item = m.dtype.itemsize;
  const Shape extent = unit_extent(index);
  const Shape& full = m.chunk_shape;
  const std::uint64_t extent_bytes = shape_size(extent) * item, full_bytes = shape_size(full) * item;
  if (data.size() != extent_bytes && data.size() != full_bytes)
    throw UsageError(impl_->where + ": unit " + index_text(index) + " needs " + std::to_string(extent_bytes) +
                     " bytes (extent " + nlohmann::json(extent).dump() + ")" +
                     (extent_bytes == full_bytes ? "" : " or " + std::to_string(full_bytes) + " (the whole unit)") +
                     ", got " + std::to_string(data.size()));
  const std::string key = unit_key(index);
  writer::Destination& dest = *impl_->dest;
  try {
    dest.prepare();
    codec::ChunkData unit;
    if (extent == full) {
      unit.bytes = Buffer::copy_of(data);
    } else {
      unit.bytes.resize(full_bytes);
      fill_with(unit.bytes.span(), m.fill, item);
      grid::Region r;
      for (std::size_t d = 0; d < extent.size(); ++d) {
        r.src_first.push_back(0);
        r.src_step.push_back(1);
        r.dst_first.push_back(0);
        r.count.push_back(extent[d]);
      }
      grid::copy_region(data.data(), data.size() == full_bytes ? full : extent, unit.bytes.data(), full, r, item);
    }
    const bool skip_empty = !dest.options().write_empty_chunks && m.fill.specified;
    std::optional<Buffer> encoded;
    const codec::ChunkSpec spec{m.dtype, full};
    if (impl_->sharding) {
      ShardingCodec::InnerSkip skip;
      if (skip_empty) skip = [&](ByteView inner) { return all_fill(inner, m.fill, m.dtype); };
      encoded = impl_->sharding->encode_skipping(unit, spec, skip);
    } else if (!skip_empty || !all_fill(unit.bytes.view(), m.fill, m.dtype)) {
      encoded = m.codecs.encode(unit, spec);
    }
    if (!encoded) {
      // A resumed or overwritten store may hold this unit from before.
      if (dest.options().mode == WriteMode::Resume) dest.remove(key);
      return false;
    }
    dest.put(key, encoded->view());
    return true;
  } catch (const StoreError&) {
    throw;  // recorded by the destination
  } catch (const std::exception& e) {
    dest.record_failure(impl_->where + ": unit " + index_text(index) + ": " + e.what());
    throw;
  }
}

bool ArrayWriter::write_unit(const std::vector<std::uint64_t>& index, const NDArray& data) {
  if (!(data.dtype == impl_->spec.dtype))
    throw UsageError(impl_->where + ": unit data of " + data.dtype.name() + " for an array of " +
                     impl_->spec.dtype.name());
  const Shape extent = unit_extent(index);
  if (data.shape != extent && data.shape != unit_shape())
    throw UsageError(impl_->where + ": unit " + index_text(index) + " data has shape " +
                     nlohmann::json(data.shape).dump() + ", expected " + nlohmann::json(extent).dump());
  return write_unit(index, data.data.view());
}

void ArrayWriter::write_region(const std::vector<std::uint64_t>& origin, const NDArray& data) {
  const Shape& us = unit_shape();
  const Shape& shape = impl_->spec.shape;
  const std::size_t nd = shape.size();
  if (!(data.dtype == impl_->spec.dtype))
    throw UsageError(impl_->where + ": region data of " + data.dtype.name() + " for an array of " +
                     impl_->spec.dtype.name());
  if (origin.size() != nd || data.shape.size() != nd)
    throw UsageError(impl_->where + ": region origin and data need " + std::to_string(nd) + " dims");
  Shape first(nd), count(nd);
  for (std::size_t d = 0; d < nd; ++d) {
    const std::string dim = "dim " + std::to_string(d);
    if (origin[d] % us[d] != 0)
      throw UsageError(impl_->where + ": region origin " + std::to_string(origin[d]) + " along " + dim +
                       " is not a multiple of the unit shape " + std::to_string(us[d]));
    if (origin[d] + data.shape[d] > shape[d])
      throw UsageError(impl_->where + ": region of " + std::to_string(data.shape[d]) + " at " +
                       std::to_string(origin[d]) + " along " + dim + " passes the array's end " +
                       std::to_string(shape[d]));
    if (data.shape[d] % us[d] != 0 && origin[d] + data.shape[d] != shape[d])
      throw UsageError(impl_->where + ": region of " + std::to_string(data.shape[d]) + " along " + dim +
                       " does not cover whole units of " + std::to_string(us[d]));
    first[d] = origin[d] / us[d];
    count[d] = (data.shape[d] + us[d] - 1) / us[d];
  }
  const std::size_t item = data.dtype.itemsize;
  parallel_for(shape_size(count), [&](std::size_t t) {
    const auto at = grid::unravel(t, count);
    std::vector<std::uint64_t> index(nd);
    grid::DimIndex local(nd);
    for (std::size_t d = 0; d < nd; ++d) {
      index[d] = first[d] + at[d];
      local[d] = at[d] * us[d];
    }
    const Shape extent = unit_extent(index);
    Buffer block(shape_size(extent) * item);
    grid::copy_block(data.data.view(), data.shape, block.span(), extent, local, item, /*extract=*/true);
    write_unit(index, block.view());
  });
}

bool ArrayWriter::unit_verified(const std::vector<std::uint64_t>& index) const {
  const ArrayMetadata& m = impl_->built.meta;
  const auto bytes = impl_->dest->store().get(unit_key(index));
  if (!bytes) return false;
  Buffer decoded(shape_size(m.chunk_shape) * m.dtype.itemsize);
  try {
    m.codecs.decode_into(bytes->view(), {m.dtype, m.chunk_shape}, decoded.span());
  } catch (const CodecError&) {
    return false;
  }
  return true;
}

std::vector<std::pair<std::string, nlohmann::json>> ArrayWriter::metadata_documents() const {
  return impl_->built.documents;
}

}  // namespace lazycube::zarr
