// LZMA (v2 id "lzma", v3 "numcodecs.lzma") with numcodecs' configuration: format
// (0 auto, 1 xz, 2 alone, 3 raw), check, preset and a Python-style filter chain.
#include <lzma.h>

#include <algorithm>
#include <memory>
#include <vector>
#include <nlohmann/json.hpp>

#include "codec_registry.hpp"
#include "codec_util.hpp"

namespace lazycube::codec::detail {
namespace {

enum Format { kAuto = 0, kXz = 1, kAlone = 2, kRaw = 3 };

// A liblzma filter chain with storage for each filter's options.
struct FilterChain {
  std::vector<lzma_filter> filters;  // terminated by LZMA_VLI_UNKNOWN
  std::vector<std::unique_ptr<lzma_options_lzma>> lzma_opts;
  std::vector<std::unique_ptr<lzma_options_delta>> delta_opts;
  std::vector<std::unique_ptr<lzma_options_bcj>> bcj_opts;
  nlohmann::json json;  // as configured, for to_json
};

std::shared_ptr<FilterChain> parse_filters(const ConfigReader& cfg, const nlohmann::json& list) {
  auto chain = std::make_shared<FilterChain>();
  chain->json = list;
  if (!list.is_array() || list.empty() || list.size() > LZMA_FILTERS_MAX)
    cfg.bad("filters", "expected a list of 1.." + std::to_string(LZMA_FILTERS_MAX) + " filters");
  for (const auto& f : list) {
    ConfigReader fc(cfg.codec(), f);
    if (!f.is_object()) cfg.bad("filters", "each filter must be an object");
    const auto raw_id = fc.integer("id");
    const auto id = static_cast<lzma_vli>(raw_id);
    lzma_filter filter{id, nullptr};
    if (id == LZMA_FILTER_LZMA1 || id == LZMA_FILTER_LZMA2) {
      auto opts = std::make_unique<lzma_options_lzma>();
      const auto preset = fc.integer("preset", LZMA_PRESET_DEFAULT);
      if (lzma_lzma_preset(opts.get(), static_cast<std::uint32_t>(preset)))
        cfg.bad("filters", "bad lzma preset " + std::to_string(preset));
      auto set = [&](const char* key, std::uint32_t& field) {
        if (fc.has(key)) field = static_cast<std::uint32_t>(fc.integer(key));
      };
      set("dict_size", opts->dict_size);
      set("lc", opts->lc);
      set("lp", opts->lp);
      set("pb", opts->pb);
      set("nice_len", opts->nice_len);
      set("depth", opts->depth);
      if (fc.has("mode")) opts->mode = static_cast<lzma_mode>(fc.integer("mode"));
      if (fc.has("mf")) opts->mf = static_cast<lzma_match_finder>(fc.integer("mf"));
      filter.options = opts.get();
      chain->lzma_opts.push_back(std::move(opts));
    } else if (id == LZMA_FILTER_DELTA) {
      auto opts = std::make_unique<lzma_options_delta>();
      opts->type = LZMA_DELTA_TYPE_BYTE;
      const auto dist = fc.integer("dist", 1);
      if (dist < LZMA_DELTA_DIST_MIN || dist > LZMA_DELTA_DIST_MAX)
        cfg.bad("filters", "delta dist must be 1..256");
      opts->dist = static_cast<std::uint32_t>(dist);
      filter.options = opts.get();
      chain->delta_opts.push_back(std::move(opts));
    } else if (id == LZMA_FILTER_X86 || id == LZMA_FILTER_POWERPC || id == LZMA_FILTER_IA64 ||
               id == LZMA_FILTER_ARM || id == LZMA_FILTER_ARMTHUMB || id == LZMA_FILTER_SPARC) {
      auto opts = std::make_unique<lzma_options_bcj>();
      opts->start_offset = static_cast<std::uint32_t>(fc.integer("start_offset", 0));
      filter.options = opts.get();
      chain->bcj_opts.push_back(std::move(opts));
    } else {
      cfg.bad("filters", "unsupported lzma filter id " + std::to_string(raw_id));
    }
    chain->filters.push_back(filter);
  }
  chain->filters.push_back({LZMA_VLI_UNKNOWN, nullptr});
  return chain;
}

std::string lzma_message(lzma_ret r) {
  switch (r) {
    case LZMA_FORMAT_ERROR: return "not in the expected format";
    case LZMA_DATA_ERROR: return "corrupt stream";
    case LZMA_BUF_ERROR: return "truncated stream";
    case LZMA_MEM_ERROR: return "out of memory";
    case LZMA_MEMLIMIT_ERROR: return "memory limit reached";
    case LZMA_OPTIONS_ERROR: return "unsupported options";
    case LZMA_UNSUPPORTED_CHECK: return "unsupported integrity check";
    default: return "error " + std::to_string(static_cast<int>(r));
  }
}

// Runs an initialised decoder over all of `in`, output bounded by `cap`.
void run_decoder(lzma_stream& strm, ByteView in, Buffer& out, std::uint64_t cap) {
  std::size_t produced = 0;
  std::byte probe[1];
  out.clear();
  strm.next_in = reinterpret_cast<const std::uint8_t*>(in.data());
  strm.avail_in = in.size();
  for (;;) {
    const bool at_cap = produced == out.size() && !grow_output(out, cap);
    strm.next_out = reinterpret_cast<std::uint8_t*>(at_cap ? probe : out.data() + produced);
    strm.avail_out = at_cap ? 1 : out.size() - produced;
    const std::size_t before = strm.avail_out;
    const lzma_ret r = lzma_code(&strm, LZMA_FINISH);
    if (at_cap && strm.avail_out == 0)
      fail("lzma: decoded more than the limit of " + std::to_string(cap) + " bytes");
    if (!at_cap) produced += before - strm.avail_out;
    if (r == LZMA_STREAM_END) break;
    if (r != LZMA_OK) fail("lzma: " + lzma_message(r));
    if (strm.avail_in == 0 && strm.avail_out != 0) fail("lzma: truncated stream");
  }
  out.resize(produced);
}

class LzmaCodec final : public BytesToBytesCodec {
 public:
  LzmaCodec(std::string name, int format, int check, std::uint32_t preset, bool preset_given,
            std::shared_ptr<FilterChain> filters)
      : name_(std::move(name)), format_(format), check_(check), preset_(preset),
        preset_given_(preset_given), filters_(std::move(filters)) {}

