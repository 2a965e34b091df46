#!/usr/bin/env python3
"""A/B of lazycube's own read, batch, stream and convert paths: this build against another (the
previous main's) in one run, round by round, printing each row's ratio.

  /usr/bin/python3 tests/bench/run_ab_bench.py --baseline OLD_BUILD_DIR [--rounds 5] [--quick]
                                               [--fixed-baseline FIXED_BUILD_DIR]
                                               [--only read,batch,warm,stream,convert]

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
- warm: issue 47's warm epoch: `lazycube bench STORE --variables t2m,u10,v10,msl --input-dims
  time=1,latitude=64,longitude=64 --batch-size 32 --shuffle random --seed 1 --epochs 10 --json`
  over make_batch_bench_data's 128-step store (133 MB decoded: every chunk stays cached after
  the first epoch), one run giving three rows: the median of epochs 2..10 (`epoch_seconds`), the
  first epoch and the first batch (s); beside them the gather's bound, `lazycube_bench_gather`
  of this build (the same window rows copied with one memcpy each on both cores: median warm
  epoch, s), and each build's warm epoch as a share of that bound;
- stream: `lazycube bench` over nginx with 50 ms latency, run_stream_bench's 1,024-chunk store,
  chunk shuffle: windows/s;
- convert: `lazycube convert` of run_convert_bench's 2.4 GB store to Zarr v2 time series: seconds.
Each round runs every row once with each build, the order of the builds rotating from round to
round; a row's ratio is the median over rounds of (this build / baseline) in time (lower is
better: read, warm, convert) or in rate (higher is better: batch, stream). The issue's bar: no
slower than 3 %. --fixed-baseline adds a third build to the batch and warm rows (a fixed older
revision, e.g. 27c9824 since issue 47, so that a slow drift across several mains shows), with
its own ratio column. A report, not a test: it exits non-zero only when a run fails.
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

ROWS = ("read", "batch", "warm", "stream", "convert")
# Rows the fixed baseline (--fixed-baseline) runs too.
FIXED_ROWS = ("batch", "warm")
WARM_STEPS = 128
WARM_EPOCHS = 10


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


class WarmRows:
    """Issue 47's warm epoch: one `lazycube bench` run per build and round gives three rows."""
    NAMES = (("warm epoch (median of 2..10)", "s"), ("warm: first epoch", "s"), ("warm: first batch", "s"))

    def __init__(self, cache, quick):
        self.store = make_batch_bench_data.ensure(cache, verbose=True, nt=WARM_STEPS)
        warm(self.store)
        self.epochs = 3 if quick else WARM_EPOCHS
        self.last = {}

    def run(self, build):
        cmd = [os.path.join(build, "lazycube"), "bench", self.store, "--variables", "t2m,u10,v10,msl",
               "--input-dims", "time=1,latitude=64,longitude=64", "--batch-size", "32", "--shuffle", "random",
               "--seed", "1", "--epochs", str(self.epochs), "--json"]
        r = run_json(cmd)
        epochs = r["epoch_seconds"]
        return {self.NAMES[0][0]: statistics.median(epochs[1:]), self.NAMES[1][0]: epochs[0],
                self.NAMES[2][0]: r["time_to_first_batch_s"]}

    def bound(self, build):
        """The gather's bound with this build's lazycube_bench_gather (median warm epoch, s)."""
        exe = os.path.join(build, "tests", "bench", "lazycube_bench_gather")
        return run_json([exe, "--steps", str(WARM_STEPS), "--epochs", str(self.epochs), "--threads",
                         str(min(2, os.cpu_count() or 1))])["median_warm_epoch_s"]


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


class Group:
    """Rows measured by one call: fn(build) -> {row name: value}; `fixed`: the fixed baseline
    runs them too."""

    def __init__(self, names, fn, fixed):
        self.names, self.fn, self.fixed = names, fn, fixed


