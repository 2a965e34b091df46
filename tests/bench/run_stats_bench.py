#!/usr/bin/python3
"""Normalisation statistics (issue 20): `lazycube.stats` vs lazycube's own read of the same
data vs xarray + dask `mean`/`std`, in one run.

The data: run_cf_bench.py's store (the read benchmark's float32 field with 1 % of its points
at the fill value -9999, which every peer decodes to NaN), Zarr v2 `v` (dims time/y/x, one
(1024, 1024) chunk per time step), blosc-lz4; 256 MiB (`--quick`: 32 MiB, one round, one call:
a smoke run). Peers, each in its own process from a warm
page cache, throughput = decoded bytes of `v` / seconds:

  lazycube stats      lazycube.stats(store)            count, mean, std, min, max, NaN count
  lazycube read       lazycube.open_dataset(store)["v"].values   (the raw read throughput)
  xarray+dask         dask.compute(v.mean(), v.std()) on xr.open_zarr(store) (skipna, chunks
                      of the store, dask's threaded scheduler)

Target (issue 20): stats >= 0.8x lazycube read. The means and stds must agree within 1e-9
relative (xarray's float32 reductions are computed in float64 here: `v.astype("f8")`). A report,
not a test: it exits non-zero only when a peer fails or results disagree.

    /usr/bin/python3 tests/bench/run_stats_bench.py [--quick] [--runs 3] [--rounds 2] [--markdown]
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_common import add_settle_argument, settle, warm, warn_if_busy  # noqa: E402
from run_cf_bench import ensure_store  # noqa: E402

PEERS = ["lazycube-stats", "lazycube-read", "xarray+dask"]


def call(peer, store):
    """One call; returns (mean, std) or None (the read)."""
    if peer == "lazycube-stats":
        import lazycube
        s = lazycube.stats(store)["v"]
        return float(s["mean"]), float(s["std"])
    if peer == "lazycube-read":
        import lazycube
        lazycube.open_dataset(store)["v"].values
        return None
    if peer == "xarray+dask":
        import dask
        import xarray as xr
        v = xr.open_zarr(store)["v"].astype("f8")
        m, s = dask.compute(v.mean(skipna=True), v.std(skipna=True))
        return float(m), float(s)
    raise ValueError(peer)


def worker(peer, store, runs):
    import warnings
    warnings.simplefilter("ignore")
    if peer.startswith("lazycube"):
        import lazycube  # noqa: F401
    else:
        import dask  # noqa: F401
        import xarray  # noqa: F401
    times, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = call(peer, store)
        times.append(time.perf_counter() - t0)
    return {"peer": peer, "best": min(times), "runs": times, "result": out}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default="/tmp/lazycube-bench-data", help="store folder (default %(default)s)")
    ap.add_argument("--quick", action="store_true", help="32 MiB, one round, one call (smoke run)")
    ap.add_argument("--runs", type=int, default=3, help="calls per process (default 3)")
    ap.add_argument("--rounds", type=int, default=2, help="processes per peer, order alternating (default 2)")
    ap.add_argument("--markdown", action="store_true")
    add_settle_argument(ap)
    ap.add_argument("--worker", nargs=2, metavar=("PEER", "STORE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], args.runs)))
        return 0
    if args.quick:
        args.runs, args.rounds, args.settle = 1, 1, 0.0
    size = 32 if args.quick else 256
    load = warn_if_busy()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} CPUs", file=sys.stderr)
    store = ensure_store(args.cache, size, "blosc-lz4")
    warm(store)
    nbytes = size * (1 << 20)
    res = {}
    for r in range(args.rounds):
        for peer in (PEERS if r % 2 == 0 else PEERS[::-1]):
            settle(args.settle)
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", peer, store,
                                "--runs", str(args.runs)], capture_output=True, text=True, env=os.environ)
            if p.returncode != 0:
                raise RuntimeError(f"{peer} failed:\n{p.stderr}")
            got = json.loads(p.stdout.strip().splitlines()[-1])
            if peer in res:
                got["runs"] = res[peer]["runs"] + got["runs"]
                got["best"] = min(got["best"], res[peer]["best"])
            res[peer] = got
    gbs = {p: nbytes / res[p]["best"] / 1e9 for p in PEERS}
    ratio = gbs["lazycube-stats"] / gbs["lazycube-read"]
    (m1, s1), (m2, s2) = res["lazycube-stats"]["result"], res["xarray+dask"]["result"]
    agree = abs(m1 - m2) <= 1e-9 * abs(m2) and abs(s1 - s2) <= 1e-9 * abs(s2)
    title = f"{size} MiB float32, 1 % NaN, blosc-lz4, best of {len(res['lazycube-stats']['runs'])} calls"
    if args.markdown:
        print(f"### {title}\n\n| peer | GB/s | best s |\n|---|---:|---:|")
        for p in PEERS:
            print(f"| {p} | {gbs[p]:.2f} | {res[p]['best']:.3f} |")
        print("\n| target | measured | result |\n|---|---:|---|")
        print(f"| stats / lazycube read >= 0.8x | {ratio:.2f}x | {'PASS' if ratio >= 0.8 else 'FAIL'} |")
        print(f"| stats / xarray+dask | {gbs['lazycube-stats'] / gbs['xarray+dask']:.1f}x | |")
        print(f"| mean, std equal xarray within 1e-9 | {m1:.9g}, {s1:.9g} | {'PASS' if agree else 'FAIL'} |\n")
    else:
        print(f"== {title}")
        for p in PEERS:
            print(f"  {p:16s} {gbs[p]:6.2f} GB/s  best {res[p]['best']:.3f} s")
        print(f"  stats / lazycube read (target >= 0.8x)  {ratio:5.2f}x  {'PASS' if ratio >= 0.8 else 'FAIL'}")
        print(f"  stats / xarray+dask                     {gbs['lazycube-stats'] / gbs['xarray+dask']:5.1f}x")
        print(f"  mean, std equal xarray within 1e-9: {'PASS' if agree else 'FAIL'} ({m1!r} {s1!r} vs {m2!r} {s2!r})")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
