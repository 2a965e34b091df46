// BatchOptions::from_json: the generator's arguments as one document, parsed and checked once
// for Python (lazycube._core.BatchGenerator), the CLI (lazycube bench) and C++ callers.
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "lazycube/batch/batch_generator.hpp"
#include "lazycube/error.hpp"
#include "json_fields.hpp"
#include "sample_order.hpp"

namespace lazycube::batch {

namespace {
namespace options_json {

using namespace json_fields;
using Json = nlohmann::ordered_json;

TargetSpec to_target(const Json& v) {
  TargetSpec t;
  if (!v.is_object()) {
    if (!v.is_string() && !v.is_array())
      bad("target", "a variable name, a list of names or {\"variables\", \"offset\"}", v);
    t.variables = to_names(v, "target");
    return t;
  }
  for (const auto& [key, value] : v.items()) {
    if (key == "variables") {
      if (!value.is_null()) t.variables = to_names(value, "target['variables']");
    } else if (key == "offset") {
      if (!value.is_null()) t.offset = to_overlaps(value, "target['offset']");
    } else {
      throw UsageError("target takes the keys 'variables' and 'offset', not '" + key + "'");
    }
  }
  if (t.variables.empty() && t.offset.empty()) throw UsageError("target needs 'variables' and/or 'offset'");
  return t;
}

ValidityFilter to_filter(const Json& v) {
  if (!v.is_object()) bad("filter", "an object like {\"variable\": \"t2m\", \"max_nan_fraction\": 0.1}", v);
  ValidityFilter f;
  for (const auto& [key, value] : v.items()) {
    if (key == "variable") {
      if (!value.is_null()) f.variable = to_string(value, "filter['variable']");
    } else if (key == "max_nan_fraction") {
      if (!value.is_number()) bad("filter['max_nan_fraction']", "a number", value);
      f.max_nan_fraction = value.get<double>();
    } else {
      throw UsageError("filter takes the keys 'variable' and 'max_nan_fraction', not '" + key + "'");
    }
  }
  return f;
}

std::vector<VariableStats> to_normalize(const Json& v) {
  if (v.is_string()) return read_stats_file(v.get<std::string>());
  if (!v.is_object()) bad("normalize", "a stats document or the path of a stats JSON file", v);
  try {
    return stats_from_json(nlohmann::json::parse(v.dump()));
  } catch (const UsageError& e) {
    throw UsageError(std::string("normalize: ") + e.what());
  }
}

// [a, b]: two unsigned integers (UsageError naming `field` otherwise).
std::pair<std::uint64_t, std::uint64_t> to_pair(const Json& v, const char* field, const char* want) {
  if (!v.is_array() || v.size() != 2) bad(field, want, v);
  return {to_uint(v[0], field), to_uint(v[1], field)};
}

EpochRemainder to_remainder(const Json& v) {
  const char* want =
      "{\"epoch\": e, \"remaining\": [[begin, end], ...]} (and optionally \"planned_for\": [world_size, num_workers], "
      "\"blocks\": [block_samples, active_blocks])";
  if (!v.is_object() || !v.contains("epoch") || !v.contains("remaining")) bad("resume", want, v);
  for (const auto& [key, value] : v.items())
    if (key != "epoch" && key != "remaining" && key != "planned_for" && key != "blocks") bad("resume", want, v);
  EpochRemainder r;
  if (v.contains("planned_for") && !v["planned_for"].is_null()) {
    const auto [world, workers] = to_pair(v["planned_for"], "resume.planned_for", "[world_size, num_workers]");
    constexpr auto u32 = std::uint64_t{std::numeric_limits<std::uint32_t>::max()};
    if (world == 0 || workers == 0 || world > u32 || workers > u32)
      bad("resume.planned_for", "[world_size, num_workers], each at least 1", v["planned_for"]);
    r.planned_world_size = static_cast<std::uint32_t>(world);
    r.planned_num_workers = static_cast<std::uint32_t>(workers);
  }
  if (v.contains("blocks") && !v["blocks"].is_null()) {
    const auto [samples, active] = to_pair(v["blocks"], "resume.blocks", "[block_samples, active_blocks]");
    r.blocks = {samples, active};
  }
  r.epoch = to_uint(v["epoch"], "resume.epoch");
  const Json& ranges = v["remaining"];
  if (!ranges.is_array()) bad("resume.remaining", "a list of [begin, end] pairs", ranges);
  for (const Json& pair : ranges) {
    if (!pair.is_array() || pair.size() != 2) bad("resume.remaining", "a list of [begin, end] pairs", pair);
    r.remaining.push_back({to_uint(pair[0], "resume.remaining"), to_uint(pair[1], "resume.remaining")});
  }
  return r;
}

}  // namespace options_json
}  // namespace

const std::vector<std::string>& BatchOptions::json_keys() {
  static const std::vector<std::string> keys = {
      "input_dims", "input_overlap", "batch_dims", "concat_input_dims", "batch_size", "drop_last",
      "variables", "dtype", "float_dtype", "target", "filter", "normalize", "shuffle", "seed",
      "rank", "world_size", "worker", "num_workers", "resume", "block_samples", "active_blocks", "prefetch",
      "fetch_ahead_bytes", "cache_bytes"};
  return keys;
}

BatchOptions BatchOptions::from_json(const nlohmann::ordered_json& document) {
  using namespace options_json;
  if (!document.is_object()) bad("the batch options", "an object", document);
  constexpr auto u32 = std::uint64_t{std::numeric_limits<std::uint32_t>::max()};
  BatchOptions o;
  for (const auto& [key, v] : document.items()) {
    if (v.is_null()) {
      bool known = false;
      for (const auto& k : json_keys()) known = known || k == key;
      if (known) continue;  // null: the default
    }
    if (key == "input_dims") {
      o.input_dims = to_dim_sizes(v, key);
    } else if (key == "input_overlap") {
      o.input_overlap = to_overlaps(v, key);
    } else if (key == "batch_dims") {
      o.batch_dims = to_dim_sizes(v, key);
    } else if (key == "concat_input_dims") {
      o.concat_input_dims = to_bool(v, key);
    } else if (key == "batch_size") {
      o.batch_size = to_uint(v, key);
    } else if (key == "drop_last") {
      o.drop_last = to_bool(v, key);
    } else if (key == "variables") {
      o.variables = to_names(v, key);
    } else if (key == "dtype") {
      o.dtype = to_dtype(v, key);
    } else if (key == "float_dtype") {
      o.float_dtype = to_dtype(v, key);
    } else if (key == "target") {
      o.target = to_target(v);
    } else if (key == "filter") {
      o.filter = to_filter(v);
    } else if (key == "normalize") {
      o.normalize = to_normalize(v);
    } else if (key == "shuffle") {
      o.shuffle = to_shuffle(v);
    } else if (key == "seed") {
      o.seed = to_uint(v, key);
    } else if (key == "rank") {
      o.shard.rank = static_cast<std::uint32_t>(to_uint(v, key, u32));
    } else if (key == "world_size") {
      o.shard.world_size = static_cast<std::uint32_t>(to_uint(v, key, u32));
    } else if (key == "worker") {
      o.shard.worker = static_cast<std::uint32_t>(to_uint(v, key, u32));
    } else if (key == "num_workers") {
      o.shard.num_workers = static_cast<std::uint32_t>(to_uint(v, key, u32));
    } else if (key == "resume") {
      o.resume = to_remainder(v);
    } else if (key == "block_samples") {
      o.blocks.block_samples = to_uint(v, key);
    } else if (key == "active_blocks") {
      o.blocks.active_blocks = to_uint(v, key);
    } else if (key == "prefetch") {
      o.prefetch = static_cast<std::size_t>(to_uint(v, key, std::numeric_limits<std::size_t>::max()));
    } else if (key == "fetch_ahead_bytes") {
      o.fetch_ahead_bytes = to_uint(v, key);
    } else if (key == "cache_bytes") {
      o.cache = std::make_shared<ChunkCache>(to_uint(v, key));
    } else {
      std::string known;
      for (const auto& k : json_keys()) known += (known.empty() ? "" : ", ") + k;
      throw UsageError("unknown batch option '" + key + "' (known: " + known + ")");
    }
  }
  return o;
}

}  // namespace lazycube::batch