def single(name, unit, fn, fixed=False):
    return Group(((name, unit),), lambda build: {name: fn(build)}, fixed)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="the other revision's build folder (the previous main)")
    ap.add_argument("--fixed-baseline", help="a fixed older revision's build folder for the batch and warm rows "
                                             "(27c9824 since issue 47)")
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
    if args.fixed_baseline:
        builds["fixed baseline"] = os.path.abspath(args.fixed_baseline)
    only = [r.strip() for r in args.only.split(",") if r.strip()]
    unknown = set(only) - set(ROWS)
    if unknown:
        raise SystemExit(f"--only: unknown rows {sorted(unknown)} (known: {', '.join(ROWS)})")
    load = warn_if_busy()
    groups, stream, warm_rows = [], None, None
    try:
        if "read" in only:
            groups += [single(*row) for row in read_rows(args.cache, args.quick)]
        if "batch" in only:
            groups += [single(*row, fixed=True) for row in batch_rows(args.cache, args.quick)]
        if "warm" in only:
            warm_rows = WarmRows(args.cache, args.quick)
            groups.append(Group(WarmRows.NAMES, warm_rows.run, True))
        if "stream" in only:
            stream = StreamRows(args.stream_cache)
            groups += [single(*row) for row in stream.rows()]
        if "convert" in only:
            groups += [single(*row) for row in convert_rows(os.path.join(args.cache, "convert"), args.quick)]
        rows = [(name, unit, g) for g in groups for name, unit in g.names]
        values = {name: {b: [] for b in builds} for name, _, _ in rows}
        bounds = []
        labels = list(builds)
        for r in range(args.rounds):
            order = labels[r % len(labels):] + labels[:r % len(labels)]
            for g in groups:
                for b in order:
                    if b == "fixed baseline" and not g.fixed:
                        continue
                    settle(args.settle)
                    for name, v in g.fn(builds[b]).items():
                        values[name][b].append(v)
            if warm_rows:
                settle(args.settle)
                bounds.append(warm_rows.bound(builds["this build"]))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    finally:
        if stream:
            stream.stop()
    report = {"date": time.strftime("%Y-%m-%dT%H:%M:%S"), "builds": builds, "rounds": args.rounds,
              "loadavg_at_start": load, "rows": []}
    fixed = "fixed baseline" in builds
    print(f"\n{'row':<34} {'unit':>10} {'this build':>12} {'baseline':>12} {'ratio':>7}"
          + (f" {'fixed':>12} {'ratio':>7}" if fixed else "")
          + "  (median of per-round ratios; time: this/baseline, rate: this/baseline)")
    for name, unit, g in rows:
        mine, base = values[name]["this build"], values[name]["baseline"]
        ratios = [m / b for m, b in zip(mine, base)]
        ratio = statistics.median(ratios)
        slower = ratio > 1.03 if unit == "s" else ratio < 0.97
        line = f"{name:<34} {unit:>10} {statistics.median(mine):>12.4g} {statistics.median(base):>12.4g} {ratio:>7.3f}"
        row = {"row": name, "unit": unit, "this_build": mine, "baseline": base, "ratios": ratios,
               "median_ratio": ratio, "slower_than_3_percent": slower}
        if fixed and g.fixed:
            old = values[name]["fixed baseline"]
            fixed_ratios = [m / b for m, b in zip(mine, old)]
            line += f" {statistics.median(old):>12.4g} {statistics.median(fixed_ratios):>7.3f}"
            row.update({"fixed_baseline": old, "fixed_ratios": fixed_ratios,
                        "fixed_median_ratio": statistics.median(fixed_ratios)})
        elif fixed:
            line += f" {'':>12} {'':>7}"
        print(line + ("  SLOWER than 3 %" if slower else ""))
        report["rows"].append(row)
    if bounds:
        bound = statistics.median(bounds)
        warm_name = WarmRows.NAMES[0][0]
        shares = {b: bound / statistics.median(v) for b, v in values[warm_name].items() if v}
        print(f"{'gather bound (memcpy per row)':<34} {'s':>10} {bound:>12.4g}  (this build's lazycube_bench_gather, "
              f"{min(2, os.cpu_count() or 1)} threads)")
        print("warm epoch as a share of the bound: "
              + ", ".join(f"{b} {100 * share:.0f} %" for b, share in shares.items()))
        report["gather_bound"] = {"seconds": bounds, "median": bound, "share_of_bound": shares}
    if args.json:
        print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
