#include <nlohmann/json.hpp>

#include "element_filter.hpp"

#include "codec_factories.hpp"
#include "util/byte_swap.hpp"

namespace lazycube::codec::detail {
namespace {

// Returns `in` when already native, else a byte-swapped copy in `tmp`.
ByteView native_view(ByteView in, const ParsedNumpyDType& t, Buffer& tmp) {
  if (t.order != ByteOrder::Big || t.dtype.swap_unit() <= 1) return in;
  tmp = Buffer::copy_of(in);
  swap_elements(tmp.span(), t.dtype);
  return tmp.view();
}

void to_stored_order(MutableByteView data, const ParsedNumpyDType& t) {
  if (t.order == ByteOrder::Big && t.dtype.swap_unit() > 1) swap_elements(data, t.dtype);
}

}  // namespace

ElementFilter::ElementFilter(std::string name, ParsedNumpyDType dtype, ParsedNumpyDType astype,
                             nlohmann::json config)
    : name_(std::move(name)), dtype_(std::move(dtype)), astype_(std::move(astype)),
      config_(std::move(config)) {}

ByteView ElementFilter::decode(ByteView in, Buffer& scratch, const DecodeLimits& limits) const {
  const std::size_t in_size = astype_.dtype.itemsize;
  if (in.size() % in_size != 0)
    fail(name_ + ": input of " + std::to_string(in.size()) + " bytes is not a whole number of " +
         astype_.dtype.name() + " elements");
  const std::size_t n = in.size() / in_size;
  const std::uint64_t out_bytes = std::uint64_t{n} * dtype_.dtype.itemsize;
  check_claim(name_, out_bytes, limits);
  Buffer tmp;
  const ByteView native = native_view(in, astype_, tmp);
  scratch.resize(out_bytes);
  decode_native(native.data(), scratch.data(), n);
  to_stored_order(scratch.span(), dtype_);
  return scratch.view();
}

Buffer ElementFilter::encode(ByteView in) const {
  const std::size_t in_size = dtype_.dtype.itemsize;
  if (in.size() % in_size != 0)
    fail(name_ + ": input of " + std::to_string(in.size()) + " bytes is not a whole number of " +
         dtype_.dtype.name() + " elements");
  const std::size_t n = in.size() / in_size;
  Buffer tmp;
  const ByteView native = native_view(in, dtype_, tmp);
  Buffer out(n * astype_.dtype.itemsize);
  encode_native(native.data(), out.data(), n);
  to_stored_order(out.span(), astype_);
  return out;
}

nlohmann::json ElementFilter::to_json() const {
  nlohmann::json c = config_;
  if (c.is_object()) c.erase("id");
  return {{"name", name_}, {"configuration", c}};
}

void require_numeric(const ConfigReader& cfg, std::string_view key, const ParsedNumpyDType& t) {
  if (!lazycube::detail::has_element_type<kFilterDTypes>(t.dtype)) cfg.bad(key, "dtype " + t.dtype.name() + " is not supported by this filter");
}

}  // namespace lazycube::codec::detail
