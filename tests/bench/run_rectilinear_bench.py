#!/usr/bin/env python3
"""Rectilinear chunk grid benchmark (issue 34): the same data read from a Zarr v3 store on a
rectilinear grid and on a regular one, in one run. Target: the rectilinear store within 5 % of
the regular one (time ratio <= 1.05) on each workload.

Data: float32 (1024, 256, 256) = 256 MiB (smooth field + seeded noise), zstd:1, written once by
lazycube.convert from a Zarr v2 source: the regular store in time chunks of 16, the rectilinear
one in the same chunks of 16 but the last, split into 8 + 8 (65 chunks against 64; a grid of
one repeated length would be read as regular). Workloads, each peer in its
own process, alternating which goes first, best of --runs per process; the ratio is the median
over the rounds of (rectilinear best / regular best):

- whole read: ``lazycube.open_dataset(store)["t"].read()`` (the direct read path);
- epoch: ``lazycube.BatchGenerator`` over windows (1, 32, 32), batches of 32, chunk shuffle
  (the cached planner, chunk starts, fetch-ahead).

    cmake --build build --target lazycube_python
    /usr/bin/python3 tests/bench/run_rectilinear_bench.py            # 5 rounds
    /usr/bin/python3 tests/bench/run_rectilinear_bench.py --quick    # 64 MiB, 3 rounds
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import REPO, warn_if_busy  # noqa: E402


def _package_path(build):
    return os.path.join(build, "python")


def make_data(build, data, steps, side):
    """The v2 source and the two v3 stores, once per size (marker file)."""
    marker = os.path.join(data, "complete-v2-%d-%d.json" % (steps, side))
    if os.path.exists(marker):
        return
    sys.path.insert(0, _package_path(build))
    import numpy as np
    import xarray as xr
    import lazycube

    rng = np.random.default_rng(34)
    y = np.linspace(0, 6, side, dtype="float32")
    field = (np.sin(y)[:, None] * np.cos(y)[None, :] * 20 + 280).astype("float32")
    values = np.empty((steps, side, side), dtype="float32")
    for t in range(steps):
        values[t] = field + np.round(rng.standard_normal((side, side)).astype("float32") * 64) / 64
    src = os.path.join(data, "src.zarr")
    xr.Dataset({"t": (("time", "y", "x"), values)}).to_zarr(src, mode="w", encoding={"t": {"chunks": (24, side, side)}})
    # The same chunks but the last, split in two: the grid is rectilinear (the reader takes the
    # rectilinear path) and the work is the regular store's, one chunk more.
    edges = [16] * (steps // 16 - 1) + [8, 8]
    lazycube.convert(src, os.path.join(data, "regular.zarr"), chunks={"time": 16}, codec="zstd:1", overwrite=True)
    lazycube.convert(src, os.path.join(data, "rectilinear.zarr"), chunks={"time": edges}, codec="zstd:1",
                     overwrite=True)
    with open(marker, "w") as f:
        json.dump({"steps": steps, "side": side, "edges": edges}, f)


def worker(build, mode, store, runs):
    sys.path.insert(0, _package_path(build))
    import numpy as np
    import lazycube

    best, check = float("inf"), None
    for _ in range(runs):
        t0 = time.perf_counter()
        if mode == "read":
            arr = np.asarray(lazycube.open_dataset(store)["t"].read())
            check = float(arr[::7, ::5, ::3].sum(dtype="float64"))
        else:
            gen = lazycube.BatchGenerator(lazycube.open_dataset(store), {"time": 1, "y": 32, "x": 32},
                                          batch_size=32, shuffle="chunk", seed=1, variables=["t"])
            total = 0.0
            for b in gen:
                total += float(np.asarray(b.x)[:, :, 0, 0, 0].sum(dtype="float64"))
            check = total
        best = min(best, time.perf_counter() - t0)
    print(json.dumps({"seconds": best, "checksum": check}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    p.add_argument("--cache", default=None, help="data folder (default BUILD/bench-data/rectilinear)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--worker", nargs=2, metavar=("MODE", "STORE"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args.build_dir, args.worker[0], args.worker[1], args.runs)
    steps, side = (256, 256) if args.quick else (1024, 256)
    rounds = 3 if args.quick else args.rounds
    data = args.cache or os.path.join(args.build_dir, "bench-data", "rectilinear")
    os.makedirs(data, exist_ok=True)
    make_data(args.build_dir, data, steps, side)
    warn_if_busy()
    print("| workload | regular (best) | rectilinear (best) | ratio (median of %d rounds) | target |" % rounds)
    print("|---|---:|---:|---:|---|")
    for mode in ("read", "epoch"):
        ratios, best = [], {"regular": float("inf"), "rectilinear": float("inf")}
        for r in range(rounds):
            order = ["regular", "rectilinear"] if r % 2 == 0 else ["rectilinear", "regular"]
            got, sums = {}, set()
            for peer in order:
                out = subprocess.run([sys.executable, __file__, "--build-dir", args.build_dir, "--runs",
                                      str(args.runs), "--worker", mode, os.path.join(data, peer + ".zarr")],
                                     check=True, capture_output=True, text=True).stdout
                res = json.loads(out.strip().splitlines()[-1])
                got[peer] = res["seconds"]
                sums.add(round(res["checksum"], 3))
                best[peer] = min(best[peer], res["seconds"])
            if len(sums) != 1:
                raise SystemExit("checksums differ between the stores: %s" % sums)
            ratios.append(got["rectilinear"] / got["regular"])
        ratio = statistics.median(ratios)
        print("| %s | %.3f s | %.3f s | %.3f | %s |" % (mode, best["regular"], best["rectilinear"], ratio,
                                                      "PASS" if ratio <= 1.05 else "MISS"))


if __name__ == "__main__":
    sys.exit(main())
