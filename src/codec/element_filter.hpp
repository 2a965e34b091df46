// Support for the numcodecs filters that work element by element (delta, fixedscaleoffset,
// quantize, astype): numeric type dispatch, numpy-like casts, and a base class that handles
// the byte order written in the filter's dtype strings.
#pragma once

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <nlohmann/json.hpp>

#include "codec_util.hpp"
#include "util/element_cast.hpp"

namespace lazycube::codec::detail {

using lazycube::detail::cast_value;
using lazycube::detail::load_element;
using lazycube::detail::store_element;

// The dtypes element filters compute with: bool, integers, float32/64 and datetime64/
// timedelta64 (int64). float16 is refused (a CodecError naming the filter): the kernels compute
// in C++ arithmetic, which lazycube::float16 does not have.
inline constexpr unsigned kFilterDTypes = lazycube::detail::dtype_set::kNumeric;

// Calls f(std::type_identity<T>{}) with the C++ type holding elements of `t`; a CodecError
// naming `codec` when `t` is not one of kFilterDTypes.
template <class F>
void with_numeric_type(const DataType& t, const std::string& codec, F&& f) {
  if (!lazycube::detail::visit_dtype<kFilterDTypes>(t, f)) fail(codec + ": unsupported dtype " + t.name());
}

// A filter mapping elements of `astype` (encoded side) to elements of `dtype` (decoded side),
// each in the byte order its configuration names.
class ElementFilter : public BytesToBytesCodec {
 public:
  ElementFilter(std::string name, ParsedNumpyDType dtype, ParsedNumpyDType astype,
                nlohmann::json config);

  std::string name() const override { return name_; }
  ByteView decode(ByteView in, Buffer& scratch, const DecodeLimits& limits) const override;
  Buffer encode(ByteView in) const override;
  std::optional<DataType> encoded_dtype(const DataType&) const override { return astype_.dtype; }
  nlohmann::json to_json() const override;

 protected:
  // Native-order kernels over n elements.
  virtual void decode_native(const std::byte* in, std::byte* out, std::size_t n) const = 0;
  virtual void encode_native(const std::byte* in, std::byte* out, std::size_t n) const = 0;

  std::string name_;
  ParsedNumpyDType dtype_, astype_;
  nlohmann::json config_;
};

// Checks that dtype is a type element filters can compute with; throws naming the key.
void require_numeric(const ConfigReader& cfg, std::string_view key, const ParsedNumpyDType& t);

}  // namespace lazycube::codec::detail
