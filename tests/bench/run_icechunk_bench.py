#!/usr/bin/env python3
"""Icechunk benchmark (issue 18): reading a generated Icechunk repository's array against the same
chunks as a plain Zarr v3 store, in one run, and opening a manifest of a million references.

No Icechunk library exists here (PyPI is unreachable), so lazycube_bench_icechunk writes the
repositories with the tests' writer (tests/cpp/support/icechunk_test_writer.hpp): spec 2, zstd metadata,
one native chunk file per chunk, as Icechunk lays them out. Each peer runs in its own process,
alternating which goes first, best of --runs reads per process; the ratio is the median over the
rounds of (Icechunk best / Zarr best). Target: Icechunk within 10 % of Zarr (ratio <= 1.10).

    cmake --build build --target lazycube_bench_icechunk
    /usr/bin/python3 tests/bench/run_icechunk_bench.py            # local + HTTP layouts, 1 M refs
    /usr/bin/python3 tests/bench/run_icechunk_bench.py --quick    # smaller, fewer rounds
"""
import argparse
import json
import os
import shutil
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import REPO, Nginx, run_json, warm, warn_if_busy  # noqa: E402

# (name, steps, side, chunk side): float32 (steps, side, side), chunks (1, c, c), raw bytes codec.
LAYOUTS = [("4096 chunks of 64 KiB", 64, 1024, 128), ("64 chunks of 4 MiB", 64, 1024, 1024)]
QUICK_LAYOUTS = [("1024 chunks of 64 KiB", 16, 1024, 128)]


def ensure(data, name, cmd):
    """Runs the generator once per data set (marker file with the command)."""
    marker = os.path.join(data, name + ".complete.json")
    if os.path.exists(marker):
        with open(marker) as f:
            if json.load(f).get("cmd") == cmd[1:]:
                return
    shutil.rmtree(os.path.join(data, name), ignore_errors=True)
    info = run_json(cmd)
    with open(marker, "w") as f:
        json.dump({"cmd": cmd[1:], "info": info}, f)


def compare(bench, zarr_url, ice_url, rounds, runs):
    rows = {"zarr": [], "icechunk": []}
    ratios, sums = [], set()
    for r in range(rounds):
        order = [("zarr", zarr_url), ("icechunk", ice_url)]
        if r % 2:
            order.reverse()
        got = {}
        for peer, url in order:
            res = run_json([bench, "read", url, "--runs", str(runs)])
            got[peer] = res["seconds"]
            rows[peer].append(res)
            sums.add(res["checksum"])
        ratios.append(got["icechunk"] / got["zarr"])
    return rows, ratios, sums


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    ap.add_argument("--data", default="/tmp/lazycube-icechunk-bench")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--runs", type=int, default=5, help="reads per process (best is taken)")
    ap.add_argument("--refs", type=int, default=1_000_000)
    ap.add_argument("--no-http", action="store_true", help="skip the nginx (loopback HTTP) rows")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown", action="store_true", help="print the tables as markdown")
    args = ap.parse_args()
    bench = os.path.join(args.build_dir, "tests", "bench", "lazycube_bench_icechunk")
    if not os.path.exists(bench):
        raise SystemExit(f"{bench} not built: cmake --build {args.build_dir} --target lazycube_bench_icechunk")
    layouts = QUICK_LAYOUTS if args.quick else LAYOUTS
    rounds = 3 if args.quick else args.rounds
    refs = 250_000 if args.quick else args.refs
    os.makedirs(args.data, exist_ok=True)
    load = warn_if_busy()

    for i, (_, steps, side, chunk) in enumerate(layouts):
        ensure(args.data, f"layout{i}", [bench, "generate", os.path.join(args.data, f"layout{i}"), "--steps", str(steps),
                                         "--side", str(side), "--chunk-side", str(chunk)])
    ensure(args.data, "big", [bench, "generate-big", os.path.join(args.data, "big"), "--refs", str(refs)])
    warm(args.data)

    table = []
    ok = True
    nginx = None if args.no_http else Nginx(os.path.join(args.data, "nginx"), args.data, "/layout0/zarr/zarr.json")
    try:
        for i, (name, *_rest) in enumerate(layouts):
            where = [("local", os.path.join(args.data, f"layout{i}"))]
            if nginx:
                where.append(("HTTP (nginx, loopback)", f"{nginx.base}/layout{i}"))
            for medium, base in where:
                rows, ratios, sums = compare(bench, base + "/zarr", base + "/icechunk", rounds, args.runs)
                best = {p: min(x["seconds"] for x in rows[p]) for p in rows}
                mb = rows["zarr"][0]["bytes"] / 1e6
                ratio = statistics.median(ratios)
                same = len(sums) == 1
                ok &= ratio <= 1.10 and same
                table.append((name, medium, mb / best["zarr"], mb / best["icechunk"], ratio, min(ratios), max(ratios), same))
    finally:
        if nginx:
            nginx.stop()

    opens = [run_json([bench, "open-big", os.path.join(args.data, "big")]) for _ in range(rounds)]
    with open(os.path.join(args.data, "big.complete.json")) as f:
        big = json.load(f)["info"]

    md = args.markdown
    print(f"\nload average before: {load[0]:.2f}; {rounds} rounds, best of {args.runs} reads per process\n")
    header = ["layout", "store", "Zarr v3 MB/s", "Icechunk MB/s", "Icechunk/Zarr time (median)", "min..max", "target <= 1.10"]
    if md:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
    else:
        print("  ".join(header))
    for name, medium, z, ic, ratio, lo, hi, same in table:
        verdict = ("PASS" if ratio <= 1.10 else "MISS") + ("" if same else " (checksums differ!)")
        cells = [name, medium, f"{z:.0f}", f"{ic:.0f}", f"{ratio:.3f}", f"{lo:.2f}..{hi:.2f}", verdict]
        print(("| " + " | ".join(cells) + " |") if md else "  ".join(cells))

    first = statistics.median(o["first_chunk_s"] for o in opens)
    rss = statistics.median(o["peak_rss_mb"] - o["rss_before_mb"] for o in opens)
    lookup = statistics.median(o["lookup_us"] for o in opens)
    warm_lookup = statistics.median(o["lookup_warm_us"] for o in opens)
    print(f"\nmanifest of {big['refs']:,} references ({big['manifest_file_bytes'] / 1e6:.1f} MB zstd file), "
          f"median of {rounds} processes:")
    rows = [("open (repo file, refs)", f"{statistics.median(o['open_s'] for o in opens) * 1e3:.1f} ms"),
            ("first chunk read (fetch + decompress + verify the manifest)", f"{first * 1e3:.0f} ms"),
            ("next 1000 chunks, each (lookup, verifying the references passed + 4-byte read)", f"{lookup:.1f} us"),
            ("the same 1000 again, each (references already verified)", f"{warm_lookup:.1f} us"),
            ("peak RSS added by the open", f"{rss:.0f} MiB")]
    if md:
        print("| step | median |\n|---|---:|")
    for k, v in rows:
        print(f"| {k} | {v} |" if md else f"  {k}: {v}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
