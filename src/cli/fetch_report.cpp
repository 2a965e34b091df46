// What an epoch fetched, as both bench commands report it (docs/forecast.md "What an epoch
// costs"): chunks fetched (a request each, or one read of a shard's inner chunk), their decoded
// bytes, the decoded bytes of the distinct chunks read and the egress ratio.
#include <cstdio>

#include "commands.hpp"

namespace lazycube::cli {

nlohmann::ordered_json fetched_json(const CacheStats& cs) {
  return {{"requests", cs.misses},
          {"bytes", cs.bytes_fetched},
          {"bytes_needed", cs.bytes_unique},
          {"egress_ratio", cs.read_amplification()}};
}

std::string fetched_line(const CacheStats& cs) {
  char line[256];
  std::snprintf(line, sizeof line,
                "  fetched        %llu chunks, %.1f MB decoded for %.1f MB of distinct chunks: egress %.2fx\n",
                static_cast<unsigned long long>(cs.misses), static_cast<double>(cs.bytes_fetched) / 1e6,
                static_cast<double>(cs.bytes_unique) / 1e6, cs.read_amplification());
  return line;
}

}  // namespace lazycube::cli
