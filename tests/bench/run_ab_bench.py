#!/usr/bin/env python3
"""A/B of lazycube's own read, batch, stream and convert paths: this build against another (the
previous main's) in one run, round by round, printing each row's ratio.

  /usr/bin/python3 tests/bench/run_ab_bench.py --baseline OLD_BUILD_DIR [--rounds 5] [--quick]
                                               [--only read,batch,stream,convert]

OLD_BUILD_DIR is a build folder of the other revision holding `lazycube` and (for the read rows)
`tests/bench/lazycube_bench_read`, e.g.

  git worktree add /tmp/main-before <rev>
  cmake -S /tmp/main-before -B /tmp/main-before/build -G Ninja -DLAZYCUBE_BUILD_TESTS=OFF \
        -DLAZYCUBE_BUILD_PYTHON=OFF -DLAZYCUBE_BUILD_TORCH=OFF -DLAZYCUBE_BUILD_CUDA=OFF
  cmake --build /tmp/main-before/build --target lazycube_cli lazycube_bench_read

Rows (the workloads of docs/benchmarks.md, lazycube's side only; the data of their drivers):
- read: `lazycube_bench_read lazycube` over run_read_bench's 512 MiB stores (blosc-lz4, zstd-3):
  seconds per whole-array read;
- batch: `lazycube bench` over run_batch_bench's store, chunk and random shuffle (300 batches):
  windows/s;
- stream: `lazycube bench` over nginx with 50 ms latency, run_stream_bench's 1,024-chunk store,
  chunk shuffle: windows/s;
- convert: `lazycube convert` of run_convert_bench's 2.4 GB store to Zarr v2 time series: seconds.
Each round runs every row once with each build, the order of the two builds alternating from
round to round; a row's ratio is the median over rounds of (this build / baseline) in time
(lower is better: read, convert) or in rate (higher is better: batch, stream). The issue's bar:
no slower than 3 %. A report, not a test: it exits non-zero only when a run fails.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import make_batch_bench_data  # noqa: E402
import make_bench_data  # noqa: E402
import run_batch_bench  # noqa: E402
import run_convert_bench  # noqa: E402
import run_stream_bench  # noqa: E402
from bench_common import Nginx, run_json, settle, warm, warn_if_busy  # noqa: E402

ROWS = ("read", "batch", "stream", "convert")


def read_rows(cache, quick):
    stores = make_bench_data.ensure(cache, "quick" if quick else "full", verbose=True)
    for variant, store in stores.items():
        warm(store)
        yield (f"read {variant}", "s", lambda build, store=store: run_json(
            [os.path.join(build, "tests", "bench", "lazycube_bench_read"), "lazycube", store, "--runs", "1"])["seconds"])


def batch_rows(cache, quick):
    store = make_batch_bench_data.ensure(cache, verbose=True)
    warm(store)
    batches = ["--max-batches", "40" if quick else "300"]
    for shuffle in ("chunk", "random"):
        yield (f"batch {shuffle} shuffle", "windows/s", lambda build, shuffle=shuffle: run_batch_bench.run_lazycube(
            os.path.join(build, "lazycube"), store, ["--shuffle", shuffle] + batches)["windows_per_s"])


class StreamRows:
    """The 50 ms stream over nginx (started once, stopped at the end)."""

    def __init__(self, cache):
        os.makedirs(cache, exist_ok=True)
        run_stream_bench.write_store(cache, "era-long.zarr", run_stream_bench.NT_LONG)
        warm(os.path.join(cache, "era-long.zarr"))
        self.nginx = Nginx(os.path.join(cache, "nginx"), cache, "/era-long.zarr/.zmetadata")
        self.nginx.set_faults({"latency_ms": 50})
        self.url = self.nginx.base + "/era-long.zarr"

    def rows(self):
        yield ("stream 50 ms, 1,024 chunks", "windows/s", lambda build: run_stream_bench.bench(
            os.path.join(build, "lazycube"), self.url, "chunk", 64)["windows_per_s"])

    def stop(self):
        self.nginx.stop()


def convert_rows(cache, quick):
    size = "quick" if quick else "full"
    src, _ = run_convert_bench.ensure_store(cache, size, verbose=True)
    warm(src)
    cfg = run_convert_bench.SIZES[size]
    out = os.path.join(cache, size, "ab-out.zarr")

    def run(build):
        import shutil
        shutil.rmtree(out, ignore_errors=True)
        cmd = [os.path.join(build, "lazycube"), "convert", src, out, "--chunks",
               run_convert_bench.dims_text(cfg["chunks"]), "--codec", run_convert_bench.CODEC, "--no-progress",
               "--format", "2"]
        seconds, _, _, _ = run_convert_bench.timed(cmd)
        shutil.rmtree(out, ignore_errors=True)
        return seconds

    yield ("convert to Zarr v2", "s", run)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="the other revision's build folder")
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    ap.add_argument("--cache", default=os.path.join(REPO, "build", "bench-data"), help="bench data (written once)")
    ap.add_argument("--stream-cache", default="/tmp/lazycube-stream-bench")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default=",".join(ROWS), help="comma-separated subset of " + ", ".join(ROWS))
    ap.add_argument("--quick", action="store_true", help="the drivers' small data (smoke run)")
    ap.add_argument("--settle", type=float, default=1.0, help="least seconds between timed runs")
    ap.add_argument("--json", action="store_true", help="print one JSON document at the end")
    args = ap.parse_args()
    builds = {"this build": os.path.abspath(args.build_dir), "baseline": os.path.abspath(args.baseline)}
    only = [r.strip() for r in args.only.split(",") if r.strip()]
    unknown = set(only) - set(ROWS)
    if unknown:
        raise SystemExit(f"--only: unknown rows {sorted(unknown)} (known: {', '.join(ROWS)})")
    load = warn_if_busy()
    rows, stream = [], None
    try:
        if "read" in only:
            rows += list(read_rows(args.cache, args.quick))
        if "batch" in only:
            rows += list(batch_rows(args.cache, args.quick))
        if "stream" in only:
            stream = StreamRows(args.stream_cache)
            rows += list(stream.rows())
        if "convert" in only:
            rows += list(convert_rows(os.path.join(args.cache, "convert"), args.quick))
        values = {name: {b: [] for b in builds} for name, _, _ in rows}
        for r in range(args.rounds):
            order = list(builds) if r % 2 == 0 else list(reversed(builds))
            for name, unit, fn in rows:
                for b in order:
                    settle(args.settle)
                    values[name][b].append(fn(builds[b]))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    finally:
        if stream:
            stream.stop()
    report = {"date": time.strftime("%Y-%m-%dT%H:%M:%S"), "builds": builds, "rounds": args.rounds,
              "loadavg_at_start": load, "rows": []}
    print(f"\n{'row':<34} {'unit':>10} {'this build':>12} {'baseline':>12} {'ratio':>7}  (median of per-round ratios; "
          "time: this/baseline, rate: this/baseline)")
    for name, unit, _ in rows:
        mine, base = values[name]["this build"], values[name]["baseline"]
        ratios = [m / b for m, b in zip(mine, base)]
        ratio = statistics.median(ratios)
        slower = ratio > 1.03 if unit == "s" else ratio < 0.97
        print(f"{name:<34} {unit:>10} {statistics.median(mine):>12.4g} {statistics.median(base):>12.4g} "
              f"{ratio:>7.3f}{'  SLOWER than 3 %' if slower else ''}")
        report["rows"].append({"row": name, "unit": unit, "this_build": mine, "baseline": base, "ratios": ratios,
                               "median_ratio": ratio, "slower_than_3_percent": slower})
    if args.json:
        print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
