// vlen-utf8 / vlen-bytes: u32 LE element count, then per element a u32 LE byte length and the
// bytes. The count must equal the chunk's element count (chunk shape, even at the array edge).
#include <cstring>
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "codec_util.hpp"

namespace lazycube::codec::detail {
namespace {

class VlenCodec final : public ArrayToBytesCodec {
 public:
  explicit VlenCodec(std::string name) : name_(std::move(name)) {}

  std::string name() const override { return name_; }

  void decode(ByteView in, const ChunkSpec& spec, ChunkData& out) const override {
    if (in.size() < 4) fail(name_ + ": truncated header (" + std::to_string(in.size()) + " bytes)");
    const std::uint64_t count = load_le32(in.data());
    if (count != spec.num_elements())
      fail(name_ + ": chunk holds " + std::to_string(count) + " elements, expected " +
           std::to_string(spec.num_elements()));
    std::size_t pos = 4;
    // Every element needs at least its 4-byte length: refuse counts the input cannot hold
    // before allocating the string table.
    if (count > (in.size() - pos) / 4)
      fail(name_ + ": truncated data (" + std::to_string(count) + " elements in " +
           std::to_string(in.size()) + " bytes)");
    out.strings.resize(count);
    for (std::uint64_t i = 0; i < count; ++i) {
      if (in.size() - pos < 4) fail(name_ + ": truncated data at element " + std::to_string(i));
      const std::uint32_t len = load_le32(in.data() + pos);
      pos += 4;
      if (len > in.size() - pos)
        fail(name_ + ": element " + std::to_string(i) + " claims " + std::to_string(len) +
             " bytes, only " + std::to_string(in.size() - pos) + " left");
      out.strings[i].assign(reinterpret_cast<const char*>(in.data() + pos), len);
      pos += len;
    }
    if (pos != in.size())
      fail(name_ + ": " + std::to_string(in.size() - pos) + " trailing bytes after the elements");
    out.bytes.clear();
  }

  Buffer encode(const ChunkData& in, const ChunkSpec& spec) const override {
    if (in.strings.size() != spec.num_elements())
      fail(name_ + ": chunk data holds " + std::to_string(in.strings.size()) +
           " elements, expected " + std::to_string(spec.num_elements()));
    if (in.strings.size() > UINT32_MAX) fail(name_ + ": too many elements");
    std::size_t total = 4;
    for (const auto& s : in.strings) {
      if (s.size() > UINT32_MAX) fail(name_ + ": element too large");
      total += 4 + s.size();
    }
    Buffer out(total);
    store_le32(out.data(), static_cast<std::uint32_t>(in.strings.size()));
    std::size_t pos = 4;
    for (const auto& s : in.strings) {
      store_le32(out.data() + pos, static_cast<std::uint32_t>(s.size()));
      pos += 4;
      if (!s.empty()) std::memcpy(out.data() + pos, s.data(), s.size());
      pos += s.size();
    }
    return out;
  }

  std::optional<std::uint64_t> encoded_size(const ChunkSpec&) const override {
    return std::nullopt;
  }

  nlohmann::json to_json() const override {
    return {{"name", name_}, {"configuration", nlohmann::json::object()}};
  }

 private:
  std::string name_;
};

}  // namespace

ArrayToBytesCodecPtr make_vlen_codec(const std::string& name, const nlohmann::json&, const ChunkSpec&) {
  // vlen-utf8 and vlen-bytes share the layout; the element type (String / VlenBytes) says
  // which it holds, and strings are not validated as UTF-8 here.
  return std::make_shared<VlenCodec>(name);
}

}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(vlen) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "vlen-utf8", .names = kV2 | kV3, .array_to_bytes = make_vlen_codec});
  registry.add({.id = "vlen-bytes", .names = kV2 | kV3, .array_to_bytes = make_vlen_codec});
}
