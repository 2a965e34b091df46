#include "gdal_array.hpp"

#include <cstring>

#include <gdal_priv.h>
#include <nlohmann/json.hpp>

#include "util/chunk_copy.hpp"
#include "gdal_guard.hpp"
#include "lazycube/error.hpp"
#include "util/thread_pool.hpp"

namespace lazycube::netcdf {

using grid::c_strides;
using grid::copy_region;
using grid::plan_dim;

namespace {

// A selection as the start / count / step arrays GDALMDArray::Read takes.
struct GdalWindow {
  std::vector<GUInt64> start;
  std::vector<size_t> count;
  std::vector<GInt64> step;

  explicit GdalWindow(const ArraySelection& sel) {
    for (const auto& r : sel) {
      start.push_back(r.start);
      count.push_back(static_cast<size_t>(r.count));
      step.push_back(r.step);
    }
  }
};

}  // namespace

GdalArray::GdalArray(std::shared_ptr<GdalSource> source, GdalArrayInfo info)
    : source_(std::move(source)), info_(std::move(info)) {}

nlohmann::json GdalArray::codecs_json() const {
  return nlohmann::json::array({{{"name", "gdal"}, {"configuration", {{"driver", info_.driver}}}}});
}

void GdalArray::check_selection(const ArraySelection& sel) const {
  if (sel.size() != info_.shape.size())
    throw SelectionError(describe() + ": selection has " + std::to_string(sel.size()) + " dims, array has " +
                         std::to_string(info_.shape.size()));
  for (std::size_t d = 0; d < sel.size(); ++d) {
    const IndexRange& r = sel[d];
    if (r.count == 0) continue;
    if (r.step == 0) throw SelectionError(describe() + ": step 0 along dim " + info_.dims[d]);
    if (r.start >= info_.shape[d] || r.at(r.count - 1) >= info_.shape[d])
      throw SelectionError(describe() + ": selection out of range along dim " + info_.dims[d]);
  }
}

void GdalArray::check_read(const ArraySelection& sel, std::size_t dest_bytes) const {
  check_selection(sel);
  std::uint64_t n = 1;
  for (const auto& r : sel) n *= r.count;
  if (dest_bytes != n * info_.dtype.itemsize)
    throw UsageError(describe() + ": destination holds " + std::to_string(dest_bytes) + " bytes, selection needs " +
                     std::to_string(n * info_.dtype.itemsize));
}

void GdalArray::gdal_read(const std::vector<GUInt64>& start, const std::vector<size_t>& count,
                          const std::vector<GInt64>& step, const std::vector<GPtrDiff_t>* dest_strides,
                          void* dest) const {
  const auto array = source_->array(info_.name);
  GdalCallGuard guard;
  const auto type = GDALExtendedDataType::Create(static_cast<GDALDataType>(info_.gdal_type));
  if (!array->Read(start.data(), count.data(), step.data(), dest_strides ? dest_strides->data() : nullptr, type,
                   dest)) {
    const std::string why = guard.last_error();
    throw StoreError("GDAL could not read " + describe() + (why.empty() ? std::string() : ": " + why));
  }
}

void GdalArray::read(const ArraySelection& sel, MutableByteView dest) const {
  if (info_.dtype.is_variable_length())
    throw UsageError(describe() + ": " + info_.dtype.name() + " data must be read as strings");
  check_read(sel, dest.size());
  read_pieces(sel, dest, nullptr);
}

void GdalArray::read_converted(const ArraySelection& sel, MutableByteView dest,
                               const ElementConversion& conversion) const {
  converted_count(sel, dest, conversion);
  std::uint64_t n = 1;
  for (const auto& r : sel) n *= r.count;
  check_read(sel, n * info_.dtype.itemsize);
  read_pieces(sel, dest, &conversion);
}

void GdalArray::read_pieces(const ArraySelection& sel, MutableByteView dest, const ElementConversion* conv) const {
  const std::size_t nd = sel.size();
  for (const auto& r : sel)
    if (r.count == 0) return;
  const std::size_t item = info_.dtype.itemsize;
  const std::size_t out_item = conv ? conv->output_dtype().itemsize : item;
  // One GDAL read of `count0` outer steps into `out`: straight, or through this thread's
  // scratch and the conversion.
  auto read_into = [&](const GdalWindow& w, std::uint64_t elements, std::byte* out) {
    if (!conv) {
      gdal_read(w.start, w.count, w.step, nullptr, out);
      return;
    }
    thread_local Buffer scratch;
    scratch.resize(elements * item);
    gdal_read(w.start, w.count, w.step, nullptr, scratch.data());
    conv->convert(scratch.data(), elements, out);
  };
  if (nd == 0) {
    read_into(GdalWindow(sel), 1, dest.data());
    return;
  }
  if (native_chunks()) {
    read_by_units(sel, dest, conv);
    return;
  }
  // Split along the outermost dim by read unit: each piece is one GDAL read on the thread that
  // runs it (its own handle), so pieces (GRIB messages, HDF5 chunk rows) decode (and convert) in
  // parallel.
  const auto pieces = plan_dim(sel[0], info_.block[0]);
  Shape dst_shape;
  for (const auto& r : sel) dst_shape.push_back(r.count);
  const std::uint64_t row_elements = c_strides(dst_shape)[0];
  auto one = [&](std::size_t p) {
    GdalWindow w(sel);
    w.start[0] = sel[0].at(pieces[p].k0);
    w.count[0] = pieces[p].n;
    read_into(w, pieces[p].n * row_elements, dest.data() + pieces[p].k0 * row_elements * out_item);
  };
  if (pieces.size() == 1) {
    one(0);
  } else {
    parallel_for(pieces.size(), one);
  }
}

void GdalArray::read_by_units(const ArraySelection& sel, MutableByteView dest, const ElementConversion* conv) const {
  const grid::UnitPieces pieces(sel, info_.block);
  Shape dst_shape;
  for (const auto& r : sel) dst_shape.push_back(r.count);
  const std::size_t item = info_.dtype.itemsize;
  const std::uint64_t unit_bytes = shape_size(info_.block) * item;
  // One unit per task, decoded into the thread's scratch and copied (converted) out: units
  // write disjoint parts of `dest`.
  parallel_for(pieces.size(), [&](std::size_t t) {
    grid::DimIndex unit;
    grid::Region region;
    pieces.get(t, unit, region);
    thread_local Buffer decoded;
    decoded.resize(unit_bytes);
    read_unit(std::vector<std::uint64_t>(unit.begin(), unit.end()), decoded.span());
    if (conv)
      grid::convert_region(decoded.data(), info_.block, dest.data(), dst_shape, region, item, *conv);
    else
      copy_region(decoded.data(), info_.block, dest.data(), dst_shape, region, item);
  });
}

void GdalArray::read_strings(const ArraySelection& sel, std::vector<std::string>& dest) const {
  if (!info_.dtype.is_variable_length())
    throw UsageError(describe() + ": " + info_.dtype.name() + " data is not read as strings");
  std::uint64_t n = 1;
  for (const auto& r : sel) n *= r.count;
  check_selection(sel);
  dest.assign(n, std::string());
  if (n == 0) return;
  const GdalWindow w(sel);
  std::vector<char*> raw(n, nullptr);
  const auto array = source_->array(info_.name);
  GdalCallGuard guard;
  const bool ok = array->Read(w.start.data(), w.count.data(), w.step.data(), nullptr, GDALExtendedDataType::CreateString(),
                              raw.data());
  for (std::size_t i = 0; i < n; ++i) {
    if (raw[i]) dest[i] = raw[i];
    CPLFree(raw[i]);
  }
  if (!ok) throw StoreError("GDAL could not read " + describe() + ": " + guard.last_error());
}

const refs::Hdf5NativeChunks* GdalArray::native_chunks() const {
  std::call_once(native_once_, [&] {
    if (!source_->local() || (info_.driver != "netCDF" && info_.driver != "HDF5")) return;
    try {
      native_ = refs::Hdf5NativeChunks::open(source_->gdal_path(), info_.name, info_.shape, info_.block, info_.dtype);
    } catch (const Error&) {
      native_ = nullptr;  // HDF5 cannot index it: GDAL reads it (or says what is wrong)
    }
  });
  return native_.get();
}

void GdalArray::read_unit(const std::vector<std::uint64_t>& unit, MutableByteView out) const {
  const std::size_t nd = unit.size();
  // A scalar is one GDAL read, as read() does it.
  if (const auto* native = nd > 0 ? native_chunks() : nullptr; native && native->read_unit(unit, out)) return;
  std::vector<GUInt64> start(nd);
  std::vector<size_t> count(nd);
  std::vector<GInt64> step(nd, 1);
  bool edge = false;
  for (std::size_t d = 0; d < nd; ++d) {
    start[d] = unit[d] * info_.block[d];
    count[d] = static_cast<size_t>(std::min<std::uint64_t>(info_.block[d], info_.shape[d] - start[d]));
    edge = edge || count[d] != info_.block[d];
  }
  if (!edge) {
    gdal_read(start, count, step, nullptr, out.data());
    return;
  }
  // Edge unit: the clipped block goes into the unit-shaped buffer, the rest stays zero.
  std::memset(out.data(), 0, out.size());
  const auto strides = c_strides(info_.block);
  std::vector<GPtrDiff_t> dest_strides(strides.begin(), strides.end());
  gdal_read(start, count, step, &dest_strides, out.data());
}

void GdalArray::fetch_units(std::span<const Unit> units, const UnitSink& sink) const {
  // One unit per task, each on its thread's own GDAL handle.
  parallel_for(units.size(), [&](std::size_t i) {
    sink(i, [&](MutableByteView out) { read_unit(units[i], out); });
  });
}

}  // namespace lazycube::netcdf
