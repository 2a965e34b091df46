// Writing a Dataset as a Zarr v2/v3 store: `lazycube convert`, lazycube.to_zarr and
// lazycube.convert (also split over Dask workers) all go through ZarrOutput. Values are copied
// as stored (stored dtype, CF attributes kept), so the output decodes exactly as the source did.
//
// The output is cut into regions — one shard (Zarr v3 sharded) or one chunk per variable — in
// a fixed order that depends only on the dataset and the options: the same plan is computed by a
// coordinator and by every worker, which is how a region is named across processes. Metadata is
// written last (commit), so a reader never takes a half-written store for a complete one.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lazycube/dataset/dataset.hpp"
#include "lazycube/store/store.hpp"

namespace lazycube {

struct ZarrOutputOptions {
  int zarr_format = 3;  // 2 or 3
  // Output chunk length per dim; dims not listed keep the source's chunk length (whole dims
  // for variables without chunking).
  std::map<std::string, std::uint64_t> chunks;
  // Zarr v3 only: shard length per dim, a whole multiple of the chunk length; dims not listed
  // hold one chunk per shard. Empty: no sharding.
  std::map<std::string, std::uint64_t> shards;
  // Zarr v3 only: a rectilinear chunk grid, per dim the chunk edge lengths (summing to the dim's
  // extent or more) in place of one length: the chunks when unsharded, the shards when `shards`
  // or `shard_edges` shard the output (whose inner chunks stay regular: then each edge but the
  // last must be a multiple of the chunk length). A dim is given by one of chunks/chunk_edges
  // and one of shards/shard_edges. Without options, a source whose own grid is rectilinear keeps
  // its chunk boundaries (unsharded v3 output).
  std::map<std::string, std::vector<std::uint64_t>> chunk_edges;
  std::map<std::string, std::vector<std::uint64_t>> shard_edges;
  // Compressor as text: "zstd:3", "blosc:lz4:5:shuffle", "gzip:6", "zlib:5", "lz4", "none".
  // Empty: zstd:3 (v3) or blosc:lz4:5:shuffle (v2, zarr-python's default).
  std::string codec;
  StoreOptions storage_options;  // of the destination
  bool overwrite = false;        // replace an existing node at the destination
  bool resume = false;           // keep regions already written and verified
  std::size_t threads = 0;       // regions in flight (0: the library's thread count)
  // Decoded source chunks kept while regions are cut from them (source chunks that straddle
  // output regions are read once, not once per region).
  std::uint64_t cache_bytes = std::uint64_t{512} << 20;
};

// The compressor an output gets when none is named: zstd:3 (v3), blosc:lz4:5:shuffle (v2,
// zarr-python's default). Every writer (convert, to_zarr, PredictionWriter) takes it from here.
std::string default_zarr_codec(int zarr_format);

// Bytes done and total (over the regions this call writes), called from one thread at a time.
using OutputProgress = std::function<void(std::uint64_t done, std::uint64_t total)>;

class ZarrOutput {
 public:
  // Plans the output of `ds` at `url`; validates every option (dims, chunk and shard lengths,
  // codec, format) and throws UsageError/CodecError before anything is written.
  ZarrOutput(Dataset ds, std::string url, ZarrOutputOptions options);
  ~ZarrOutput();
  ZarrOutput(ZarrOutput&&) noexcept;

  // Regions in plan order, and the bytes (decoded, as stored) each holds.
  std::uint64_t region_count() const;
  std::uint64_t region_bytes(std::uint64_t region) const;
  // "VARIABLE[i,j,k]" of a region, for messages.
  std::string describe_region(std::uint64_t region) const;

  // Checks the destination: refuses an existing node (UsageError naming it) unless overwrite
  // (removes it) or resume (keeps it). Call once, before any region is written.
  void prepare();
  // Writes these regions (any order, several threads); with resume, a region already stored
  // and verified is skipped. Returns how many were written (not skipped).
  std::uint64_t write_regions(const std::vector<std::uint64_t>& regions, const OutputProgress& progress = {});
  // Writes the metadata of every array and group, then the consolidated metadata.
  void commit();
  // prepare + every region + commit.
  void run(const OutputProgress& progress = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lazycube
