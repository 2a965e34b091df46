// v3 `transpose`: the encoded array's axis i is the decoded array's axis order[i]. Works for
// fixed-size elements (bytes) and variable-length ones (strings).
#include <cstring>
#include <numeric>
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "codec_util.hpp"

namespace lazycube::codec {
namespace {

// dst[e] = src[s] where s[perm[i]] = e[i]; dst shape[i] = src_shape[perm[i]]. `copy(dst_index,
// src_index)` moves one element.
template <class Copy>
void permute(const std::vector<std::uint64_t>& src_shape, const std::vector<std::size_t>& perm,
             Copy&& copy) {
  const std::size_t rank = src_shape.size();
  std::vector<std::uint64_t> src_stride(rank, 1);
  for (std::size_t i = rank; i-- > 1;) src_stride[i - 1] = src_stride[i] * src_shape[i];
  std::vector<std::uint64_t> dst_shape(rank), step(rank);
  std::uint64_t total = 1;
  for (std::size_t i = 0; i < rank; ++i) {
    dst_shape[i] = src_shape[perm[i]];
    step[i] = src_stride[perm[i]];
    total *= dst_shape[i];
  }
  if (total == 0) return;
  if (rank == 0) {
    copy(0, 0);
    return;
  }
  std::vector<std::uint64_t> index(rank, 0);
  std::uint64_t src = 0;
  const std::uint64_t inner = dst_shape[rank - 1], inner_step = step[rank - 1];
  for (std::uint64_t dst = 0; dst < total;) {
    for (std::uint64_t k = 0; k < inner; ++k) copy(dst++, src + k * inner_step);
    // Advance the outer axes like an odometer.
    std::size_t axis = rank - 1;
    while (axis-- > 0) {
      src += step[axis];
      if (++index[axis] < dst_shape[axis]) break;
      src -= step[axis] * dst_shape[axis];
      index[axis] = 0;
    }
  }
}

void permute_data(const ChunkData& in, const std::vector<std::uint64_t>& in_shape,
                  const DataType& dtype, const std::vector<std::size_t>& perm, ChunkData& out) {
  if (dtype.is_variable_length()) {
    out.strings.resize(in.strings.size());
    permute(in_shape, perm, [&](std::uint64_t d, std::uint64_t s) { out.strings[d] = in.strings[s]; });
    out.bytes.clear();
    return;
  }
  const std::size_t size = dtype.itemsize;
  out.bytes.resize(in.bytes.size());
  const std::byte* src = in.bytes.data();
  std::byte* dst = out.bytes.data();
  permute(in_shape, perm,
          [&](std::uint64_t d, std::uint64_t s) { std::memcpy(dst + d * size, src + s * size, size); });
}

class TransposeCodec final : public ArrayToArrayCodec {
 public:
  explicit TransposeCodec(std::vector<std::size_t> order) : order_(std::move(order)) {
    inverse_.resize(order_.size());
    std::vector<bool> seen(order_.size(), false);
    for (std::size_t i = 0; i < order_.size(); ++i) {
      if (order_[i] >= order_.size() || seen[order_[i]])
        detail::fail("codec 'transpose': bad configuration key 'order': not a permutation of 0.." +
                     std::to_string(order_.size() ? order_.size() - 1 : 0));
      seen[order_[i]] = true;
      inverse_[order_[i]] = i;
    }
  }

  std::string name() const override { return "transpose"; }

  ChunkSpec encoded_spec(const ChunkSpec& decoded) const override {
    check_rank(decoded);
    ChunkSpec out{decoded.dtype, {}};
    for (auto axis : order_) out.shape.push_back(decoded.shape[axis]);
    return out;
  }

  void decode(ChunkData& in, const ChunkSpec& decoded, ChunkData& out) const override {
    const ChunkSpec enc = encoded_spec(decoded);
    check_size(in, enc);
    permute_data(in, enc.shape, decoded.dtype, inverse_, out);
  }

  void encode(const ChunkData& in, const ChunkSpec& decoded, ChunkData& out) const override {
    check_rank(decoded);
    check_size(in, decoded);
    permute_data(in, decoded.shape, decoded.dtype, order_, out);
  }

  nlohmann::json to_json() const override {
    return {{"name", "transpose"}, {"configuration", {{"order", order_}}}};
  }

 private:
  void check_rank(const ChunkSpec& spec) const {
    if (spec.shape.size() != order_.size())
      detail::fail("transpose: order has " + std::to_string(order_.size()) +
                   " axes but the chunk has " + std::to_string(spec.shape.size()));
  }
  static void check_size(const ChunkData& in, const ChunkSpec& spec) {
    const bool ok = spec.dtype.is_variable_length() ? in.strings.size() == spec.num_elements()
                                                    : in.bytes.size() == spec.nbytes();
    if (!ok) detail::fail("transpose: chunk data does not match its shape");
  }

  std::vector<std::size_t> order_, inverse_;
};

}  // namespace

std::shared_ptr<const ArrayToArrayCodec> make_transpose_codec(std::vector<std::size_t> order) {
  return std::make_shared<TransposeCodec>(std::move(order));
}

namespace detail {
namespace {

// v3 `transpose` from its configuration: a permutation, or "C" / "F" from early v3 drafts.
ArrayCodecPtr make_transpose_v3(const std::string& name, const nlohmann::json& config,
                                const ChunkSpec& decoded) {
  ConfigReader cfg(name, config);
  const auto* order = cfg.find("order");
  if (order == nullptr) cfg.bad("order", "missing");
  std::vector<std::size_t> perm;
  if (order->is_string()) {
    const auto text = order->get<std::string>();
    if (text != "C" && text != "F") cfg.bad("order", "expected a permutation, 'C' or 'F'");
    for (std::size_t i = 0; i < decoded.shape.size(); ++i)
      perm.push_back(text == "C" ? i : decoded.shape.size() - 1 - i);
  } else if (order->is_array()) {
    for (const auto& v : *order) {
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
        cfg.bad("order", "expected non-negative integers");
      perm.push_back(static_cast<std::size_t>(v.get<std::int64_t>()));
    }
  } else {
    cfg.bad("order", "expected a list of axes");
  }
  if (perm.size() != decoded.shape.size())
    cfg.bad("order", "has " + std::to_string(perm.size()) + " axes, the array has " +
                         std::to_string(decoded.shape.size()));
  return make_transpose_codec(std::move(perm));
}

}  // namespace
}  // namespace detail

}  // namespace lazycube::codec

LAZYCUBE_REGISTER_CODEC(transpose) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "transpose", .names = kV3, .array = make_transpose_v3});
}
