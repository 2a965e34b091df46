// CodecPipeline::max_encoded_size: the most bytes a stored chunk may hold, from its decoded size
// and each stage's declared bound. Readers refuse a reply past it (ByteRequest::max_bytes), so
// every step rounds up and a stage with no declared bound gets a generous allowance.
#include <limits>

#include "lazycube/codec/codec.hpp"

namespace lazycube::codec {
namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

std::uint64_t add(std::uint64_t a, std::uint64_t b) { return a > kMax - b ? kMax : a + b; }
std::uint64_t mul(std::uint64_t a, std::uint64_t b) { return b != 0 && a > kMax / b ? kMax : a * b; }

// A bytes stage without a declared bound (size-preserving filters, packbits, ...): twice the
// input and 1 MiB, far above any filter's growth.
std::uint64_t fallback(std::uint64_t n) { return add(mul(n, 2), std::uint64_t{1} << 20); }

}  // namespace

std::optional<std::uint64_t> CodecPipeline::max_encoded_size(const ChunkSpec& decoded) const {
  if (!array_to_bytes || decoded.dtype.is_variable_length()) return std::nullopt;
  const ChunkSpec spec = array_to_bytes_spec(decoded);
  if (spec.dtype.is_variable_length()) return std::nullopt;
  std::optional<std::uint64_t> size = array_to_bytes->max_encoded_size(spec);
  if (!size) return std::nullopt;
  std::uint64_t n = *size;
  DataType dtype = spec.dtype;
  for (const auto& c : bytes_codecs) {
    // A filter storing another element type (astype) scales the bytes by the item sizes.
    if (auto t = c->encoded_dtype(dtype)) {
      if (t->is_variable_length() || dtype.itemsize == 0) return std::nullopt;
      n = mul(n / dtype.itemsize + (n % dtype.itemsize != 0), t->itemsize);
      dtype = *t;
    }
    n = c->max_encoded_size(n).value_or(fallback(n));
  }
  return n;
}

}  // namespace lazycube::codec