  std::string name() const override { return name_; }

  ByteView decode(ByteView in, Buffer& scratch, const DecodeLimits& limits) const override {
    lzma_stream strm = LZMA_STREAM_INIT;
    struct Guard {
      lzma_stream* s;
      ~Guard() { lzma_end(s); }
    } guard{&strm};
    // Bounds what a corrupt header can make liblzma allocate (presets need at most ~700 MiB).
    const std::uint64_t memlimit = std::uint64_t{1} << 30;
    lzma_ret r = LZMA_OK;
    switch (format_) {
      case kAuto: r = lzma_auto_decoder(&strm, memlimit, LZMA_CONCATENATED); break;
      case kXz: r = lzma_stream_decoder(&strm, memlimit, LZMA_CONCATENATED); break;
      case kAlone: r = lzma_alone_decoder(&strm, memlimit); break;
      case kRaw: r = lzma_raw_decoder(&strm, filters_->filters.data()); break;
    }
    if (r != LZMA_OK) fail("lzma: cannot start decoder: " + lzma_message(r));
    run_decoder(strm, in, scratch, decode_cap(limits));
    check_exact("lzma", scratch.size(), limits);
    return scratch.view();
  }

  // No single documented figure for every container: xz's lzma_stream_buffer_bound is n plus a
  // few bytes per 64 KiB and headers; this allows n / 32 and 64 KiB more.
  std::optional<std::uint64_t> max_encoded_size(std::uint64_t n) const override { return n + n / 32 + (64u << 10); }

