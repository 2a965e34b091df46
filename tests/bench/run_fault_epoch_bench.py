#!/usr/bin/python3
"""An epoch of training batches over HTTP, clean and under faults (issue 32, "faults without
stalls").

Workload: an ERA5-like consolidated Zarr v2 store (t2m, u10, v10, msl, float32, time T x
latitude 128 x longitude 256, chunks 1 x 32 x 64 = 8 KiB decoded, blosc-lz4; T = 1,792 by
default: 114,688 chunks, 896 MiB decoded: a request-bound epoch, as small chunks over a slow link
are), written once under build/bench-data/fault-epoch, served by nginx on 127.0.0.1
(tests/servers/start_nginx.sh) with the lua injector adding 20 ms to every request. One epoch of
lazycube.BatchGenerator(URL, variables=all four, input_dims time=1, latitude=64, longitude=64,
batch_size=32, shuffle="chunk", the default cache and fetch-ahead), every batch's x hashed
(BLAKE2b over its bytes, in order), each run in its own process. --shuffle random --cache-mb 64
runs the harder case of random windows over more data than the cache (see docs/benchmarks.md:
how far ahead a loader can fetch is its fetch-ahead budget, and riding out Retry-After needs
that lead to cover the wait).

Rows, alternated run by run against the same server:
  clean          20 ms added to every request
  fault mix      the same + 10 % 503, 5 % 429 with Retry-After: 1, 2 % dropped connections
  (--baseline DIR: both again with the lazycube package staged under DIR, e.g. an older
  build's build/python: the A/B against the previous main in one run)

Target (issue 32): with a clean epoch of >= 10 s, the fault mix costs <= 1.5x the clean time;
every run's hash equals the clean run's. The store's time length T (--steps) sets the clean
epoch's length. A report, not a test: it exits non-zero only when a run fails or the hashes
differ, never for a missed target.

Run from the repository root with Debian's /usr/bin/python3 after
`cmake --build build --target lazycube_python`.
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_common import REPO, Nginx, add_settle_argument, settle, warn_if_busy  # noqa: E402

VARIABLES = ["t2m", "u10", "v10", "msl"]
LAT, LON = 128, 256
CHUNK = (1, 32, 64)
INPUT_DIMS = {"time": 1, "latitude": 64, "longitude": 64}
BATCH = 32
LATENCY_MS = 20
FAULTS = {"p503": 0.10, "p429": 0.05, "retry_after": 1, "pdrop": 0.02}
TARGET_RATIO = 1.5
FORMAT_VERSION = 3
ARGS = None


def make_store(root, steps):
    """The store under root/store.zarr (written once per (steps, FORMAT_VERSION))."""
    path = os.path.join(root, "store.zarr")
    stamp = os.path.join(root, "stamp.json")
    want = {"steps": steps, "format": FORMAT_VERSION}
    if os.path.exists(stamp) and json.load(open(stamp)) == want:
        return path
    import numcodecs
    import xarray as xr
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(0)
    lat = np.linspace(90, -90, LAT)
    lon = np.linspace(0, 360, LON, endpoint=False)
    base = (np.cos(np.deg2rad(lat))[:, None] * np.sin(np.deg2rad(lon))[None, :]).astype(np.float32)
    data = {}
    for k, v in enumerate(VARIABLES):
        noise = rng.standard_normal((steps, LAT, LON), dtype=np.float32)
        data[v] = (("time", "latitude", "longitude"), base[None] * (10 + k) + noise)
    ds = xr.Dataset(data, coords={"time": np.arange(steps), "latitude": lat, "longitude": lon})
    enc = {v: {"chunks": CHUNK, "compressor": numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE)}
           for v in VARIABLES}
    if os.path.exists(path):
        import shutil
        shutil.rmtree(path)
    ds.to_zarr(path, encoding=enc, consolidated=True)
    json.dump(want, open(stamp, "w"))
    return path


def child(args):  # noqa: C901
    """One epoch; prints {"seconds", "hash", "batches", "first_batch_s"} as JSON."""
    if args.package:
        sys.path.insert(0, args.package)
    else:
        sys.path.insert(0, os.path.join(REPO, "build", "python"))
    import warnings
    warnings.simplefilter("ignore")  # the read-amplification warning: the workload is chosen so
    import lazycube
    t0 = time.perf_counter()
    cache = args.cache_mb << 20 if args.cache_mb else None
    ahead = args.fetch_ahead_mb << 20 if args.fetch_ahead_mb else None
    gen = lazycube.BatchGenerator(args.url, INPUT_DIMS, batch_size=BATCH, variables=VARIABLES,
                                  shuffle=args.shuffle, seed=7, cache_bytes=cache, fetch_ahead_bytes=ahead,
                                  storage_options=dict(o.split("=", 1) for o in args.option) or None)
    h = hashlib.blake2b(digest_size=16)
    n, first = 0, None
    for batch in gen:
        x = batch.x
        h.update(np.ascontiguousarray(x).tobytes())
        n += 1
        if first is None:
            first = time.perf_counter() - t0
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "hash": h.hexdigest(), "batches": n, "first_batch_s": first,
                      "package": os.path.dirname(os.path.dirname(lazycube.__file__))}))


def run_child(url, package, timeout):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", url, "--shuffle", ARGS.shuffle]
    if ARGS.cache_mb:
        cmd += ["--cache-mb", str(ARGS.cache_mb)]
    if ARGS.fetch_ahead_mb:
        cmd += ["--fetch-ahead-mb", str(ARGS.fetch_ahead_mb)]
    for o in ARGS.option:
        cmd += ["--option", o]
    if package:
        cmd += ["--package", package]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise SystemExit("a run failed:\n" + out.stderr[-4000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--child", metavar="URL", help=argparse.SUPPRESS)
    p.add_argument("--package", help=argparse.SUPPRESS)
    p.add_argument("--steps", type=int, default=1792, help="time steps of the store (default 1792)")
    p.add_argument("--shuffle", default="chunk", choices=["chunk", "random", "none"], help="default chunk")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a storage option for every run (repeatable)")
    p.add_argument("--cache-mb", type=int, default=0, help="chunk cache budget (default: the generator's, 1 GiB)")
    p.add_argument("--fetch-ahead-mb", type=int, default=0,
                   help="fetch-ahead budget (default: the generator's own, docs/batching.md)")
    p.add_argument("--runs", type=int, default=3, help="runs of each row (default 3); the median is reported")
    p.add_argument("--baseline", metavar="DIR",
                   help="also run both rows with the lazycube package under DIR (e.g. an older build's build/python)")
    p.add_argument("--data", default=os.path.join(REPO, "build", "bench-data", "fault-epoch"))
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    add_settle_argument(p)
    args = p.parse_args()
    global ARGS
    ARGS = args
    if args.child:
        args.url = args.child
        return child(args)

    warn_if_busy()
    root = make_store(args.data, args.steps)
    server = Nginx(os.path.join(args.data, "nginx"), os.path.dirname(root), "/store.zarr/.zmetadata",
                   faults={"latency_ms": LATENCY_MS})
    url = server.base + "/store.zarr"
    builds = [("this build", None)] + ([("baseline", os.path.abspath(args.baseline))] if args.baseline else [])
    rows = {}
    try:
        for r in range(args.runs):
            for label, package in builds:
                for mix, faults in (("clean", {"latency_ms": LATENCY_MS}),
                                    ("fault mix", dict({"latency_ms": LATENCY_MS}, **FAULTS))):
                    settle(args.settle)
                    server.set_faults(faults)
                    res = run_child(url, package, timeout=1800)
                    rows.setdefault((label, mix), []).append(res)
                    print(f"run {r + 1}: {label}, {mix}: {res['seconds']:.2f} s, {res['batches']} batches",
                          flush=True)
    finally:
        server.stop()

    reference = rows[("this build", "clean")][0]["hash"]
    bad = [(k, x["hash"]) for k, v in rows.items() for x in v if x["hash"] != reference]
    med = {k: statistics.median(x["seconds"] for x in v) for k, v in rows.items()}
    print()
    print(f"## Epoch over HTTP, clean and under faults (tests/bench/run_fault_epoch_bench.py)")
    print(f"{datetime.date.today()} on {platform.node()} ({os.cpu_count()} cores), {args.steps} steps, "
          f"shuffle {args.shuffle}, cache {args.cache_mb or 1024} MiB, {LATENCY_MS} ms added, runs {args.runs} (median)")
    print()
    print("| build | requests | epoch (median) | runs | first batch | hash |")
    print("|---|---|---:|---|---:|---|")
    for (label, mix), v in rows.items():
        runs = "/".join(f"{x['seconds']:.2f}" for x in v)
        first = statistics.median(x["first_batch_s"] for x in v)
        print(f"| {label} | {mix} | {med[(label, mix)]:.2f} s | {runs} | {first:.3f} s | "
              f"{'equal' if all(x['hash'] == reference for x in v) else 'DIFFERENT'} |")
    print()
    for label, _ in builds:
        clean, faulty = med[(label, "clean")], med[(label, "fault mix")]
        ok = clean >= 10 and faulty <= TARGET_RATIO * clean
        print(f"{label}: fault mix / clean = {faulty / clean:.2f} (target <= {TARGET_RATIO}, clean epoch "
              f"{clean:.1f} s, needs >= 10 s): {'PASS' if ok else 'MISS'}")
    if args.baseline:
        print(f"this build / baseline, clean: {med[('this build', 'clean')] / med[('baseline', 'clean')]:.2f}; "
              f"fault mix: {med[('this build', 'fault mix')] / med[('baseline', 'fault mix')]:.2f} (time ratios)")
    if args.json:
        json.dump({f"{a}|{b}": v for (a, b), v in rows.items()}, open(args.json, "w"), indent=1)
    if bad:
        raise SystemExit(f"hashes differ from the clean run's: {bad}")


if __name__ == "__main__":
    main()
