// v3 `reshape` (zarr-extensions registry): the encoded chunk has the shape `shape` describes and
// the same elements in the same C order, so decoding and encoding only relabel the data. Each
// entry of `shape` is a size, a list of decoded axes whose extents multiply to the size (the
// axes over all entries strictly increasing, and lined up with the output axis), or -1 (once:
// whatever makes the element counts equal). Every rule the spec states is checked when the
// codec is built; a violation is a CodecError naming `shape`.
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "codec_util.hpp"

namespace lazycube::codec::detail {
namespace {

// The product of extents, or nullopt on overflow.
std::optional<std::uint64_t> reshape_product(const std::vector<std::uint64_t>& v, std::size_t begin, std::size_t end) {
  std::uint64_t p = 1;
  for (std::size_t i = begin; i < end; ++i)
    if (__builtin_mul_overflow(p, v[i], &p)) return std::nullopt;
  return p;
}

std::vector<std::uint64_t> reshape_output_shape(const ConfigReader& cfg, const nlohmann::json& shape,
                                                const std::vector<std::uint64_t>& in) {
  const auto total = reshape_product(in, 0, in.size());
  if (!total) cfg.bad("shape", "the chunk's element count overflows");
  std::vector<std::uint64_t> out(shape.size(), 0);
  std::optional<std::size_t> free_axis;
  // The decoded axes named by each output axis, when given as a list.
  std::vector<std::optional<std::pair<std::size_t, std::size_t>>> spans(shape.size());
  std::int64_t last_axis = -1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const auto& e = shape[i];
    if (e.is_number_integer()) {
      const std::int64_t size = e.get<std::int64_t>();
      if (size == -1) {
        if (free_axis) cfg.bad("shape", "-1 may appear only once");
        free_axis = i;
      } else if (size <= 0) {
        cfg.bad("shape", "sizes must be positive or -1, got " + e.dump());
      } else {
        out[i] = static_cast<std::uint64_t>(size);
      }
    } else if (e.is_array()) {
      std::uint64_t size = 1;
      std::size_t first = 0;
      for (std::size_t k = 0; k < e.size(); ++k) {
        const auto& a = e[k];
        if (!a.is_number_integer() || a.get<std::int64_t>() < 0 ||
            a.get<std::int64_t>() >= static_cast<std::int64_t>(in.size()))
          cfg.bad("shape", "input axis " + a.dump() + " is not an axis of the " + std::to_string(in.size()) +
                               "-dimensional chunk");
        const std::int64_t axis = a.get<std::int64_t>();
        if (axis <= last_axis) cfg.bad("shape", "input axes must be strictly increasing over all entries");
        if (k == 0) first = static_cast<std::size_t>(axis);
        last_axis = axis;
        size *= in[static_cast<std::size_t>(axis)];
      }
      out[i] = size;
      if (!e.empty()) spans[i] = {first, static_cast<std::size_t>(last_axis) + 1};
    } else {
      cfg.bad("shape", "entries must be sizes, lists of input axes or -1, got " + e.dump());
    }
  }
  if (free_axis) {
    std::uint64_t known = 1;
    for (std::size_t i = 0; i < out.size(); ++i)
      if (i != *free_axis && __builtin_mul_overflow(known, out[i], &known)) cfg.bad("shape", "sizes overflow");
    if (known == 0 || *total % known != 0)
      cfg.bad("shape", "no size for -1 makes " + std::to_string(*total) + " elements");
    out[*free_axis] = *total / known;
  }
  const auto made = reshape_product(out, 0, out.size());
  if (!made || *made != *total)
    cfg.bad("shape", "makes " + (made ? std::to_string(*made) : std::string("too many")) + " elements, the chunk has " +
                         std::to_string(*total));
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!spans[i]) continue;
    const auto [first, end] = *spans[i];
    if (reshape_product(out, 0, i) != reshape_product(in, 0, first) ||
        reshape_product(out, i + 1, out.size()) != reshape_product(in, end, in.size()))
      cfg.bad("shape", "output axis " + std::to_string(i) + " does not line up with its input axes");
  }
  return out;
}

class ReshapeCodec final : public ArrayToArrayCodec {
 public:
  ReshapeCodec(std::string name, nlohmann::json shape, std::vector<std::uint64_t> decoded_shape)
      : name_(std::move(name)), shape_(std::move(shape)), decoded_shape_(std::move(decoded_shape)) {
    encoded_shape_ = reshape_output_shape(ConfigReader(name_, config()), shape_, decoded_shape_);
  }

  std::string name() const override { return name_; }

  ChunkSpec encoded_spec(const ChunkSpec& decoded) const override {
    if (decoded.shape == decoded_shape_) return {decoded.dtype, encoded_shape_};
    return {decoded.dtype, reshape_output_shape(ConfigReader(name_, config()), shape_, decoded.shape)};
  }

  void decode(ChunkData& in, const ChunkSpec& decoded, ChunkData& out) const override {
    check(in, decoded);
    out = std::move(in);
  }

  void encode(const ChunkData& in, const ChunkSpec& decoded, ChunkData& out) const override {
    check(in, decoded);
    out.bytes = Buffer::copy_of(in.bytes.view());
    out.strings = in.strings;
  }

  nlohmann::json to_json() const override { return {{"name", name_}, {"configuration", config()}}; }

 private:
  nlohmann::json config() const { return {{"shape", shape_}}; }

  void check(const ChunkData& in, const ChunkSpec& spec) const {
    const bool ok = spec.dtype.is_variable_length() ? in.strings.size() == spec.num_elements()
                                                    : in.bytes.size() == spec.nbytes();
    if (!ok) fail(name_ + ": chunk data does not match its shape");
  }

  std::string name_;
  nlohmann::json shape_;
  std::vector<std::uint64_t> decoded_shape_, encoded_shape_;
};

ArrayCodecPtr make_reshape(const std::string& name, const nlohmann::json& config, const ChunkSpec& decoded) {
  const ConfigReader cfg(name, config);
  cfg.only({"shape"});
  const auto* shape = cfg.find("shape");
  if (shape == nullptr) cfg.bad("shape", "missing");
  if (!shape->is_array()) cfg.bad("shape", "expected a list, got " + shape->dump());
  return std::make_shared<ReshapeCodec>(name, *shape, decoded.shape);
}

}  // namespace
}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(reshape) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "reshape", .names = kV3, .array = make_reshape});
}