  Buffer encode(ByteView in) const override {
    lzma_stream strm = LZMA_STREAM_INIT;
    struct Guard {
      lzma_stream* s;
      ~Guard() { lzma_end(s); }
    } guard{&strm};
    lzma_ret r = LZMA_OK;
    if (format_ == kXz || format_ == kAuto) {
      const auto check = check_ < 0 ? LZMA_CHECK_CRC64 : static_cast<lzma_check>(check_);
      r = filters_ ? lzma_stream_encoder(&strm, filters_->filters.data(), check)
                   : lzma_easy_encoder(&strm, preset_, check);
    } else if (format_ == kAlone) {
      lzma_options_lzma opts;
      if (filters_) {
        opts = *filters_->lzma_opts.at(0);
      } else if (lzma_lzma_preset(&opts, preset_)) {
        fail("lzma: bad preset");
      }
      r = lzma_alone_encoder(&strm, &opts);
    } else {
      r = lzma_raw_encoder(&strm, filters_->filters.data());
    }
    if (r != LZMA_OK) fail("lzma: cannot start encoder: " + lzma_message(r));
    Buffer out(in.size() + in.size() / 2 + 1024);
    strm.next_in = reinterpret_cast<const std::uint8_t*>(in.data());
    strm.avail_in = in.size();
    std::size_t produced = 0;
    for (;;) {
      if (produced == out.size()) out.resize(out.size() * 2);
      strm.next_out = reinterpret_cast<std::uint8_t*>(out.data() + produced);
      strm.avail_out = out.size() - produced;
      const std::size_t before = strm.avail_out;
      r = lzma_code(&strm, LZMA_FINISH);
      produced += before - strm.avail_out;
      if (r == LZMA_STREAM_END) break;
      if (r != LZMA_OK) fail("lzma: compression failed: " + lzma_message(r));
    }
    out.resize(produced);
    return out;
  }

  nlohmann::json to_json() const override {
    nlohmann::json c{{"format", format_}, {"check", check_}};
    c["preset"] = preset_given_ ? nlohmann::json(preset_) : nlohmann::json(nullptr);
    c["filters"] = filters_ ? filters_->json : nlohmann::json(nullptr);
    return {{"name", name_}, {"configuration", c}};
  }

 private:
  std::string name_;
  int format_, check_;
  std::uint32_t preset_;
  bool preset_given_;
  std::shared_ptr<FilterChain> filters_;
};

}  // namespace

BytesCodecPtr make_lzma(const std::string& name, const nlohmann::json& config, const ChunkSpec&) {
  ConfigReader cfg(name, config);
  const auto format = cfg.integer("format", kXz);
  if (format < kAuto || format > kRaw) cfg.bad("format", "must be 0 (auto), 1 (xz), 2 (alone) or 3 (raw)");
  const auto check = cfg.integer("check", -1);
  if (check != -1 && check != LZMA_CHECK_NONE && check != LZMA_CHECK_CRC32 &&
      check != LZMA_CHECK_CRC64 && check != LZMA_CHECK_SHA256)
    cfg.bad("check", "must be -1, 0, 1, 4 or 10");
  const bool preset_given = cfg.has("preset");
  const auto preset = cfg.integer("preset", LZMA_PRESET_DEFAULT);
  if (preset < 0 || (preset & ~static_cast<std::int64_t>(LZMA_PRESET_EXTREME)) > 9)
    cfg.bad("preset", "must be 0..9, optionally with the extreme flag");
  std::shared_ptr<FilterChain> filters;
  if (const auto* f = cfg.find("filters")) {
    if (preset_given) cfg.bad("preset", "cannot be combined with filters");
    filters = parse_filters(cfg, *f);
  }
  if (format == kRaw && !filters) cfg.bad("filters", "required for raw format (3)");
  if (format != kRaw && format != kXz && filters && format != kAlone)
    cfg.bad("filters", "only allowed with xz (1), alone (2) or raw (3) format");
  if (format == kAlone && filters &&
      (filters->filters.size() != 2 || filters->filters[0].id != LZMA_FILTER_LZMA1))
    cfg.bad("filters", "alone format (2) takes exactly one LZMA1 filter");
  return std::make_shared<LzmaCodec>(name, static_cast<int>(format), static_cast<int>(check),
                                     static_cast<std::uint32_t>(preset), preset_given,
                                     std::move(filters));
}

}  // namespace lazycube::codec::detail

LAZYCUBE_REGISTER_CODEC(lzma) {
  using namespace lazycube::codec::detail;
  registry.add({.id = "lzma", .names = kV2 | kV3Numcodecs, .bytes = make_lzma});
}
