#!/usr/bin/python3
"""Whole-array read throughput: lazycube vs GDAL multidim vs zarr-python 2.13 vs the decode bound.

Makes the benchmark stores if needed (make_bench_data.py), warms the page cache, then runs every
peer in its own process (so peak RSS is per peer) and prints one table per codec variant with the
issue's targets: lazycube >= 2x GDAL, >= 2x zarr-python, >= 80 % of the decode bound, and peak
RSS <= output x 1.1 + 100 MiB. Run from the repository root with Debian's /usr/bin/python3 after
`cmake --build build`. A report, not a test: it exits non-zero only when a peer fails or the
outputs disagree (checksum mismatch), never for a missed target.
"""
import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_bench_data  # noqa: E402
from bench_common import checksum, warm, warn_if_busy  # noqa: E402

MIB = 1 << 20
TARGETS = {"gdal": 2.0, "zarr-python": 2.0, "decode-bound": 0.8}


def zarr_python_worker(store, runs, use_out):
    """One zarr-python peer in this process: arr[:] (fresh array per call, as users write it) or
    get_basic_selection(out=...) into one buffer allocated once (informational)."""
    import zarr
    arr = zarr.open_array(store, mode="r")
    out = np.empty(arr.shape, arr.dtype) if use_out else None
    times, data = [], None
    for _ in range(runs):
        data = None  # drop the previous result first, as a loop over reads would
        t0 = time.perf_counter()
        data = arr.get_basic_selection(Ellipsis, out=out) if use_out else arr[:]
        times.append(time.perf_counter() - t0)
    if use_out:
        data = out
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    best = min(times)
    return {"mode": "zarr-python-out" if use_out else "zarr-python", "store": store,
            "seconds": best, "gb_per_s": data.nbytes / best / 1e9, "bytes": data.nbytes,
            "runs": times, "checksum": checksum(data), "peak_rss_mb": rss}


