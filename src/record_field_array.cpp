#include "lazycube/record_field_array.hpp"

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "lazycube/error.hpp"

namespace lazycube {

namespace {

// Record -> field: the field's bytes of each record.
class FieldExtraction final : public ElementConversion {
 public:
  FieldExtraction(const DataType& record, const DataType& field, std::size_t offset)
      : record_(record), field_(field), offset_(offset) {}
  const DataType& input_dtype() const override { return record_; }
  const DataType& output_dtype() const override { return field_; }
  void convert(const std::byte* src, std::uint64_t count, std::byte* dst) const override {
    const std::size_t in = record_.itemsize, out = field_.itemsize;
    for (std::uint64_t i = 0; i < count; ++i) std::memcpy(dst + i * out, src + i * in + offset_, out);
  }

 private:
  const DataType& record_;
  const DataType& field_;
  std::size_t offset_;
};

// Record -> field -> `then`'s output (a CF decoding of the field), a block of records at a time.
class FieldThenConversion final : public ElementConversion {
 public:
  FieldThenConversion(const FieldExtraction& field, const ElementConversion& then) : field_(field), then_(then) {}
  const DataType& input_dtype() const override { return field_.input_dtype(); }
  const DataType& output_dtype() const override { return then_.output_dtype(); }
  void convert(const std::byte* src, std::uint64_t count, std::byte* dst) const override {
    constexpr std::uint64_t kBlock = 4096;
    const std::size_t in = field_.input_dtype().itemsize, mid = field_.output_dtype().itemsize,
                      out = then_.output_dtype().itemsize;
    Buffer scratch(static_cast<std::size_t>(std::min(count, kBlock)) * mid);
    for (std::uint64_t at = 0; at < count; at += kBlock) {
      const std::uint64_t n = std::min(kBlock, count - at);
      field_.convert(src + at * in, n, scratch.data());
      then_.convert(scratch.data(), n, dst + at * out);
    }
  }

 private:
  const FieldExtraction& field_;
  const ElementConversion& then_;
};

std::uint64_t element_count(const ArraySelection& selection) {
  std::uint64_t n = 1;
  for (const auto& r : selection) n *= r.count;
  return n;
}

void add_leaf_paths(const DataType& t, const std::string& prefix, std::vector<std::string>& out) {
  for (const RecordField& f : *t.fields) {
    const std::string path = prefix.empty() ? f.name : prefix + "." + f.name;
    if (f.dtype.fields) add_leaf_paths(f.dtype, path, out);
    else out.push_back(path);
  }
}

}  // namespace

const RecordField* find_record_field(const DataType& record, const std::string& path, std::size_t* offset) {
  const DataType* t = &record;
  const RecordField* found = nullptr;
  std::size_t at = 0, start = 0;
  while (true) {
    if (!t->fields) return nullptr;
    // The longest name first: a field name may itself hold a '.'.
    const RecordField* match = nullptr;
    for (const RecordField& f : *t->fields) {
      const std::string_view rest = std::string_view(path).substr(start);
      if (rest.substr(0, f.name.size()) == f.name && (rest.size() == f.name.size() || rest[f.name.size()] == '.') &&
          (match == nullptr || f.name.size() > match->name.size()))
        match = &f;
    }
    if (match == nullptr) return nullptr;
    at += match->offset;
    start += match->name.size();
    found = match;
    if (start == path.size()) break;
    ++start;  // the '.'
    t = &match->dtype;
  }
  if (offset != nullptr) *offset = at;
  return found;
}

std::vector<std::string> record_field_paths(const DataType& record) {
  std::vector<std::string> out;
  if (record.fields) add_leaf_paths(record, "", out);
  return out;
}

RecordFieldArray::RecordFieldArray(ArrayPtr records, const std::string& path)
    : records_(std::move(records)), field_(path) {
  if (!records_) throw UsageError("RecordFieldArray: the record array is null");
  const RecordField* f = find_record_field(records_->dtype(), path, &offset_);
  if (f == nullptr) {
    std::string known;
    for (const auto& p : record_field_paths(records_->dtype())) known += (known.empty() ? "" : ", ") + p;
    throw UsageError(records_->describe() + " (" + records_->dtype().name() + ") has no field '" + path + "'" +
                     (known.empty() ? std::string() : "; its fields: " + known));
  }
  dtype_ = f->dtype;
  fill_ = Buffer(dtype_.itemsize);
  const Buffer& all = records_->fill_value_bytes();
  if (all.size() >= offset_ + dtype_.itemsize) std::memcpy(fill_.data(), all.data() + offset_, dtype_.itemsize);
  else if (dtype_.itemsize != 0) std::memset(fill_.data(), 0, dtype_.itemsize);
}

nlohmann::json RecordFieldArray::codecs_json() const { return records_->codecs_json(); }

void RecordFieldArray::read(const ArraySelection& selection, MutableByteView dest) const {
  records_->read_converted(selection, dest, FieldExtraction(records_->dtype(), dtype_, offset_));
}

void RecordFieldArray::read_converted(const ArraySelection& selection, MutableByteView dest,
                                      const ElementConversion& conversion) const {
  converted_count(selection, dest, conversion);
  const FieldExtraction field(records_->dtype(), dtype_, offset_);
  records_->read_converted(selection, dest, FieldThenConversion(field, conversion));
}

void RecordFieldArray::read_strings(const ArraySelection&, std::vector<std::string>&) const {
  throw UsageError(describe() + " has the fixed-size type " + dtype_.name() + ", not strings");
}

void RecordFieldArray::read_cached(std::span<const ArraySelection> selections, std::span<const MutableByteView> dests,
                                   ChunkCache& cache) const {
  if (selections.size() != dests.size()) throw UsageError(describe() + ": read_cached needs one destination per selection");
  std::vector<Buffer> records;
  std::vector<MutableByteView> views;
  records.reserve(selections.size());
  for (const auto& s : selections) {
    records.emplace_back(static_cast<std::size_t>(element_count(s) * records_->dtype().itemsize));
    views.push_back(records.back().span());
  }
  records_->read_cached(selections, views, cache);
  const FieldExtraction field(records_->dtype(), dtype_, offset_);
  for (std::size_t i = 0; i < selections.size(); ++i) {
    const std::uint64_t n = element_count(selections[i]);
    if (dests[i].size() != n * dtype_.itemsize)
      throw UsageError(describe() + ": destination holds " + std::to_string(dests[i].size()) + " bytes, expected " +
                       std::to_string(n * dtype_.itemsize));
    field.convert(records[i].data(), n, dests[i].data());
  }
}

}  // namespace lazycube
