#include "char_array.hpp"

#include <cstring>

#include "lazycube/error.hpp"

namespace lazycube {

CharArray::CharArray(ArrayPtr chars, std::vector<std::string> dims) : chars_(std::move(chars)) {
  const Shape& full = chars_->shape();
  if (full.empty() || chars_->dtype().kind != DTypeKind::Bytes || chars_->dtype().itemsize != 1)
    throw UsageError("a character array is an S1 array with a string dim: " + chars_->describe());
  const std::uint64_t n = full.back();
  dtype_ = DataType::bytes(n == 0 ? 1 : n);  // numpy: S0 is not a type, an empty string dim reads as S1
  shape_.assign(full.begin(), full.end() - 1);
  chunks_.assign(chars_->chunk_shape().begin(), chars_->chunk_shape().end() - 1);
  if (dims.size() == full.size()) dims_.assign(dims.begin(), dims.end() - 1);
  // The fill value of one character repeated (numpy: S1 b'x' widened is b'x' then NULs).
  fill_.resize(dtype_.itemsize);
  std::memset(fill_.data(), 0, fill_.size());
  if (chars_->fill_value_bytes().size() == 1) fill_.data()[0] = chars_->fill_value_bytes().data()[0];
}

ArraySelection CharArray::with_chars(const ArraySelection& selection) const {
  if (selection.size() != shape_.size())
    throw UsageError("selection of " + std::to_string(selection.size()) + " dims for the " +
                     std::to_string(shape_.size()) + "-dim character array " + describe());
  ArraySelection out = selection;
  out.push_back(IndexRange::all(chars_->shape().back()));
  return out;
}

void CharArray::read(const ArraySelection& selection, MutableByteView dest) const {
  if (chars_->shape().back() == 0) {  // no characters: every string is empty
    std::memset(dest.data(), 0, dest.size());
    return;
  }
  chars_->read(with_chars(selection), dest);
}

void CharArray::read_strings(const ArraySelection&, std::vector<std::string>&) const {
  throw UsageError("read_strings: " + describe() + " holds fixed-length strings");
}

}  // namespace lazycube
