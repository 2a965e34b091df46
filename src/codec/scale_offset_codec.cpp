// v3 `scale_offset` (zarr-extensions registry): encoding is out = (in - offset) * scale, decoding
// out = in / scale + offset, both in the arithmetic of the array's own data type: floats in
// that float type (float16 rounded after each operation, as IEEE half arithmetic), integers
// with C-style truncating division and an error when a value leaves the type's range (as the
// spec asks and zarrs does). `offset` and `scale` are scalars in the type's fill-value encoding;
// a missing one is the identity. The data type is unchanged; a `cast_value` after it narrows.
#include <cmath>
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "util/element_cast.hpp"
#include "v3_scalar.hpp"

namespace lazycube::codec::detail {
namespace {

using lazycube::detail::load_element;
using lazycube::detail::store_element;

template <class T>
struct ScaleOffsetQuantities {
  T offset, scale;
};

template <class T>
ScaleOffsetQuantities<T> scale_offset_quantities(const ConfigReader& cfg) {
  ScaleOffsetQuantities<T> q{};
  if constexpr (std::is_same_v<T, float16>) {
    q = {to_float16(0.0f), to_float16(1.0f)};
  } else {
    q = {T(0), T(1)};
  }
  if (const auto* v = cfg.find("offset")) q.offset = v3_scalar<T>(cfg, "offset", *v);
  if (const auto* v = cfg.find("scale")) q.scale = v3_scalar<T>(cfg, "scale", *v);
  return q;
}

// One element through decode (forward = false) or encode; false when an integer result is not
// representable.
template <class T>
bool scale_offset_element(T& v, const ScaleOffsetQuantities<T>& q, bool forward) {
  if constexpr (std::is_same_v<T, float16>) {
    const auto h = [](float x) { return half_to_float(to_float16(x)); };
    const float x = half_to_float(v), o = half_to_float(q.offset), s = half_to_float(q.scale);
    v = to_float16(forward ? h(x - o) * s : h(x / s) + o);
    return true;
  } else if constexpr (std::is_floating_point_v<T>) {
    v = forward ? (v - q.offset) * q.scale : v / q.scale + q.offset;
    return true;
  } else {
    T r;
    if (forward) return !__builtin_sub_overflow(v, q.offset, &r) && !__builtin_mul_overflow(r, q.scale, &v);
    if (std::is_signed_v<T> && q.scale == T(-1) && v == std::numeric_limits<T>::min()) return false;
    return !__builtin_add_overflow(static_cast<T>(v / q.scale), q.offset, &v);
  }
}

class ScaleOffsetCodec final : public ArrayToArrayCodec {
 public:
  ScaleOffsetCodec(std::string name, nlohmann::json config, DataType dtype)
      : name_(std::move(name)), config_(std::move(config)), dtype_(std::move(dtype)) {
    run(nullptr, 0, false);  // parses offset and scale for the type (CodecError naming the key)
  }

  std::string name() const override { return name_; }
  ChunkSpec encoded_spec(const ChunkSpec& decoded) const override { return decoded; }

  void decode(ChunkData& in, const ChunkSpec& decoded, ChunkData& out) const override {
    check(in, decoded);
    out.bytes = std::move(in.bytes);
    run(out.bytes.data(), decoded.num_elements(), false);
  }

  void encode(const ChunkData& in, const ChunkSpec& decoded, ChunkData& out) const override {
    check(in, decoded);
    out.bytes = Buffer::copy_of(in.bytes.view());
    run(out.bytes.data(), decoded.num_elements(), true);
  }

  nlohmann::json to_json() const override { return {{"name", name_}, {"configuration", config_}}; }

 private:
  void check(const ChunkData& in, const ChunkSpec& spec) const {
    if (spec.dtype != dtype_ || in.bytes.size() != spec.nbytes())
      fail(name_ + ": chunk data does not match its " + spec.dtype.name() + " shape");
  }

  // Transforms n elements in place (n = 0: only parses the configuration).
  void run(std::byte* data, std::uint64_t n, bool forward) const {
    const ConfigReader cfg(name_, config_);
    const bool known = lazycube::detail::visit_dtype<lazycube::detail::dtype_set::kReal | lazycube::detail::dtype_set::kHalf>(
        dtype_, [&](auto tag) {
          using T = typename decltype(tag)::type;
          const ScaleOffsetQuantities<T> q = scale_offset_quantities<T>(cfg);
          if constexpr (std::is_integral_v<T>) {
            if (q.scale == 0) cfg.bad("scale", "must not be 0 (decoding divides by it)");
          } else if constexpr (std::is_same_v<T, float16>) {
            if (half_to_float(q.scale) == 0) cfg.bad("scale", "must not be 0 (decoding divides by it)");
          } else {
            if (q.scale == 0) cfg.bad("scale", "must not be 0 (decoding divides by it)");
          }
          for (std::uint64_t i = 0; i < n; ++i) {
            T v = load_element<T>(data, i);
            [[maybe_unused]] const T before = v;
            if (!scale_offset_element(v, q, forward)) {
              if constexpr (std::is_integral_v<T>)
                fail(name_ + ": " + (forward ? "encoding " : "decoding ") + std::to_string(before) +
                     " leaves the range of " + dtype_.name());
            }
            store_element<T>(data, i, v);
          }
        });
    if (!known) fail("codec '" + name_ + "': unsupported data type " + dtype_.name() +
                     " (scale_offset takes integers and float16/32/64)");
  }

  std::string name_;
  nlohmann::json config_;
  DataType dtype_;
};

ArrayCodecPtr make_scale_offset(const std::string& name, const nlohmann::json& config,
                                const ChunkSpec& decoded) {
  const ConfigReader cfg(name, config);
  cfg.only({"offset", "scale"});
  return std::make_shared<ScaleOffsetCodec>(name, config.is_null() ? nlohmann::json::object() : config,
                                            decoded.dtype);
}

}  // namespace
}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(scale_offset) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "scale_offset", .names = kV3, .array = make_scale_offset});
}
