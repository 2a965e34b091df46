// Options of the HTTP-family stores (plain HTTP here; S3/GCS reuse them) parsed from
// fsspec-style storage options.
#pragma once

#include <cstdint>

#include "http_engine.hpp"
#include "lazycube/store/store.hpp"

namespace lazycube::http {

struct HttpOptions {
  EngineOptions engine;
  RetryPolicy retry;
  std::uint64_t coalesce_gap = 64 * 1024;        // merge ranges of one object this close...
  std::uint64_t coalesce_max = 16 * 1024 * 1024;  // ...into requests at most this long
};

// max_concurrency, timeout, connect_timeout, low_speed_time, retries, deadline, backoff,
// max_backoff, ca_file, coalesce_gap, coalesce_max. An unknown option is a StoreError naming it.
HttpOptions parse_http_options(const StoreOptions& options);

}  // namespace lazycube::http
