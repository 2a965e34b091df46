// numcodecs Categorize: integer codes (astype) stand for labels; code i+1 is labels[i] and any
// other code decodes to ''. Decoded data is fixed-width UTF-32 (a numpy 'U' dtype).
#include <vector>
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "element_filter.hpp"

namespace lazycube::codec::detail {
namespace {

// UTF-8 to code points; invalid sequences become U+FFFD.
std::u32string utf8_to_utf32(const std::string& s) {
  std::u32string out;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    char32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += len;
  }
  return out;
}

class CategorizeFilter final : public BytesToBytesCodec {
 public:
  CategorizeFilter(std::string name, ParsedNumpyDType dtype, ParsedNumpyDType astype,
                   std::vector<std::u32string> labels, nlohmann::json config)
      : name_(std::move(name)), dtype_(std::move(dtype)), astype_(std::move(astype)),
        labels_(std::move(labels)), config_(std::move(config)) {
    width_ = dtype_.dtype.itemsize / 4;
    // Labels as stored: truncated to the width, NUL padded, in the dtype's byte order.
    for (const auto& label : labels_) {
      std::vector<char32_t> cell(width_, 0);
      for (std::size_t k = 0; k < width_ && k < label.size(); ++k) cell[k] = label[k];
      if (dtype_.order == ByteOrder::Big)
        for (auto& c : cell) c = byteswap32(c);
      cells_.push_back(std::move(cell));
    }
  }

  std::string name() const override { return name_; }
  std::optional<DataType> encoded_dtype(const DataType&) const override { return astype_.dtype; }

  ByteView decode(ByteView in, Buffer& scratch, const DecodeLimits& limits) const override {
    const std::size_t code_size = astype_.dtype.itemsize;
    if (in.size() % code_size != 0)
      fail(name_ + ": input of " + std::to_string(in.size()) +
           " bytes is not a whole number of codes");
    const std::size_t n = in.size() / code_size;
    check_claim(name_, std::uint64_t{n} * width_ * 4, limits);
    scratch.resize(n * width_ * 4);
    const std::size_t cell_bytes = width_ * 4;
    with_numeric_type(astype_.dtype, name_, [&](auto tag) {
      using Code = typename decltype(tag)::type;
      for (std::size_t i = 0; i < n; ++i) {
        Code code = load_element<Code>(in.data(), i);
        if constexpr (sizeof(Code) > 1)
          if (astype_.order == ByteOrder::Big) code = swap_code(code);
        std::byte* dst = scratch.data() + i * cell_bytes;
        const auto index = static_cast<std::int64_t>(code);
        if (index >= 1 && static_cast<std::uint64_t>(index) <= cells_.size())
          std::memcpy(dst, cells_[index - 1].data(), cell_bytes);
        else
          std::memset(dst, 0, cell_bytes);
      }
    });
    return scratch.view();
  }

  Buffer encode(ByteView in) const override {
    const std::size_t cell_bytes = width_ * 4;
    if (cell_bytes == 0 || in.size() % cell_bytes != 0)
      fail(name_ + ": input is not a whole number of " + dtype_.dtype.name() + " elements");
    const std::size_t n = in.size() / cell_bytes;
    Buffer out(n * astype_.dtype.itemsize);
    with_numeric_type(astype_.dtype, name_, [&](auto tag) {
      using Code = typename decltype(tag)::type;
      for (std::size_t i = 0; i < n; ++i) {
        Code code = 0;
        for (std::size_t l = 0; l < cells_.size(); ++l)
          if (std::memcmp(in.data() + i * cell_bytes, cells_[l].data(), cell_bytes) == 0)
            code = static_cast<Code>(l + 1);  // later labels win, as in numcodecs
        if constexpr (sizeof(Code) > 1)
          if (astype_.order == ByteOrder::Big) code = swap_code(code);
        store_element<Code>(out.data(), i, code);
      }
    });
    return out;
  }

  nlohmann::json to_json() const override {
    nlohmann::json c = config_;
    if (c.is_object()) c.erase("id");
    return {{"name", name_}, {"configuration", c}};
  }

 private:
  static char32_t byteswap32(char32_t v) {
    const auto u = static_cast<std::uint32_t>(v);
    return static_cast<char32_t>((u >> 24) | ((u >> 8) & 0xff00) | ((u << 8) & 0xff0000) | (u << 24));
  }
  template <class T>
  static T swap_code(T v) {
    std::byte b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    for (std::size_t k = 0; k < sizeof(T) / 2; ++k) std::swap(b[k], b[sizeof(T) - 1 - k]);
    std::memcpy(&v, b, sizeof(T));
    return v;
  }

  std::string name_;
  ParsedNumpyDType dtype_, astype_;
  std::vector<std::u32string> labels_;
  std::vector<std::vector<char32_t>> cells_;
  std::size_t width_ = 0;
  nlohmann::json config_;
};

}  // namespace

BytesCodecPtr make_categorize(const std::string& name, const nlohmann::json& config,
                              const ChunkSpec&) {
  ConfigReader cfg(name, config);
  const auto dtype = cfg.dtype("dtype");
  if (dtype.dtype.kind != DTypeKind::Unicode)
    cfg.bad("dtype", "only fixed-width unicode ('U') dtypes are supported, got " + dtype.dtype.name());
  const auto astype = cfg.dtype("astype", "|u1");
  if (astype.dtype.kind != DTypeKind::Int && astype.dtype.kind != DTypeKind::UInt)
    cfg.bad("astype", "must be an integer type");
  const auto* labels_json = cfg.find("labels");
  if (labels_json == nullptr || !labels_json->is_array()) cfg.bad("labels", "expected a list of strings");
  std::vector<std::u32string> labels;
  for (const auto& l : *labels_json) {
    if (!l.is_string()) cfg.bad("labels", "expected a list of strings");
    labels.push_back(utf8_to_utf32(l.get<std::string>()));
  }
  return std::make_shared<CategorizeFilter>(name, dtype, astype, std::move(labels), config);
}

}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(categorize) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "categorize", .names = kV2 | kV3Numcodecs, .bytes = make_categorize, .filter = true,
                .implicit_dtype_key = "dtype"});
}
