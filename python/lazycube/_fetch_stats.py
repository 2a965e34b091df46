"""What an epoch fetched, from a chunk cache's counters (docs/forecast.md "What an epoch costs"):
one spelling of it for ForecastSamples, BatchGenerator and the torch datasets."""

FETCH_KEYS = ("requests", "bytes", "bytes_needed")


def fetch_stats_of(cache_stats) -> dict:
    """``requests`` (chunks fetched and decoded: a request each, or one read of a shard's inner
    chunk), ``bytes`` (their decoded bytes), ``bytes_needed`` (decoded bytes of the distinct chunks
    read) and ``egress_ratio`` = bytes / bytes_needed (1.0: every chunk fetched once; 0 before
    any fetch)."""
    out = {"requests": int(cache_stats["misses"]), "bytes": int(cache_stats["bytes_fetched"]),
           "bytes_needed": int(cache_stats["bytes_unique"])}
    return with_ratio(out)


def with_ratio(counts) -> dict:
    """`counts` (FETCH_KEYS) with its egress_ratio."""
    out = {k: int(counts[k]) for k in FETCH_KEYS}
    out["egress_ratio"] = out["bytes"] / out["bytes_needed"] if out["bytes_needed"] else 0.0
    return out
