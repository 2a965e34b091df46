#include "optional_type.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "array_metadata.hpp"
#include "lazycube/error.hpp"
#include "util/element_cast.hpp"

namespace lazycube::zarr {

using nlohmann::json;

namespace {

// NaN of a float or complex type, as native bytes.
void put_nan(std::byte* out, const DataType& t) {
  if (t.itemsize == 2 && t.kind == DTypeKind::Float) {
    const std::uint16_t bits = 0x7e00;
    std::memcpy(out, &bits, 2);
    return;
  }
  const std::size_t part = t.kind == DTypeKind::Complex ? t.itemsize / 2 : t.itemsize;
  for (std::size_t off = 0; off < t.itemsize; off += part) {
    if (part == 4) {
      const float v = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(out + off, &v, 4);
    } else {
      const double v = std::numeric_limits<double>::quiet_NaN();
      std::memcpy(out + off, &v, 8);
    }
  }
}

bool widened(const DataType& inner) {
  return inner.kind == DTypeKind::Bool || inner.kind == DTypeKind::Int || inner.kind == DTypeKind::UInt;
}

// Writes one element of the inner type as the read type (bool and integers as float64).
class ElementWriter {
 public:
  explicit ElementWriter(const DataType& inner) : inner_(inner) {}
  void operator()(const std::byte* value, std::byte* out) const {
    if (!widened(inner_)) {
      std::memcpy(out, value, inner_.itemsize);
      return;
    }
    double d = 0;
    lazycube::detail::visit_dtype<lazycube::detail::dtype_set::kBool | lazycube::detail::dtype_set::kInteger>(inner_, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T v;
      std::memcpy(&v, value, sizeof(T));
      d = static_cast<double>(v);
    });
    std::memcpy(out, &d, 8);
  }

 private:
  DataType inner_;
};

class OptionalArrayCodec final : public codec::ArrayToBytesCodec {
 public:
  OptionalArrayCodec(json config, codec::CodecPipeline mask, codec::CodecPipeline data, DataType inner)
      : config_(std::move(config)), mask_(std::move(mask)), data_(std::move(data)), inner_(std::move(inner)) {}

  std::string name() const override { return "optional"; }

  void decode(ByteView in, const codec::ChunkSpec& spec, codec::ChunkData& out) const override {
    if (in.size() < 16) fail("truncated chunk (" + std::to_string(in.size()) + " bytes, the header takes 16)");
    std::uint64_t mask_len = 0, data_len = 0;
    std::memcpy(&mask_len, in.data(), 8);
    std::memcpy(&data_len, in.data() + 8, 8);
    if (mask_len > in.size() - 16 || data_len != in.size() - 16 - mask_len)
      fail("the header gives a mask of " + std::to_string(mask_len) + " and data of " + std::to_string(data_len) +
           " bytes, the chunk has " + std::to_string(in.size() - 16) + " after it");
    const std::uint64_t n = spec.num_elements();
    Buffer mask(n);
    mask_.decode_into(in.subspan(16, mask_len), codec::ChunkSpec{DataType::boolean(), spec.shape}, mask.span());
    std::uint64_t present = 0;
    for (std::uint64_t i = 0; i < n; ++i) present += mask.data()[i] != std::byte{0};
    Buffer values(present * inner_.itemsize);
    data_.decode_into(in.subspan(16 + mask_len, data_len), codec::ChunkSpec{inner_, {present}}, values.span());
    out.bytes.resize(spec.nbytes());
    const std::size_t item = spec.dtype.itemsize;
    const ElementWriter put(inner_);
    std::byte nan[16];
    put_nan(nan, spec.dtype);
    std::uint64_t k = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      std::byte* dst = out.bytes.data() + i * item;
      if (mask.data()[i] != std::byte{0}) put(values.data() + (k++) * inner_.itemsize, dst);
      else std::memcpy(dst, nan, item);
    }
  }

  Buffer encode(const codec::ChunkData&, const codec::ChunkSpec&) const override {
    fail("writing the optional data type is not supported");
  }

  std::optional<std::uint64_t> encoded_size(const codec::ChunkSpec&) const override { return std::nullopt; }

  json to_json() const override { return {{"name", "optional"}, {"configuration", config_}}; }

 private:
  [[noreturn]] static void fail(const std::string& why) { throw CodecError("codec 'optional': " + why); }

  json config_;
  codec::CodecPipeline mask_, data_;
  DataType inner_;
};

}  // namespace

DataType optional_read_type(const DataType& inner, const std::string& where) {
  if (inner.kind == DTypeKind::Float || inner.kind == DTypeKind::Complex) return inner;
  if (widened(inner)) return DataType::float_(8);
  throw MetadataError(where + ": data_type optional of " + inner.name() +
                      " is not supported (lazycube reads optional bool, integer, float and complex types, null as NaN)");
}

Buffer optional_fill_bytes(const json& fill, const DataType& inner, const std::string& where) {
  const DataType read = optional_read_type(inner, where);
  Buffer out(read.itemsize);
  if (fill.is_null()) {
    put_nan(out.data(), read);
    return out;
  }
  if (!fill.is_array() || fill.size() != 1)
    throw MetadataError(where + ": fill_value " + fill.dump() +
                        " of an optional data type must be null or a list of one value of the inner type");
  const FillValue value = parse_v3_fill_value(fill[0], inner, where);
  const ElementWriter put(inner);
  put(value.bytes.data(), out.data());
  return out;
}

bool is_optional_array_codec(const std::string& name, const json& config) {
  return name == "optional" && config.is_object() && (config.contains("mask_codecs") || config.contains("data_codecs"));
}

std::shared_ptr<const codec::ArrayToBytesCodec> make_optional_array_codec(const json& config, const codec::ChunkSpec& decoded,
                                                                           const DataType& inner, const std::string& where) {
  const std::string ctx = where + " (optional)";
  for (const auto& [key, value] : config.items())
    if (key != "mask_codecs" && key != "data_codecs")
      throw MetadataError(ctx + ": unknown configuration key '" + key + "'");
  codec::CodecPipeline mask = parse_v3_codecs(require(config, "mask_codecs", ctx), {DataType::boolean(), decoded.shape},
                                              ctx + " mask_codecs");
  const std::uint64_t n = decoded.num_elements();
  codec::CodecPipeline data = parse_v3_codecs(require(config, "data_codecs", ctx), {inner, {n}}, ctx + " data_codecs");
  return std::make_shared<OptionalArrayCodec>(config, std::move(mask), std::move(data), inner);
}

}  // namespace lazycube::zarr
