// ZarrOutput: a Dataset copied as stored into a Zarr store through zarr::Writer, one region (a
// shard, or a chunk when unsharded) at a time, with a bounded number of regions in flight.
#include "lazycube/dataset/zarr_output.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <nlohmann/json.hpp>

#include "lazycube/cache/chunk_cache.hpp"
#include "lazycube/error.hpp"
#include "util/thread_pool.hpp"
#include "lazycube/zarr/writer.hpp"

namespace lazycube {

namespace {

// Regions in flight at once hold this much decoded data at most (at least one region).
constexpr std::uint64_t kInFlightBytes = std::uint64_t{1} << 30;

// Attributes of a copy as stored: the array's own (less what the format's metadata carries) and
// the _FillValue the source's decoding used (a Zarr v2 fill value acts as one: kept explicit so
// a v3 copy masks the same values).
nlohmann::json stored_attrs(const Variable& v) {
  nlohmann::json attrs = v.array()->attrs().is_object() ? v.array()->attrs() : nlohmann::json::object();
  attrs.erase("_ARRAY_DIMENSIONS");
  if (!attrs.contains("_FillValue")) {
    if (auto it = v.encoding().find("_FillValue"); it != v.encoding().end() && !it->is_null()) attrs["_FillValue"] = *it;
  }
  return attrs;
}

}  // namespace

std::string default_zarr_codec(int zarr_format) { return zarr_format == 2 ? "blosc:lz4:5:shuffle" : "zstd:3"; }

struct ZarrOutput::Impl {
  Dataset ds;
  std::string url;
  ZarrOutputOptions options;

  struct Planned {
    Variable stored;  // the selection, read as stored
    zarr::ArraySpec spec;
    std::uint64_t first_region = 0;
    std::uint64_t regions = 0;
    ChunkGrid units;  // of regions (shards, or chunks)
    Shape grid;
  };
  std::vector<Planned> vars;
  std::uint64_t total_regions = 0;
  bool sharded = false;  // the regions are shards

  // Created by prepare() (or lazily by a worker that only writes regions).
  std::mutex writer_mutex;
  std::optional<zarr::Writer> writer;
  std::vector<std::shared_ptr<zarr::ArrayWriter>> arrays;

