// numcodecs Quantize: encoding rounds to a power-of-two grid fine enough for `digits` decimal
// digits; decoding is only the cast from astype back to dtype (both floating point).
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "element_filter.hpp"

namespace lazycube::codec::detail {
namespace {

class QuantizeFilter final : public ElementFilter {
 public:
  QuantizeFilter(std::string name, ParsedNumpyDType dtype, ParsedNumpyDType astype,
                 nlohmann::json config, std::int64_t digits)
      : ElementFilter(std::move(name), std::move(dtype), std::move(astype), std::move(config)) {
    // Same steps as numcodecs: exponent of 10^-digits, then enough bits for it.
    const double precision = std::pow(10.0, -static_cast<double>(digits));
    double exp = std::log10(precision);
    exp = exp < 0 ? std::floor(exp) : std::ceil(exp);
    const double bits = std::ceil(std::log2(std::pow(10.0, -exp)));
    scale_ = std::pow(2.0, bits);
  }

 protected:
  void decode_native(const std::byte* in, std::byte* out, std::size_t n) const override {
    convert(astype_.dtype, in, dtype_.dtype, out, n);
  }

  void encode_native(const std::byte* in, std::byte* out, std::size_t n) const override {
    with_numeric_type(dtype_.dtype, name_, [&](auto dec_tag) {
      with_numeric_type(astype_.dtype, name_, [&](auto enc_tag) {
        using Dec = typename decltype(dec_tag)::type;
        using Enc = typename decltype(enc_tag)::type;
        if constexpr (std::is_floating_point_v<Dec>) {
          const Dec scale = static_cast<Dec>(scale_);
          for (std::size_t i = 0; i < n; ++i) {
            const Dec v = std::nearbyint(scale * load_element<Dec>(in, i)) / scale;
            store_element<Enc>(out, i, cast_value<Enc>(v));
          }
        }
      });
    });
  }

 private:
  void convert(const DataType& from, const std::byte* in, const DataType& to, std::byte* out,
               std::size_t n) const {
    with_numeric_type(from, name_, [&](auto from_tag) {
      with_numeric_type(to, name_, [&](auto to_tag) {
        using From = typename decltype(from_tag)::type;
        using To = typename decltype(to_tag)::type;
        for (std::size_t i = 0; i < n; ++i)
          store_element<To>(out, i, cast_value<To>(load_element<From>(in, i)));
      });
    });
  }

  double scale_ = 1;
};

}  // namespace

BytesCodecPtr make_quantize(const std::string& name, const nlohmann::json& config,
                            const ChunkSpec&) {
  ConfigReader cfg(name, config);
  const auto digits = cfg.integer("digits");
  if (digits < -300 || digits > 300) cfg.bad("digits", "out of range");
  const auto dtype = cfg.dtype("dtype");
  const auto astype = cfg.has("astype") ? cfg.dtype("astype") : dtype;
  require_numeric(cfg, "dtype", dtype);
  require_numeric(cfg, "astype", astype);
  if (dtype.dtype.kind != DTypeKind::Float) cfg.bad("dtype", "quantize needs a floating point type");
  if (astype.dtype.kind != DTypeKind::Float) cfg.bad("astype", "quantize needs a floating point type");
  return std::make_shared<QuantizeFilter>(name, dtype, astype, config, digits);
}

}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(quantize) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "quantize", .names = kV2 | kV3Numcodecs, .bytes = make_quantize, .filter = true,
                .implicit_dtype_key = "dtype"});
}
