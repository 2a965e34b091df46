// CF character arrays (xarray's CharacterArrayCoder, concat_characters=True): an 'S1' array whose
// last dim spells strings is read as an 'S<n>' array without that dim. In C order the bytes are
// the same, so reads pass through with the string dim taken whole.
#pragma once

#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "lazycube/array.hpp"

namespace lazycube {

class CharArray final : public Array {
 public:
  // `chars`: an S1 array of at least one dim, named `dims`; its last dim becomes each element's
  // characters.
  CharArray(ArrayPtr chars, std::vector<std::string> dims);

  std::string path() const override { return chars_->path(); }
  std::string describe() const override { return chars_->describe(); }
  const Shape& shape() const override { return shape_; }
  const DataType& dtype() const override { return dtype_; }
  const Shape& chunk_shape() const override { return chunks_; }
  const std::vector<std::string>& dimension_names() const override { return dims_; }
  const nlohmann::json& attrs() const override { return chars_->attrs(); }
  const Buffer& fill_value_bytes() const override { return fill_; }
  const std::string& fill_value_string() const override { return chars_->fill_value_string(); }
  bool has_fill_value() const override { return chars_->has_fill_value(); }
  nlohmann::json codecs_json() const override { return chars_->codecs_json(); }
  void read(const ArraySelection& selection, MutableByteView dest) const override;
  void read_strings(const ArraySelection& selection, std::vector<std::string>& dest) const override;
  std::string cache_id() const override { return chars_->cache_id() + "#chars"; }
  std::string data_version() const override { return chars_->data_version(); }

 private:
  ArrayPtr chars_;
  DataType dtype_;
  Shape shape_, chunks_;
  std::vector<std::string> dims_;
  Buffer fill_;
  ArraySelection with_chars(const ArraySelection& selection) const;
};

}  // namespace lazycube
