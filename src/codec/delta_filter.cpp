// numcodecs Delta: encoded[0] = x[0], encoded[i] = x[i] - x[i-1]; decoding is a running sum.
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "element_filter.hpp"

namespace lazycube::codec::detail {
namespace {

class DeltaFilter final : public ElementFilter {
 public:
  using ElementFilter::ElementFilter;

 protected:
  void decode_native(const std::byte* in, std::byte* out, std::size_t n) const override {
    with_numeric_type(astype_.dtype, name_, [&](auto enc_tag) {
      with_numeric_type(dtype_.dtype, name_, [&](auto dec_tag) {
        using Enc = typename decltype(enc_tag)::type;
        using Dec = typename decltype(dec_tag)::type;
        if constexpr (std::is_integral_v<Enc> && std::is_integral_v<Dec>) {
          // Integer sums wrap, which unsigned arithmetic gives without undefined behaviour.
          std::uint64_t sum = 0;
          for (std::size_t i = 0; i < n; ++i) {
            sum += static_cast<std::uint64_t>(load_element<Enc>(in, i));
            store_element<Dec>(out, i, static_cast<Dec>(sum));
          }
        } else {
          // numpy accumulates in the encoded type when it is floating point.
          using Acc = std::conditional_t<std::is_floating_point_v<Enc>, Enc, double>;
          Acc sum = 0;
          for (std::size_t i = 0; i < n; ++i) {
            sum += static_cast<Acc>(load_element<Enc>(in, i));
            store_element<Dec>(out, i, cast_value<Dec>(sum));
          }
        }
      });
    });
  }

  void encode_native(const std::byte* in, std::byte* out, std::size_t n) const override {
    with_numeric_type(astype_.dtype, name_, [&](auto enc_tag) {
      with_numeric_type(dtype_.dtype, name_, [&](auto dec_tag) {
        using Enc = typename decltype(enc_tag)::type;
        using Dec = typename decltype(dec_tag)::type;
        for (std::size_t i = 0; i < n; ++i) {
          const Dec x = load_element<Dec>(in, i);
          if (i == 0) {
            store_element<Enc>(out, i, cast_value<Enc>(x));
          } else if constexpr (std::is_integral_v<Dec>) {
            const auto d = static_cast<std::uint64_t>(x) -
                           static_cast<std::uint64_t>(load_element<Dec>(in, i - 1));
            store_element<Enc>(out, i, static_cast<Enc>(static_cast<Dec>(d)));
          } else {
            store_element<Enc>(out, i, cast_value<Enc>(x - load_element<Dec>(in, i - 1)));
          }
        }
      });
    });
  }
};

}  // namespace

BytesCodecPtr make_delta(const std::string& name, const nlohmann::json& config,
                         const ChunkSpec&) {
  ConfigReader cfg(name, config);
  const auto dtype = cfg.dtype("dtype");
  const auto astype = cfg.has("astype") ? cfg.dtype("astype") : dtype;
  require_numeric(cfg, "dtype", dtype);
  require_numeric(cfg, "astype", astype);
  if (dtype.dtype.kind == DTypeKind::Bool) cfg.bad("dtype", "bool is not supported by delta");
  return std::make_shared<DeltaFilter>(name, dtype, astype, config);
}

}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(delta) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "delta", .names = kV2 | kV3Numcodecs, .bytes = make_delta, .filter = true,
                .implicit_dtype_key = "dtype"});
}
