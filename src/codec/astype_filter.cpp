// numcodecs AsType: stored as encode_dtype, decoded by casting to decode_dtype.
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "element_filter.hpp"

namespace lazycube::codec::detail {
namespace {

template <class Tag>
using TypeOf = typename Tag::type;

class AsTypeFilter final : public ElementFilter {
 public:
  using ElementFilter::ElementFilter;

 protected:
  void decode_native(const std::byte* in, std::byte* out, std::size_t n) const override {
    convert(astype_.dtype, in, dtype_.dtype, out, n);
  }
  void encode_native(const std::byte* in, std::byte* out, std::size_t n) const override {
    convert(dtype_.dtype, in, astype_.dtype, out, n);
  }

 private:
  void convert(const DataType& from, const std::byte* in, const DataType& to, std::byte* out,
               std::size_t n) const {
    with_numeric_type(from, name_, [&](auto from_tag) {
      with_numeric_type(to, name_, [&](auto to_tag) {
        using From = TypeOf<decltype(from_tag)>;
        using To = TypeOf<decltype(to_tag)>;
        for (std::size_t i = 0; i < n; ++i)
          store_element<To>(out, i, cast_value<To>(load_element<From>(in, i)));
      });
    });
  }
};

}  // namespace

BytesCodecPtr make_astype(const std::string& name, const nlohmann::json& config,
                          const ChunkSpec&) {
  ConfigReader cfg(name, config);
  const auto encode_dtype = cfg.dtype("encode_dtype");
  const auto decode_dtype = cfg.dtype("decode_dtype");
  require_numeric(cfg, "encode_dtype", encode_dtype);
  require_numeric(cfg, "decode_dtype", decode_dtype);
  return std::make_shared<AsTypeFilter>(name, decode_dtype, encode_dtype, config);
}

}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(astype) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "astype", .names = kV2 | kV3Numcodecs, .bytes = make_astype, .filter = true,
                .implicit_dtype_key = "decode_dtype"});
}