def run_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0 or not p.stdout.strip():
        sys.stderr.write(p.stderr)
        raise SystemExit(f"FAILED ({p.returncode}): {' '.join(cmd)}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def bench_variant(exe, store, runs, cores):
    res = {}
    for mode in ("lazycube", "decode-bound", "gdal"):
        cmd = [exe, mode, store, "--runs", str(runs), "--cores", str(cores)]
        res[mode] = run_json(cmd)
    for mode in ("zarr-python", "zarr-python-out"):
        res[mode] = run_json([sys.executable, os.path.abspath(__file__), "--worker", mode,
                              store, "--runs", str(runs)])
    return res


def evaluate(res):
    lc = res["lazycube"]
    # Like against like: lazycube reads into one buffer allocated once, so zarr-python is timed
    # doing the same (get_basic_selection(out=buf)); its arr[:] (a new array per call) is shown
    # for information. New arrays against new arrays: run_cf_bench.py.
    peers = {"gdal": res["gdal"]["gb_per_s"], "zarr-python": res["zarr-python-out"]["gb_per_s"],
             "decode-bound": res["decode-bound"]["bound_gb_per_s"]}
    checks = {}
    for peer, rate in peers.items():
        ratio = lc["gb_per_s"] / rate
        checks[peer] = {"ratio": ratio, "target": TARGETS[peer], "pass": ratio >= TARGETS[peer]}
    limit = lc["bytes"] * 1.1 / MIB + 100
    checks["rss"] = {"peak_rss_mb": lc["peak_rss_mb"], "limit_mb": limit,
                     "pass": lc["peak_rss_mb"] <= limit}
    sums = {m: r["checksum"] for m, r in res.items()}
    checks["checksums_equal"] = len(set(sums.values())) == 1
    checks["checksums"] = sums
    return checks


def print_table(variant, res, checks, cores):
    print(f"\n== {variant}: {res['lazycube']['bytes'] / MIB:.0f} MiB float32, "
          f"{cores} cores, best of {len(res['lazycube']['runs'])} ==")
    print(f"{'peer':34} {'GB/s':>7} {'best s':>8} {'1st run s':>9} {'peak RSS MiB':>13}")
    rows = [("lazycube", "lazycube"), ("GDAL multidim Read", "gdal"),
            ("zarr-python get(out=buf)", "zarr-python-out"),
            ("zarr-python 2.13 arr[:] [info: new]", "zarr-python"),
            ("decode, 1 thread", "decode-bound")]
    for label, mode in rows:
        r = res[mode]
        print(f"{label:34} {r['gb_per_s']:7.2f} {r['seconds']:8.3f} {r['runs'][0]:9.3f} "
              f"{r['peak_rss_mb']:13.0f}")
    print(f"{f'decode bound (1 thread x {cores})':34} {res['decode-bound']['bound_gb_per_s']:7.2f}")
    for peer in ("gdal", "zarr-python", "decode-bound"):
        c = checks[peer]
        print(f"  lazycube / {peer:13} {c['ratio']:6.2f}x  target >= {c['target']:.1f}x  "
              f"{'PASS' if c['pass'] else 'MISS'}")
    c = checks["rss"]
    print(f"  lazycube peak RSS {c['peak_rss_mb']:.0f} MiB  limit {c['limit_mb']:.0f} MiB  "
          f"{'PASS' if c['pass'] else 'MISS'}")
    if checks["checksums_equal"]:
        print(f"  outputs identical (checksum {res['lazycube']['checksum']})")
    else:
        print("  !!!!! OUTPUT MISMATCH: " + json.dumps(checks["checksums"]) + " !!!!!")


def markdown(report):
    """The report as Markdown tables (for docs/benchmarks.md)."""
    lines = []
    for variant, v in report["variants"].items():
        res, checks = v["results"], v["checks"]
        lc = res["lazycube"]
        lines += [f"### {variant} ({lc['bytes'] / MIB:.0f} MiB float32, best of {report['runs']})", "",
                  "| peer | GB/s | best s | first run s | peak RSS MiB |", "|---|---:|---:|---:|---:|"]
        for label, mode in (("lazycube", "lazycube"), ("GDAL multidim `Read`", "gdal"),
                            ("zarr-python `get_basic_selection(out=buf)`", "zarr-python-out"),
                            ("zarr-python 2.13 `arr[:]` (info: new array per call)", "zarr-python"),
                            ("decode, 1 thread", "decode-bound")):
            r = res[mode]
            lines.append(f"| {label} | {r['gb_per_s']:.2f} | {r['seconds']:.3f} | "
                         f"{r['runs'][0]:.3f} | {r['peak_rss_mb']:.0f} |")
        cores = report["machine"]["cores"]
        lines.append(f"| decode bound (1 thread x {cores}) | "
                     f"{res['decode-bound']['bound_gb_per_s']:.2f} | | | |")
        lines += ["", "| target | measured | result |", "|---|---:|---|"]
        for peer in ("gdal", "zarr-python", "decode-bound"):
            c = checks[peer]
            lines.append(f"| lazycube / {peer}{' (out=buf)' if peer == 'zarr-python' else ''} >= {c['target']:.1f}x | {c['ratio']:.2f}x | "
                         f"{'PASS' if c['pass'] else 'MISS'} |")
        c = checks["rss"]
        lines.append(f"| lazycube peak RSS <= {c['limit_mb']:.0f} MiB | {c['peak_rss_mb']:.0f} MiB | "
                     f"{'PASS' if c['pass'] else 'MISS'} |")
        lines.append(f"| outputs identical (checksum) | {lc['checksum']} | "
                     f"{'PASS' if checks['checksums_equal'] else 'MISMATCH'} |")
        lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--cache", default="build/bench-data", help="benchmark stores (reused)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per peer, best reported")
    ap.add_argument("--cores", type=int, default=os.cpu_count(), help="decode-bound scale")
    ap.add_argument("--quick", action="store_true", help="64 MiB arrays (smoke test)")
    ap.add_argument("--json", action="store_true", help="print one JSON document instead")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables instead")
    ap.add_argument("--worker", nargs=2, metavar=("MODE", "STORE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        mode, store = args.worker
        print(json.dumps(zarr_python_worker(store, args.runs, mode == "zarr-python-out")))
        return 0

    exe = os.path.join(args.build_dir, "tests", "bench", "lazycube_bench_read")
    if not os.access(exe, os.X_OK):
        raise SystemExit(f"{exe} not found: build it first (cmake --build {args.build_dir})")
    size = "quick" if args.quick else "full"
    stores = make_bench_data.ensure(args.cache, size, verbose=not (args.json or args.markdown))
    report = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
              "machine": {"cores": args.cores, "cpu_count": os.cpu_count(),
                          "platform": platform.platform(), "loadavg_at_start": os.getloadavg()},
              "runs": args.runs, "size": size, "variants": {}}
    warn_if_busy()
    ok = True
    for variant, store in stores.items():
        warm(store)
        res = bench_variant(exe, store, args.runs, args.cores)
        checks = evaluate(res)
        ok = ok and checks["checksums_equal"]
        report["variants"][variant] = {"store": store, "results": res, "checks": checks}
        if not (args.json or args.markdown):
            print_table(variant, res, checks, args.cores)
    if args.json:
        print(json.dumps(report, indent=1))
    elif args.markdown:
        print(markdown(report))
    if not ok:
        print("!!!!! lazycube, GDAL, zarr-python and the decode bound disagree on the data !!!!!",
              file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
