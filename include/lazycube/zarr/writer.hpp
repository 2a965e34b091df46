// Writing Zarr v2 and v3 stores: groups with attributes, arrays written chunk by chunk (or
// shard by shard), metadata written last. Before commit() a reader finds no array there; after
// a failed write commit() refuses, so no metadata ever points at missing data.
//
//   auto w = zarr::Writer::open("out.zarr", {}, {.mode = zarr::WriteMode::Create});
//   auto a = w.create_array("t2m", spec);       // spec checked before anything is written
//   a->write_unit({0, 0}, bytes);               // any thread, different units concurrently
//   w.commit();                                 // arrays, then groups, then consolidated
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "lazycube/chunk_grid.hpp"
#include "lazycube/dtype.hpp"
#include "lazycube/ndarray.hpp"
#include "lazycube/store/store.hpp"

namespace lazycube::zarr {

// What one array is to be.
struct ArraySpec {
  int zarr_format = 3;  // 2 or 3
  DataType dtype = DataType::float_(4);
  Shape shape;
  Shape chunk_shape;
  // Zarr v3 only: the shard shape (a whole multiple of chunk_shape per dim); empty: unsharded.
  Shape shard_shape;
  // Zarr v3 only: a rectilinear grid of units (the shards when sharded, else the chunks). Per
  // dim the edge lengths, each >= 1 and summing to at least the dim's extent (when sharded, each
  // but the last a whole multiple of chunk_shape); an empty entry, or no entries at all, keeps
  // the regular length (shard_shape, else chunk_shape) along that dim. Written as the
  // zarr-extensions `rectilinear` chunk grid, run-length encoded.
  std::vector<std::vector<std::uint64_t>> unit_edges;
  // Codec spec text (codec::parse_codec_spec): "zstd:3", "blosc:lz4:5:shuffle", "none", ...
  std::string codecs = "zstd:1";
  // The fill value as JSON, in the forms the Zarr metadata uses: a number, true/false, "NaN",
  // "Infinity", "-Infinity", "NaT", [re, im]. null: v2 writes null (no fill value; every chunk
  // is then written, empty or not), v3 writes the dtype's zero.
  nlohmann::json fill_value = nullptr;
  // v3 `dimension_names`; v2 the `_ARRAY_DIMENSIONS` attribute, as xarray writes. Empty: none.
  std::vector<std::string> dimension_names;
  nlohmann::json attributes = nlohmann::json::object();
};

// The grid of the spec's units (shards, or chunks) over its shape: regular, or the rectilinear
// one its unit_edges give (a sharded grid's last edge rounded up to whole chunks). The writer and
// ZarrOutput's plan both take it from here. Expects a spec create_array accepts.
ChunkGrid unit_grid_of(const ArraySpec& spec);

// What to do with what already lies at the destination.
enum class WriteMode {
  Create,     // refuse a destination that holds anything (StoreError naming it)
  Overwrite,  // remove what is there first (metadata keys before the rest)
  Resume,     // keep what is there: ArrayWriter::unit_verified() tells which units are good;
              // also the mode of writers sharing a destination (no cleanup before commit)
};

struct WriterOptions {
  WriteMode mode = WriteMode::Create;
  // false (zarr-python's default): units, and inner chunks of shards, that hold only the fill
  // value are not stored. Never skipped for a v2 array without a fill value.
  bool write_empty_chunks = false;
  // Consolidated metadata at commit: .zmetadata (v2), consolidated_metadata in the root
  // zarr.json (v3). Only when the root is a group.
  bool consolidated = true;
};

class Writer;

// Writes the units of one array: chunks, or shards when the array is sharded. Safe to call from
// several threads at once on different units.
class ArrayWriter {
 public:
  ~ArrayWriter();
  ArrayWriter(const ArrayWriter&) = delete;
  ArrayWriter& operator=(const ArrayWriter&) = delete;

  const std::string& path() const;  // node path under the writer's location
  const ArraySpec& spec() const;
  // The shape of one unit (the shard shape when sharded, else the chunk shape; on a rectilinear
  // grid the largest) and the grid of units over the array.
  const Shape& unit_shape() const;
  ChunkGrid unit_grid() const;
  const Shape& grid_shape() const;
  std::uint64_t num_units() const;
  // The unit at C-order position `i` of the grid.
  std::vector<std::uint64_t> unit_index(std::uint64_t i) const;
  // Where a unit lies in the array: its first element and its shape clipped at the array's end.
  std::vector<std::uint64_t> unit_origin(const std::vector<std::uint64_t>& index) const;
  Shape unit_extent(const std::vector<std::uint64_t>& index) const;
  // One element of the fill value, native-endian, as readers take it (zeros when a v2 array
  // has none; empty for variable-length types).
  const Buffer& fill_value_bytes() const;
  // The unit's store key (relative to the store root, as Store::get takes it).
  std::string unit_key(const std::vector<std::uint64_t>& index) const;

