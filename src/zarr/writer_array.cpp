// One array's units (chunks, or shards): padding edge units with the fill value, leaving out
// units and inner chunks that hold only the fill value, encoding with the parsed chain, and
// checking a stored unit back for resume.
#include <cmath>
#include <cstring>
#include <type_traits>
#include <nlohmann/json.hpp>

#include "lazycube/error.hpp"
#include "util/chunk_copy.hpp"
#include "util/element_cast.hpp"
#include "util/half.hpp"
#include "util/thread_pool.hpp"
#include "writer_array_impl.hpp"

namespace lazycube::zarr {


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
bool all_fill_bytes(ByteView data, const FillValue& fill, const DataType& t) {
  namespace dtypes = lazycube::detail::dtype_set;
  bool all = true;
  const bool is_float = lazycube::detail::visit_dtype<dtypes::kHalf | dtypes::kFloat>(t, [&](auto tag) {
    using F = typename decltype(tag)::type;
    const F f = lazycube::detail::load_element<F>(fill.bytes.data(), 0);
    if constexpr (std::is_same_v<F, float16>) {  // float16: the same bits unless NaN
      const bool nan = std::isnan(half_to_float(f));
      for (std::size_t i = 0; all && i + 2 <= data.size(); i += 2) {
        const float16 v = lazycube::detail::load_element<float16>(data.data() + i, 0);
        all = nan ? std::isnan(half_to_float(v)) : v.bits == f.bits;
      }
    } else {
      all = all_float_fill(data, f);
    }
  });
  if (is_float) return all;
  const std::size_t item = t.itemsize;
  for (std::size_t i = 0; i < data.size(); i += item)
    if (std::memcmp(data.data() + i, fill.bytes.data(), item) != 0) return false;
  return true;
}

bool all_fill(const codec::ChunkData& chunk, const FillValue& fill, const DataType& t) {
  if (!t.is_variable_length()) return all_fill_bytes(chunk.bytes.view(), fill, t);
  for (const auto& s : chunk.strings)
    if (s != fill.string) return false;
  return true;
}

// The block [0, extent) of a grid, as a copy region.
grid::Region leading_region(const Shape& extent) {
  grid::Region r;
  for (auto n : extent) {
    r.src_first.push_back(0);
    r.src_step.push_back(1);
    r.dst_first.push_back(0);
    r.count.push_back(n);
  }
  return r;
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
ChunkGrid ArrayWriter::unit_grid() const { return impl_->units; }

Shape ArrayWriter::Impl::full_shape(const std::vector<std::uint64_t>& index) const {
  return units.is_regular() ? built.meta.chunk_shape : units.decoded_shape(index);
}

std::shared_ptr<const ShardingCodec> ArrayWriter::Impl::sharding_for(const Shape& shard) const {
  if (shard == sharding->shard_shape()) return {std::shared_ptr<const ShardingCodec>{}, sharding};
  return sharding->for_shard_shape(shard);
}
std::uint64_t ArrayWriter::num_units() const { return shape_size(impl_->grid); }
const Buffer& ArrayWriter::fill_value_bytes() const { return impl_->built.meta.fill.bytes; }

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
  for (std::size_t d = 0; d < index.size(); ++d) origin[d] = impl_->units.start(d, index[d]);
  return origin;
}

Shape ArrayWriter::unit_extent(const std::vector<std::uint64_t>& index) const {
  impl_->check_index(index);
  Shape extent(index.size());
  for (std::size_t d = 0; d < index.size(); ++d) extent[d] = impl_->units.extent(d, index[d]);
  return extent;
}

std::string ArrayWriter::unit_key(const std::vector<std::uint64_t>& index) const {
  impl_->check_index(index);
  return impl_->dest->key(impl_->path, impl_->built.meta.key_encoding.key(index));
}

bool ArrayWriter::Impl::store_unit(const std::vector<std::uint64_t>& index, const Shape& extent,
                                   const std::string& key, ByteView fixed, const codec::ChunkData* strings,
                                   const ArrayWriter::ChunkFill* filled, Buffer* scratch) const {
  const ArrayMetadata& m = built.meta;
  writer::Destination& d = *dest;
  try {
    d.prepare();
    const bool skip_empty = !d.options().write_empty_chunks && m.fill.specified;
    auto empty = [&](const codec::ChunkData& c) { return all_fill(c, m.fill, m.dtype); };
    std::optional<Buffer> encoded;
    const codec::ChunkSpec spec{m.dtype, full_shape(index)};
    if (sharding) {
      const auto codec = sharding_for(spec.shape);
      // Inner chunks wholly past the array's end are never stored (zarr-python writes only
      // the chunks a selection touches); the others when they hold more than the fill value.
      auto skip = [&](const Shape& origin, const codec::ChunkData& inner) {
        for (std::size_t dim = 0; dim < origin.size(); ++dim)
          if (origin[dim] >= extent[dim]) return true;
        return skip_empty && empty(inner);
      };
      if (filled) {
        if (!codec->encode_filled(inner_filler(index, extent, *codec, *filled), spec, skip, *scratch)) {
          if (d.options().mode == WriteMode::Resume) d.remove(key);
          return false;
        }
        d.put(key, scratch->view());
        return true;
      }
      encoded = strings ? codec->encode_skipping(*strings, spec, skip) : codec->encode_skipping(fixed, spec, skip);
    } else if (strings) {
      if (!skip_empty || !empty(*strings)) encoded = m.codecs.encode(*strings, spec);
    } else if (!skip_empty || !all_fill_bytes(fixed, m.fill, m.dtype)) {
      encoded = m.codecs.encode_fixed(fixed, spec);
    }
    if (!encoded) {
      // A resumed store may hold this unit from before.
      if (d.options().mode == WriteMode::Resume) d.remove(key);
      return false;
    }
    d.put(key, encoded->view());
    return true;
  } catch (const StoreError&) {
    throw;  // recorded by the destination
  } catch (const std::exception& e) {
    d.record_failure(where + ": unit " + index_text(index) + ": " + e.what());
    throw;
  }
}

ShardingCodec::InnerFill ArrayWriter::Impl::inner_filler(const std::vector<std::uint64_t>& index, const Shape& extent,
                                                          const ShardingCodec& codec,
                                                          const ArrayWriter::ChunkFill& fill) const {
  return [this, &index, &extent, &codec, &fill](const Shape& origin, MutableByteView block) {
    const Shape& inner = codec.inner_chunk_shape();
    const std::size_t item = built.meta.dtype.itemsize;
    std::vector<std::uint64_t> at(origin.size());
    Shape part(origin.size());
    bool whole = true;
    for (std::size_t d = 0; d < origin.size(); ++d) {
      if (origin[d] >= extent[d]) {  // wholly past the array's end: never stored, nothing to ask
        fill_with(block, built.meta.fill, item);
        return;
      }
      at[d] = units.start(d, index[d]) + origin[d];
      part[d] = std::min(inner[d], extent[d] - origin[d]);
      whole = whole && part[d] == inner[d];
    }
    if (whole) {
      fill(at, part, block);
      return;
    }
    // Across the array's end: the part inside, padded with the fill value.
    thread_local Buffer inside;
    inside.resize(shape_size(part) * item);
    fill(at, part, inside.span());
    fill_with(block, built.meta.fill, item);
    grid::copy_region(inside.data(), part, block.data(), inner, leading_region(part), item);
  };
}

bool ArrayWriter::write_unit_by_chunks(const std::vector<std::uint64_t>& index, const ChunkFill& fill,
                                       Buffer& scratch) {
  const ArrayMetadata& m = impl_->built.meta;
  if (m.dtype.is_variable_length())
    throw UsageError(impl_->where + ": " + m.dtype.name() + " units are written from an NDArray of strings");
  const auto origin = unit_origin(index);
  const Shape extent = unit_extent(index);
  if (!impl_->sharding) {
    scratch.resize(shape_size(extent) * m.dtype.itemsize);
    fill(origin, extent, scratch.span());
    return write_unit(index, scratch.view());
  }
  return impl_->store_unit(index, extent, unit_key(index), {}, nullptr, &fill, &scratch);
}

bool ArrayWriter::write_unit(const std::vector<std::uint64_t>& index, ByteView data) {
  return impl_->write_bytes(*this, index, data);
}

bool ArrayWriter::Impl::write_bytes(const ArrayWriter& self, const std::vector<std::uint64_t>& index,
                                    ByteView data) const {
  const ArrayMetadata& m = built.meta;
  if (m.dtype.is_variable_length())
    throw UsageError(where + ": " + m.dtype.name() + " units are written from an NDArray of strings");
  const std::size_t item = m.dtype.itemsize;
  const Shape extent = self.unit_extent(index);
  const Shape full = full_shape(index);
  const std::uint64_t extent_bytes = shape_size(extent) * item, full_bytes = shape_size(full) * item;
  if (data.size() != extent_bytes && data.size() != full_bytes)
    throw UsageError(where + ": unit " + index_text(index) + " needs " + std::to_string(extent_bytes) +
                     " bytes (extent " + nlohmann::json(extent).dump() + ")" +
                     (extent_bytes == full_bytes ? "" : " or " + std::to_string(full_bytes) + " (the whole unit)") +
                     ", got " + std::to_string(data.size()));
  // A whole unit is encoded from the caller's memory; an edge unit is padded with the fill value.
  if (extent == full) return store_unit(index, extent, self.unit_key(index), data, nullptr);
  Buffer padded(full_bytes);
  fill_with(padded.span(), m.fill, item);
  grid::copy_region(data.data(), data.size() == full_bytes ? full : extent, padded.data(), full, leading_region(extent),
                    item);
  return store_unit(index, extent, self.unit_key(index), padded.view(), nullptr);
}

bool ArrayWriter::write_unit(const std::vector<std::uint64_t>& index, const NDArray& data) {
  const ArrayMetadata& m = impl_->built.meta;
  if (!(data.dtype == m.dtype))
    throw UsageError(impl_->where + ": unit data of " + data.dtype.name() + " for an array of " + m.dtype.name());
  const Shape extent = unit_extent(index);
  const Shape full = impl_->full_shape(index);
  if (data.shape != extent && data.shape != full)
    throw UsageError(impl_->where + ": unit " + index_text(index) + " data has shape " +
                     nlohmann::json(data.shape).dump() + ", expected " + nlohmann::json(extent).dump());
  if (!m.dtype.is_variable_length()) return write_unit(index, data.data.view());
  if (data.strings.size() != shape_size(data.shape))
    throw UsageError(impl_->where + ": unit " + index_text(index) + " holds " + std::to_string(data.strings.size()) +
                     " strings for shape " + nlohmann::json(data.shape).dump());
  codec::ChunkData unit;
  unit.strings.assign(shape_size(full), m.fill.string);
  grid::copy_region_strings(data.strings, data.shape, unit.strings, full, leading_region(extent));
  return impl_->store_unit(index, extent, unit_key(index), {}, &unit);
}

void ArrayWriter::write_region(const std::vector<std::uint64_t>& origin, const NDArray& data) {
  const ChunkGrid& units = impl_->units;
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
    if (origin[d] + data.shape[d] > shape[d])
      throw UsageError(impl_->where + ": region of " + std::to_string(data.shape[d]) + " at " +
                       std::to_string(origin[d]) + " along " + dim + " passes the array's end " +
                       std::to_string(shape[d]));
    if (data.shape[d] == 0) return;
    // Both ends on unit boundaries (or the end at the array's end).
    const std::uint64_t end = origin[d] + data.shape[d];
    first[d] = units.index_of(d, origin[d]);
    const std::uint64_t last = units.index_of(d, end - 1);
    if (units.start(d, first[d]) != origin[d])
      throw UsageError(impl_->where + ": region origin " + std::to_string(origin[d]) + " along " + dim +
                       " is not on a unit boundary (the unit holding it starts at " +
                       std::to_string(units.start(d, first[d])) + ")");
    if (end != shape[d] && units.start(d, last) + units.length(d, last) != end)
      throw UsageError(impl_->where + ": region of " + std::to_string(data.shape[d]) + " along " + dim +
                       " does not cover whole units (it ends at " + std::to_string(end) + ", inside the unit from " +
                       std::to_string(units.start(d, last)) + ")");
    count[d] = last - first[d] + 1;
  }
  const bool vlen = data.dtype.is_variable_length();
  if (vlen && data.strings.size() != shape_size(data.shape))
    throw UsageError(impl_->where + ": region holds " + std::to_string(data.strings.size()) + " strings for shape " +
                     nlohmann::json(data.shape).dump());
  const std::size_t item = data.dtype.itemsize;
  parallel_for(shape_size(count), [&](std::size_t t) {
    const auto at = grid::unravel(t, count);
    std::vector<std::uint64_t> index(nd);
    grid::DimIndex local(nd);
    for (std::size_t d = 0; d < nd; ++d) {
      index[d] = first[d] + at[d];
      local[d] = units.start(d, index[d]) - origin[d];
    }
    NDArray block;
    block.dtype = data.dtype;
    block.shape = unit_extent(index);
    if (vlen) {
      block.strings.resize(shape_size(block.shape));
      grid::copy_block_strings(data.strings, data.shape, block.strings, block.shape, local, /*extract=*/true);
      write_unit(index, block);
    } else {
      block.data.resize(shape_size(block.shape) * item);
      grid::copy_block(data.data.view(), data.shape, block.data.span(), block.shape, local, item, /*extract=*/true);
      impl_->write_bytes(*this, index, block.data.view());
    }
  });
}

bool ArrayWriter::unit_verified(const std::vector<std::uint64_t>& index) const {
  const ArrayMetadata& m = impl_->built.meta;
  const auto bytes = impl_->dest->store().get(unit_key(index));
  if (!bytes) return false;
  try {
    codec::ChunkData decoded;
    const codec::ChunkSpec spec{m.dtype, impl_->full_shape(index)};
    if (impl_->sharding) impl_->sharding_for(spec.shape)->decode(bytes->view(), spec, decoded);
    else m.codecs.decode(bytes->view(), spec, decoded);
  } catch (const CodecError&) {
    return false;
  }
  return true;
}

std::vector<std::pair<std::string, nlohmann::json>> ArrayWriter::metadata_documents() const {
  return impl_->built.documents;
}

}  // namespace lazycube::zarr
