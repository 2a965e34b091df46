// numcodecs FixedScaleOffset: encoded = round((x - offset) * scale), decoded = encoded / scale
// + offset, computed in float32 when the encoded type is float32 (numpy keeps float32 with
// Python scalars) and in float64 otherwise, then cast to dtype.
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "element_filter.hpp"

namespace lazycube::codec::detail {
namespace {

class FixedScaleOffsetFilter final : public ElementFilter {
 public:
  FixedScaleOffsetFilter(std::string name, ParsedNumpyDType dtype, ParsedNumpyDType astype,
                         nlohmann::json config, double offset, double scale)
      : ElementFilter(std::move(name), std::move(dtype), std::move(astype), std::move(config)),
        offset_(offset), scale_(scale) {}

 protected:
  void decode_native(const std::byte* in, std::byte* out, std::size_t n) const override {
    with_numeric_type(astype_.dtype, name_, [&](auto enc_tag) {
      with_numeric_type(dtype_.dtype, name_, [&](auto dec_tag) {
        using Enc = typename decltype(enc_tag)::type;
        using Dec = typename decltype(dec_tag)::type;
        using Calc = std::conditional_t<std::is_same_v<Enc, float>, float, double>;
        const Calc scale = static_cast<Calc>(scale_), offset = static_cast<Calc>(offset_);
        for (std::size_t i = 0; i < n; ++i) {
          const Calc v = static_cast<Calc>(load_element<Enc>(in, i)) / scale + offset;
          store_element<Dec>(out, i, cast_value<Dec>(v));
        }
      });
    });
  }

  void encode_native(const std::byte* in, std::byte* out, std::size_t n) const override {
    with_numeric_type(astype_.dtype, name_, [&](auto enc_tag) {
      with_numeric_type(dtype_.dtype, name_, [&](auto dec_tag) {
        using Enc = typename decltype(enc_tag)::type;
        using Dec = typename decltype(dec_tag)::type;
        using Calc = std::conditional_t<std::is_same_v<Dec, float>, float, double>;
        const Calc scale = static_cast<Calc>(scale_), offset = static_cast<Calc>(offset_);
        for (std::size_t i = 0; i < n; ++i) {
          // np.around rounds half to even, as nearbyint does in the default rounding mode.
          const Calc v = std::nearbyint((static_cast<Calc>(load_element<Dec>(in, i)) - offset) * scale);
          store_element<Enc>(out, i, cast_value<Enc>(v));
        }
      });
    });
  }

 private:
  double offset_, scale_;
};

}  // namespace

BytesCodecPtr make_fixedscaleoffset(const std::string& name, const nlohmann::json& config,
                                    const ChunkSpec&) {
  ConfigReader cfg(name, config);
  const auto dtype = cfg.dtype("dtype");
  const auto astype = cfg.has("astype") ? cfg.dtype("astype") : dtype;
  require_numeric(cfg, "dtype", dtype);
  require_numeric(cfg, "astype", astype);
  const double offset = cfg.number("offset");
  const double scale = cfg.number("scale");
  if (scale == 0 || !std::isfinite(scale)) cfg.bad("scale", "must be a finite non-zero number");
  if (!std::isfinite(offset)) cfg.bad("offset", "must be finite");
  return std::make_shared<FixedScaleOffsetFilter>(name, dtype, astype, config, offset, scale);
}

}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(fixedscaleoffset) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "fixedscaleoffset", .names = kV2 | kV3Numcodecs, .bytes = make_fixedscaleoffset,
                .filter = true, .implicit_dtype_key = "dtype"});
}
