#!/usr/bin/python3
"""The persistent chunk cache (--cache-dir, issue 20) over nginx with 50 ms injected latency:
an epoch with an empty cache directory, the next epoch in a new process reading through the
now-full directory (a separate run: one HEAD per chunk to check its ETag, then local files), and
the same epoch on the local files. Each row is its own `lazycube bench --json` process over
run_stream_bench.py's `era-long.zarr` (1,024 chunks of 256 x 256 float32, blosc lz4), chunk
shuffle, in-memory chunk cache off (--cache-mb 0) so every chunk is read from the store.
Targets (the issue): second epoch >= 10x the first and >= 0.8x local. A report, not a test.
"""
import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import Nginx, REPO, run_json, warm, warn_if_busy  # noqa: E402
from run_stream_bench import NT_LONG, WINDOW, write_store  # noqa: E402


def epoch(cli, url, extra=()):
    return run_json([cli, "bench", url, "--variables", "t2m", "--input-dims", WINDOW, "--batch-size", "32",
                     "--shuffle", "chunk", "--cache-mb", "0", "--fetch-ahead-mb", "0", "--json", *extra])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cli", default=os.path.join(REPO, "build", "lazycube"))
    p.add_argument("--cache", default="/tmp/lazycube-stream-bench", help="data directory (shared with run_stream_bench)")
    p.add_argument("--latency-ms", type=int, default=50)
    args = p.parse_args()
    warn_if_busy()
    write_store(args.cache, "era-long.zarr", NT_LONG)
    local = os.path.join(args.cache, "era-long.zarr")
    warm(local)
    cache_dir = os.path.join(args.cache, "diskcache")
    shutil.rmtree(cache_dir, ignore_errors=True)
    nginx = Nginx(os.path.join(args.cache, "nginx-diskcache"), args.cache, "/era-long.zarr/.zmetadata",
                  {"latency_ms": args.latency_ms})
    try:
        url = nginx.base + "/era-long.zarr"
        flags = ("--cache-dir", cache_dir)
        first = epoch(args.cli, url, flags)
        second = epoch(args.cli, url, flags)
        on_disk = epoch(args.cli, local)
    finally:
        nginx.stop()
        shutil.rmtree(cache_dir, ignore_errors=True)
    rate = {k: r["windows_per_s"] for k, r in (("first", first), ("second", second), ("local", on_disk))}
    for k, v in rate.items():
        print(f"{k:>6} epoch: {v:12.0f} windows/s")
    print(f"second / first: {rate['second'] / rate['first']:.2f}x (target >= 10)")
    print(f"second / local: {rate['second'] / rate['local']:.2f}x (target >= 0.8)")


if __name__ == "__main__":
    main()