  // Encodes and stores one unit from native-endian C-order elements of the spec's dtype: either
  // the unit's extent (unit_extent) or the whole unit shape (the part past the array's end is
  // ignored). Edge units are padded with the fill value. Returns false when the unit held only
  // the fill value and was not stored (WriterOptions::write_empty_chunks). UsageError for a
  // bad index or size; StoreError naming the key when the store fails (the writer then
  // refuses to commit).
  bool write_unit(const std::vector<std::uint64_t>& index, ByteView data);
  bool write_unit(const std::vector<std::uint64_t>& index, const NDArray& data);
  // write_unit for a fixed-size unit that is never held whole: `fill(origin, extent, dest)`
  // writes the array's elements from `origin` (in the array) over `extent` into `dest`
  // (native-endian, C order). A sharded array's inner chunks are asked for one each, on the
  // process's CPU pool (so `fill` must be safe to call from several threads), encoded and
  // appended to the shard in order (none wholly past the array's end; `extent` stops at it):
  // a shard costs an inner chunk decoded per thread and the shard encoded; an unsharded unit
  // is asked for whole. `scratch` holds the encoded shard (or the unit):
  // passing the same one for many units reuses its memory.
  using ChunkFill =
      std::function<void(const std::vector<std::uint64_t>& origin, const Shape& extent, MutableByteView dest)>;
  bool write_unit_by_chunks(const std::vector<std::uint64_t>& index, const ChunkFill& fill, Buffer& scratch);
  // Writes `data` at `origin`: origin on a unit boundary in every dim, and data covering whole
  // units (or reaching the array's end). Units are encoded in parallel on the
  // process's CPU pool. UsageError naming the dim otherwise.
  void write_region(const std::vector<std::uint64_t>& origin, const NDArray& data);

  // Resume: true when the unit's key exists and decodes completely (shard index checksum, every
  // inner chunk); a missing, truncated or corrupt one is false. A unit skipped for holding
  // only the fill value is false too (writing it again stores nothing).
  bool unit_verified(const std::vector<std::uint64_t>& index) const;

  // The metadata documents commit() writes for this array (file name → JSON).
  std::vector<std::pair<std::string, nlohmann::json>> metadata_documents() const;

 private:
  friend class Writer;
  struct Impl;
  explicit ArrayWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class Writer {
 public:
  // Writes under `location` (its store must be writable). Create mode checks here that the
  // destination is empty (StoreError naming it otherwise). Overwrite removes what is there at
  // the first write (unit or commit) — after the specs were checked, so a bad spec leaves the
  // old store untouched. Resume touches nothing before commit, so that writers in several
  // processes can share a destination; its commit removes a killed run's half-done local puts.
  Writer(Location location, WriterOptions options = {});
  // Opens `url` with storage options as a destination (a missing local directory is created).
  static Writer open(std::string_view url, const StoreOptions& storage_options = {},
                     WriterOptions options = {});
  ~Writer();
  Writer(Writer&&) noexcept;
  Writer& operator=(Writer&&) noexcept;

  const Location& location() const;
  const WriterOptions& options() const;

  // A group at `path` ("" for the root, "a/b" nested) with attributes. Parent groups of every
  // node are created at commit when not declared. Groups take the arrays' zarr_format (every
  // node must have the same); `zarr_format` sets it for a writer of groups only (default 3).
  void create_group(const std::string& path, const nlohmann::json& attributes = nlohmann::json::object(),
                    std::optional<int> zarr_format = std::nullopt);
  // Checks the spec (codecs, shapes, shard multiple, fill value, dimension names) and returns
  // the array's writer; nothing is written. CodecError / MetadataError / UsageError naming
  // what is wrong; UsageError for a path already declared.
  std::shared_ptr<ArrayWriter> create_array(const std::string& path, const ArraySpec& spec);

  // Does now what the first write would do first: Overwrite removes what is there (nothing in
  // Create or Resume mode — Resume cleans a killed run's temporary files at commit, when no
  // unit write runs; once per writer). Writers in several processes sharing a destination open
  // it in Resume mode, after one of them prepared it.
  void prepare();

  // Writes the metadata: every array's, then the groups' (deepest first, the root last), then
  // the consolidated metadata. Call once every unit is written. StoreError when an earlier
  // unit write failed (nothing is written then) or when the store fails.
  void commit();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lazycube::zarr
