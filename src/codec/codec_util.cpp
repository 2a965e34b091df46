#include "codec_util.hpp"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <nlohmann/json.hpp>

namespace lazycube::codec::detail {

void fail(const std::string& message) { throw CodecError(message); }

std::uint64_t decode_cap(const DecodeLimits& limits) {
  if (limits.exact_size) return *limits.exact_size;
  return limits.max_size == 0 ? kMaxUnboundedDecode : limits.max_size;
}

void check_exact(std::string_view codec, std::uint64_t decoded, const DecodeLimits& limits) {
  if (limits.exact_size && decoded != *limits.exact_size)
    fail(std::string(codec) + ": decoded " + std::to_string(decoded) + " bytes, expected " +
         std::to_string(*limits.exact_size));
}

void check_claim(std::string_view codec, std::uint64_t claimed, const DecodeLimits& limits) {
  if (limits.exact_size) {
    if (claimed != *limits.exact_size)
      fail(std::string(codec) + ": stream claims " + std::to_string(claimed) +
           " decoded bytes, expected " + std::to_string(*limits.exact_size));
    return;
  }
  const std::uint64_t cap = decode_cap(limits);
  if (claimed > cap)
    fail(std::string(codec) + ": stream claims " + std::to_string(claimed) +
         " decoded bytes, more than the limit of " + std::to_string(cap));
}

std::string hex32(std::uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}

ConfigReader::ConfigReader(std::string codec, const nlohmann::json& config)
    : codec_(std::move(codec)), config_(config) {
  if (!config_.is_null() && !config_.is_object())
    fail("codec '" + codec_ + "': configuration must be a JSON object");
}

const nlohmann::json* ConfigReader::find(std::string_view key) const {
  if (!config_.is_object()) return nullptr;
  auto it = config_.find(std::string(key));
  if (it == config_.end() || it->is_null()) return nullptr;
  return &*it;
}

void ConfigReader::bad(std::string_view key, std::string_view why) const {
  fail("codec '" + codec_ + "': bad configuration key '" + std::string(key) + "': " +
       std::string(why));
}

void ConfigReader::only(std::initializer_list<std::string_view> known) const {
  if (!config_.is_object()) return;
  for (const auto& [key, value] : config_.items()) {
    bool ok = false;
    for (const auto k : known) ok = ok || k == key;
    if (!ok) bad(key, "unknown key (this codec takes no other keys)");
  }
}

const nlohmann::json& ConfigReader::required(std::string_view key) const {
  const auto* v = find(key);
  if (v == nullptr) bad(key, "missing");
  return *v;
}

std::int64_t ConfigReader::integer(std::string_view key,
                                   std::optional<std::int64_t> fallback) const {
  const auto* v = find(key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    bad(key, "missing");
  }
  if (v->is_number_integer()) return v->get<std::int64_t>();
  if (v->is_boolean()) return v->get<bool>() ? 1 : 0;
  bad(key, "expected an integer, got " + v->dump());
}

double ConfigReader::number(std::string_view key, std::optional<double> fallback) const {
  const auto* v = find(key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    bad(key, "missing");
  }
  if (!v->is_number()) bad(key, "expected a number, got " + v->dump());
  return v->get<double>();
}

std::string ConfigReader::string(std::string_view key,
                                 std::optional<std::string> fallback) const {
  const auto* v = find(key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    bad(key, "missing");
  }
  if (!v->is_string()) bad(key, "expected a string, got " + v->dump());
  return v->get<std::string>();
}

ParsedNumpyDType ConfigReader::dtype(std::string_view key,
                                     std::optional<std::string> fallback) const {
  const std::string text = string(key, std::move(fallback));
  try {
    return parse_numpy_dtype(text);
  } catch (const MetadataError& e) {
    bad(key, e.what());
  }
}

namespace {
struct ScratchStack {
  std::deque<Buffer> buffers;  // deque: growing keeps earlier buffers' addresses
  std::size_t depth = 0;
};
thread_local ScratchStack t_scratch;
}  // namespace

ScratchLease::ScratchLease() {
  auto& stack = t_scratch;
  if (stack.depth == stack.buffers.size()) stack.buffers.emplace_back();
  buffer_ = &stack.buffers[stack.depth++];
}

ScratchLease::~ScratchLease() { --t_scratch.depth; }

bool grow_output(Buffer& out, std::uint64_t cap) {
  const std::uint64_t size = out.size();
  if (size >= cap) return false;
  std::uint64_t next = std::max<std::uint64_t>(size * 2, 64 * 1024);
  out.resize(static_cast<std::size_t>(std::min(next, cap)));
  return true;
}

}  // namespace lazycube::codec::detail
