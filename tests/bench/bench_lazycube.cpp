// `lazycube` and `decode-bound` modes.
#include <memory>
#include <optional>
#include <stdexcept>
#include <nlohmann/json.hpp>

#include "bench_modes.hpp"
#include "lazycube/store/store.hpp"
#include "lazycube/zarr/hierarchy.hpp"
#include "zarr/zarr_array.hpp"  // internal: the read unit's codec pipeline and fetch_unit()

namespace lazycube::bench {

namespace {

ArrayPtr open(const std::string& store) { return zarr::open_array(make_file_store(store), ""); }

std::uint64_t array_bytes(const Array& a) { return shape_size(a.shape()) * a.dtype().itemsize; }

// Byte offset of each read unit inside the C-order output, in C order of the unit grid. The
// decode bound writes each unit straight into place, so every unit must be a contiguous run
// of the array (leading extents of 1, one partial dim, then full dims) and tile it exactly.
std::vector<std::uint64_t> unit_offsets(const Array& a, std::vector<std::vector<std::uint64_t>>& units) {
  const Shape& shape = a.shape();
  const Shape& unit = a.read_chunk_shape();
  const std::size_t nd = shape.size();
  std::size_t d0 = 0;
  while (d0 < nd && unit[d0] == 1) ++d0;
  for (std::size_t d = 0; d < nd; ++d) {
    if (shape[d] % unit[d] != 0 || (d > d0 && unit[d] != shape[d]))
      throw std::runtime_error("decode-bound needs read units that are contiguous runs of the array");
  }
  Shape grid(nd);
  for (std::size_t d = 0; d < nd; ++d) grid[d] = shape[d] / unit[d];
  std::vector<std::uint64_t> offsets;
  const std::uint64_t n = shape_size(grid), unit_bytes = shape_size(unit) * a.dtype().itemsize;
  for (std::uint64_t k = 0; k < n; ++k) {
    std::vector<std::uint64_t> idx(nd);
    for (std::size_t d = nd, rest = k; d-- > 0;) {
      idx[d] = rest % grid[d];
      rest /= grid[d];
    }
    units.push_back(idx);
    offsets.push_back(k * unit_bytes);  // C-order grid of contiguous runs = consecutive runs
  }
  return offsets;
}

}  // namespace

nlohmann::json run_lazycube(const std::string& store, int runs) {
  ArrayPtr array = open(store);
  ArraySelection all;
  for (auto n : array->shape()) all.push_back(IndexRange::all(n));
  const std::uint64_t bytes = array_bytes(*array);
  Buffer out(bytes);  // allocated once, untouched until the first read
  const Timings t = time_runs(runs, [&] { array->read(all, out.span()); });
  return result_json("lazycube", store, t, bytes, checksum(out.view()));
}

nlohmann::json run_decode_bound(const std::string& store, int runs, unsigned cores) {
  ArrayPtr array = open(store);
  auto zarray = std::dynamic_pointer_cast<const zarr::ZarrArray>(array);
  if (!zarray) throw std::runtime_error(store + " did not open as a Zarr array");
  std::vector<std::vector<std::uint64_t>> units;
  const auto offsets = unit_offsets(*array, units);

  // Untimed: every encoded unit in memory.
  std::vector<Buffer> encoded;
  std::uint64_t encoded_bytes = 0;
  for (const auto& u : units) {
    std::string what;
    Buffer b;
    if (!zarray->fetch_unit(u, what, b))
      throw std::runtime_error(what + " is missing; the benchmark array must be complete");
    encoded_bytes += b.size();
    encoded.push_back(std::move(b));
  }

  const codec::ChunkSpec spec{array->dtype(), array->read_chunk_shape()};
  const std::uint64_t unit_bytes = spec.nbytes(), bytes = array_bytes(*array);
  const codec::CodecPipeline& pipeline = zarray->unit_codecs();
  Buffer out(bytes);  // one array-sized buffer, allocated once
  const Timings t = time_runs(runs, [&] {
    for (std::size_t i = 0; i < encoded.size(); ++i)
      pipeline.decode_into(encoded[i].view(), spec, out.span().subspan(offsets[i], unit_bytes));
  });
  nlohmann::json r = result_json("decode-bound", store, t, bytes, checksum(out.view()));
  r["encoded_bytes"] = encoded_bytes;
  r["cores"] = cores;
  r["bound_gb_per_s"] = r["gb_per_s"].get<double>() * cores;
  return r;
}

}  // namespace lazycube::bench
