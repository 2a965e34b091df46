// RecordFieldArray: one field of an array of records (a Zarr v3 `struct`, a NumPy structured
// dtype) read as an array of its own: same shape, chunks, dimensions and attributes, the field's
// dtype. Reads go through the record array (its chunk cache and fetch-ahead included) and copy
// the field out of each record.
#pragma once

#include <string>
#include <vector>

#include "lazycube/array.hpp"

namespace lazycube {

// The field `path` of `record`: names joined with '.' for nested records ("point.x"). Nullptr
// when `record` has no such field (or is not a record); a field that is itself a record gives an
// array of those records.
const RecordField* find_record_field(const DataType& record, const std::string& path, std::size_t* offset = nullptr);

// The leaf fields of `record`, depth first, as paths ("id", "point.x", "point.y").
std::vector<std::string> record_field_paths(const DataType& record);

class RecordFieldArray final : public Array {
 public:
  // UsageError naming the array and the field when `records` has no field `path`.
  RecordFieldArray(ArrayPtr records, const std::string& path);

  const ArrayPtr& records() const { return records_; }
  const std::string& field() const { return field_; }

  std::string path() const override { return records_->path() + "." + field_; }
  std::string describe() const override { return records_->describe() + " field '" + field_ + "'"; }
  const Shape& shape() const override { return records_->shape(); }
  const DataType& dtype() const override { return dtype_; }
  const Shape& chunk_shape() const override { return records_->chunk_shape(); }
  const Shape& read_chunk_shape() const override { return records_->read_chunk_shape(); }
  std::vector<std::uint64_t> chunk_starts(std::size_t dim) const override { return records_->chunk_starts(dim); }
  const std::vector<std::string>& dimension_names() const override { return records_->dimension_names(); }
  const nlohmann::json& attrs() const override { return records_->attrs(); }
  // The field's bytes of the records' fill value.
  const Buffer& fill_value_bytes() const override { return fill_; }
  const std::string& fill_value_string() const override { return records_->fill_value_string(); }
  bool has_fill_value() const override { return records_->has_fill_value(); }
  nlohmann::json codecs_json() const override;

  using Array::read;
  void read(const ArraySelection& selection, MutableByteView dest) const override;
  void read_converted(const ArraySelection& selection, MutableByteView dest,
                      const ElementConversion& conversion) const override;
  void read_strings(const ArraySelection& selection, std::vector<std::string>& dest) const override;
  void read_cached(std::span<const ArraySelection> selections, std::span<const MutableByteView> dests,
                   ChunkCache& cache) const override;
  std::vector<std::vector<std::uint64_t>> read_units(std::span<const ArraySelection> selections) const override {
    return records_->read_units(selections);
  }
  std::vector<std::shared_ptr<const Buffer>> load_units(const std::vector<std::vector<std::uint64_t>>& units,
                                                        ChunkCache& cache,
                                                        const std::atomic<bool>* cancel = nullptr) const override {
    return records_->load_units(units, cache, cancel);
  }
  std::vector<std::shared_ptr<const Buffer>> pin_cached(const std::vector<std::vector<std::uint64_t>>& units,
                                                        ChunkCache& cache,
                                                        std::vector<std::vector<std::uint64_t>>& missing) const override {
    return records_->pin_cached(units, cache, missing);
  }
  std::string cache_id() const override { return records_->cache_id(); }
  std::string data_version() const override { return records_->data_version(); }

 private:
  ArrayPtr records_;
  std::string field_;
  DataType dtype_;
  std::size_t offset_ = 0;
  Buffer fill_;
};

}  // namespace lazycube