  void plan();
  zarr::Writer& open_writer(zarr::WriteMode mode);
  std::pair<std::size_t, std::uint64_t> locate(std::uint64_t region) const;
  std::vector<std::uint64_t> unit_index(const Planned& p, std::uint64_t i) const;
};

void ZarrOutput::Impl::plan() {
  const int format = options.zarr_format;
  if (format != 2 && format != 3) throw UsageError("Zarr format must be 2 or 3, not " + std::to_string(format));
  if (format == 2 && (!options.shards.empty() || !options.shard_edges.empty()))
    throw UsageError("shards need Zarr v3 (the output format is 2)");
  if (format == 2 && !options.chunk_edges.empty())
    throw UsageError("chunk edge lists (a rectilinear chunk grid) need Zarr v3 (the output format is 2)");
  sharded = !options.shards.empty() || !options.shard_edges.empty();
  if (sharded && !options.chunk_edges.empty())
    throw UsageError("chunks: edge lists (" + options.chunk_edges.begin()->first +
                     ") with shards: a sharded output's inner chunks are regular; give the shards as edge lists instead");
  for (const auto& [dim, edges] : options.chunk_edges)
    if (options.chunks.count(dim)) throw UsageError("chunks: " + dim + " is given both as a length and as edge lengths");
  for (const auto& [dim, edges] : options.shard_edges)
    if (options.shards.count(dim)) throw UsageError("shards: " + dim + " is given both as a length and as edge lengths");
  std::set<std::string> dims;
  for (const auto& [dim, n] : ds.dims()) dims.insert(dim);
  for (const auto* what : {&options.chunks, &options.shards}) {
    const std::string name = what == &options.chunks ? "chunks" : "shards";
    for (const auto& [dim, n] : *what) {
      if (dims.count(dim) == 0) {
        std::string list;
        for (const auto& d : ds.dims()) list += (list.empty() ? "" : ", ") + d.first;
        throw UsageError(name + ": the dataset has no dim '" + dim + "' (dims: " + list + ")");
      }
      if (n == 0) throw UsageError(name + ": " + dim + " must be at least 1");
    }
  }
  for (const auto* what : {&options.chunk_edges, &options.shard_edges}) {
    const std::string name = what == &options.chunk_edges ? "chunks" : "shards";
    for (const auto& [dim, edges] : *what) {
      if (dims.count(dim) == 0) throw UsageError(name + ": the dataset has no dim '" + dim + "'");
      std::uint64_t sum = 0;
      for (const auto e : edges) {
        if (e == 0) throw UsageError(name + ": " + dim + " has an edge length 0 (each must be at least 1)");
        sum += e;
      }
      for (const auto& [d, n] : ds.dims())
        if (d == dim && sum < n)
          throw UsageError(name + ": the edge lengths of " + dim + " sum to " + std::to_string(sum) + ", less than its " +
                           std::to_string(n) + " elements");
    }
  }
  const std::string codec = options.codec.empty() ? default_zarr_codec(format) : options.codec;
  for (const auto& name : ds.variable_names()) {
    const Variable& v = ds.variable(name);
    Planned p;
    p.stored = v.as_stored();
    if (p.stored.dtype().is_variable_length())
      throw UsageError("variable '" + name + "' has variable-length dtype " + p.stored.dtype().numpy_str() +
                       ": the Zarr writer stores fixed-size types only");
    zarr::ArraySpec& s = p.spec;
    s.zarr_format = format;
    s.dtype = p.stored.dtype();
    s.shape = p.stored.shape();
    const Shape source_chunks = p.stored.chunks();
    for (std::size_t d = 0; d < s.shape.size(); ++d) {
      const std::string& dim = p.stored.dims()[d];
      const std::uint64_t n = std::max<std::uint64_t>(1, s.shape[d]);
      std::uint64_t chunk = d < source_chunks.size() ? source_chunks[d] : n;
      if (auto it = options.chunks.find(dim); it != options.chunks.end()) chunk = it->second;
      chunk = std::clamp<std::uint64_t>(chunk, 1, n);
      s.chunk_shape.push_back(chunk);
    }
    if (sharded) {
      for (std::size_t d = 0; d < s.shape.size(); ++d) {
        const std::string& dim = p.stored.dims()[d];
        const std::uint64_t chunk = s.chunk_shape[d];
        std::uint64_t shard = chunk;
        if (auto it = options.shards.find(dim); it != options.shards.end()) {
          shard = it->second;
          if (shard % chunk != 0)
            throw UsageError("shards: " + dim + "=" + std::to_string(shard) + " is not a multiple of the chunk length " +
                             std::to_string(chunk) + " of variable '" + name + "'");
        }
        // No bigger than the whole chunks covering the dim.
        const std::uint64_t whole = (std::max<std::uint64_t>(1, s.shape[d]) + chunk - 1) / chunk * chunk;
        s.shard_shape.push_back(std::min(shard, whole));
      }
    }
    // Rectilinear units: the options' edge lists, else (unsharded v3 output) the source's own
    // boundaries where its grid is rectilinear.
    const bool keep_source = format == 3 && !sharded && !p.stored.array()->chunk_grid().is_regular();
    std::vector<std::vector<std::uint64_t>> edges(s.shape.size());
    bool rectilinear = false;
    for (std::size_t d = 0; d < s.shape.size(); ++d) {
      const std::string& dim = p.stored.dims()[d];
      const auto& lists = sharded ? options.shard_edges : options.chunk_edges;
      if (auto it = lists.find(dim); it != lists.end()) {
        edges[d] = it->second;
      } else if (keep_source && !options.chunks.count(dim) && s.shape[d] > 0) {
        const std::vector<std::uint64_t> starts = p.stored.chunk_starts(d);
        for (std::size_t c = 0; c < starts.size(); ++c)
          edges[d].push_back((c + 1 < starts.size() ? starts[c + 1] : s.shape[d]) - starts[c]);
        // One length (the last may be shorter): regular after all.
        bool regular = true;
        for (std::size_t c = 1; c < edges[d].size(); ++c)
          regular = regular && (edges[d][c] == edges[d][0] || (c + 1 == edges[d].size() && edges[d][c] < edges[d][0]));
        if (regular) edges[d].clear();
      }
      if (edges[d].empty()) continue;
      rectilinear = true;
      const std::uint64_t largest = *std::max_element(edges[d].begin(), edges[d].end());
      if (sharded) s.shard_shape[d] = s.chunk_shape[d];  // the edges say where shards end
      else s.chunk_shape[d] = std::min(largest, std::max<std::uint64_t>(1, s.shape[d]));
    }
    if (rectilinear) s.unit_edges = std::move(edges);
    s.codecs = codec;
    s.dimension_names = p.stored.dims();
    nlohmann::json attrs = stored_attrs(v);
    if (auto it = attrs.find("_FillValue"); it != attrs.end()) {
      s.fill_value = *it;
      if (format == 2) attrs.erase(it);  // xarray's Zarr v2 layout: the array's fill value is the _FillValue
    }
    // A 0-d variable has no dimension names to write; xarray still wants _ARRAY_DIMENSIONS in v2.
    if (format == 2 && s.shape.empty()) attrs["_ARRAY_DIMENSIONS"] = nlohmann::json::array();
    s.attributes = std::move(attrs);
    p.units = zarr::unit_grid_of(s);
    p.regions = 1;
    for (std::size_t d = 0; d < s.shape.size(); ++d) {
      p.grid.push_back(p.units.count(d));
      p.regions *= p.grid.back();
    }
    p.first_region = total_regions;
    total_regions += p.regions;
    vars.push_back(std::move(p));
  }
}

zarr::Writer& ZarrOutput::Impl::open_writer(zarr::WriteMode mode) {
  std::lock_guard lock(writer_mutex);
  if (writer) return *writer;
  zarr::WriterOptions wo;
  wo.mode = mode;
  zarr::Writer w = zarr::Writer::open(url, options.storage_options, wo);
  w.create_group("", ds.attrs(), options.zarr_format);
  std::vector<std::shared_ptr<zarr::ArrayWriter>> made;
  for (const auto& p : vars) made.push_back(w.create_array(p.stored.name(), p.spec));
  writer.emplace(std::move(w));
  arrays = std::move(made);
  return *writer;
}

std::pair<std::size_t, std::uint64_t> ZarrOutput::Impl::locate(std::uint64_t region) const {
  if (region >= total_regions)
    throw UsageError("region " + std::to_string(region) + " out of range (the plan has " +
                     std::to_string(total_regions) + ")");
  for (std::size_t v = 0; v < vars.size(); ++v)
    if (region < vars[v].first_region + vars[v].regions) return {v, region - vars[v].first_region};
  throw UsageError("region " + std::to_string(region) + " out of range");
}

std::vector<std::uint64_t> ZarrOutput::Impl::unit_index(const Planned& p, std::uint64_t i) const {
  std::vector<std::uint64_t> index(p.grid.size());
  for (std::size_t d = p.grid.size(); d-- > 0;) {
    index[d] = i % p.grid[d];
    i /= p.grid[d];
  }
  return index;
}

ZarrOutput::ZarrOutput(Dataset ds, std::string url, ZarrOutputOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->ds = std::move(ds);
  impl_->url = std::move(url);
  impl_->options = std::move(options);
  impl_->plan();
  // Every spec checked (codecs, fill values, shard multiples) before the destination is even
  // opened: the same declarations on a writer over memory.
  zarr::Writer check(Location{make_memory_store(), ""}, {});
  check.create_group("", impl_->ds.attrs(), impl_->options.zarr_format);
  for (const auto& p : impl_->vars) check.create_array(p.stored.name(), p.spec);
}

ZarrOutput::~ZarrOutput() = default;
ZarrOutput::ZarrOutput(ZarrOutput&&) noexcept = default;

std::uint64_t ZarrOutput::region_count() const { return impl_->total_regions; }

std::uint64_t ZarrOutput::region_bytes(std::uint64_t region) const {
  const auto [v, i] = impl_->locate(region);
  const auto& p = impl_->vars[v];
  const auto index = impl_->unit_index(p, i);
  std::uint64_t n = p.spec.dtype.itemsize;
  for (std::size_t d = 0; d < index.size(); ++d) n *= p.units.extent(d, index[d]);
  return n;
}

std::string ZarrOutput::describe_region(std::uint64_t region) const {
  const auto [v, i] = impl_->locate(region);
  std::string s = impl_->vars[v].stored.name() + "[";
  const auto index = impl_->unit_index(impl_->vars[v], i);
  for (std::size_t d = 0; d < index.size(); ++d) s += (d ? "," : "") + std::to_string(index[d]);
  return s + "]";
}

void ZarrOutput::prepare() {
  const auto mode = impl_->options.overwrite ? zarr::WriteMode::Overwrite
                    : impl_->options.resume  ? zarr::WriteMode::Resume
                                             : zarr::WriteMode::Create;
  impl_->open_writer(mode);
}

std::uint64_t ZarrOutput::write_regions(const std::vector<std::uint64_t>& regions, const OutputProgress& progress) {
  for (const auto r : regions) impl_->locate(r);  // range errors before any write
  // A worker that did not prepare() writes into what the coordinator prepared.
  impl_->open_writer(zarr::WriteMode::Resume);
  std::uint64_t total = 0, largest = 1;
  for (const auto r : regions) {
    total += region_bytes(r);
    largest = std::max(largest, region_bytes(r));
  }
  ChunkCache cache(impl_->options.cache_bytes);
  const std::size_t pool = impl_->options.threads ? impl_->options.threads : ThreadPool::global().size() + 1;
  // A sharded output writes one shard at a time, its inner chunks on every core
  // (ShardingCodec::encode_filled): shards in flight at once would read different source chunks
  // (another time block) each many times over, one pass per inner chunk, and the cache, holding
  // the source chunks of one shard's window, would evict what a lagging shard still reads.
  const std::size_t in_flight =
      impl_->sharded ? 1 : std::max<std::size_t>(1, std::min<std::uint64_t>(pool, kInFlightBytes / largest));
  std::atomic<std::uint64_t> next{0}, written{0}, done_bytes{0};
  std::mutex progress_mutex;
  auto worker = [&](std::size_t) {
    // One region buffer per worker, reused: a fresh one per region would be mapped anew each
    // time (Buffer maps blocks of 1 MiB and more directly), and the kernel would zero its pages
    // again on first touch. It holds a chunk decoded, or a shard encoded: a shard is read one
    // inner chunk at a time (write_unit_by_chunks), never whole.
    Buffer data;
    for (;;) {
      const std::uint64_t k = next++;
      if (k >= regions.size()) return;
      const auto [v, i] = impl_->locate(regions[k]);
      const auto& p = impl_->vars[v];
      const auto& array = impl_->arrays[v];
      const auto index = impl_->unit_index(p, i);
      const std::uint64_t bytes = region_bytes(regions[k]);
      if (!(impl_->options.resume && array->unit_verified(index))) {
        const auto read = [&](const std::vector<std::uint64_t>& origin, const Shape& extent, MutableByteView dest) {
          ArraySelection window;
          for (std::size_t d = 0; d < origin.size(); ++d) window.push_back({origin[d], extent[d], 1});
          p.stored.read_windows_into(std::span<const ArraySelection>(&window, 1),
                                     std::span<const MutableByteView>(&dest, 1), &cache);
        };
        array->write_unit_by_chunks(index, read, data);
        ++written;
      }
      if (progress) {
        // Counted under the lock that orders the reports: counted outside it, two workers could
        // report their totals in the wrong order (a progress bar going back; seen under ASan).
        std::lock_guard lock(progress_mutex);
        progress(done_bytes += bytes, total);
      } else {
        done_bytes += bytes;
      }
    }
  };
  parallel_for(in_flight, worker);
  return written;
}

void ZarrOutput::commit() {
  impl_->open_writer(zarr::WriteMode::Resume).commit();
}

void ZarrOutput::run(const OutputProgress& progress) {
  prepare();
  std::vector<std::uint64_t> all(region_count());
  for (std::uint64_t r = 0; r < all.size(); ++r) all[r] = r;
  write_regions(all, progress);
  commit();
}

}  // namespace lazycube
