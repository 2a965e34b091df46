#!/usr/bin/python3
"""NetCDF4 training-batch throughput: lazycube's GDAL backend and kerchunk references over HTTP
vs xarray + netCDF4 per-window reads (issue 6's benchmark).

Data (written once under the bench data folder with netCDF4-python, then reused): the ERA5-like
fields of make_batch_bench_data.py (t2m, u10, v10, msl, float32) over time 768 x latitude 181 x
longitude 360, HDF5 chunks (8, 181, 360), zlib level 1 + shuffle (netCDF4's usual encoding),
CF time coordinate; about 280 MB on disk (801 MB decoded; the script checks >= 256 MB).

Rows, each peer in its own process, batches of 32 windows of time 1 x latitude 64 x longitude 64
with the 4 variables as channels (warm page cache):
  (a) lazycube, GDAL backend      lazycube bench FILE.nc --shuffle chunk (one epoch)
  (b) lazycube, kerchunk refs     `lazycube refs FILE.nc -o refs.json` beside the file, both served
      over HTTP, 50 ms latency    by nginx on 127.0.0.1 with 50 ms added to every request (the lua
                                  injector of tests/servers); lazycube bench http://…/refs.json
                                  --shuffle chunk (one epoch)
  (c) xarray + netCDF4            xr.open_dataset(FILE, engine="netcdf4"), per window
                                  isel(...).load(), channels and windows stacked with numpy, in a
                                  seeded random order, for --peer-seconds
plus [info] rows: kerchunk refs read from local disk (no HTTP), and lazycube GDAL with shuffle
random. The issue sets no target: the report gives the ratios (a)/(c) and (b)/(c).

Run from the repository root with Debian's /usr/bin/python3 after `cmake --build build`. A
report, not a test: it exits non-zero only when a peer fails.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_batch_bench_data as fields_src  # noqa: E402
import run_batch_bench as batch_bench  # noqa: E402
from bench_common import Nginx, run_json, warm, warn_if_busy  # noqa: E402

FORMAT_VERSION = 1  # bump when the generated file changes
NT, CT = 768, 8
MIN_FILE_BYTES = 256 * 10**6
LATENCY_MS = 50
VARIABLES = batch_bench.VARIABLES
INPUT_DIMS = batch_bench.INPUT_DIMS
BATCH = batch_bench.BATCH
SEED = batch_bench.SEED
FILE_NAME = "era5_like.nc"


# ---------------------------------------------------------------------------- data

def ensure_file(cache, verbose):
    """Writes CACHE/netcdf/www/era5_like.nc once (reused while its marker matches); returns
    (www dir, file path)."""
    import netCDF4
    import numpy as np
    www = os.path.join(os.path.abspath(cache), "netcdf", "www")
    path = os.path.join(www, FILE_NAME)
    marker_path = os.path.join(www, "bench-complete.json")
    want = {"format_version": FORMAT_VERSION, "nt": NT, "ct": CT, "seed": fields_src.SEED}
    if os.path.exists(marker_path) and os.path.exists(path):
        with open(marker_path) as fh:
            if json.load(fh) == want:
                return www, path
    os.makedirs(www, exist_ok=True)
    if verbose:
        print(f"writing {path} (once) ...", file=sys.stderr, flush=True)
    tmp = path + ".tmp"
    with netCDF4.Dataset(tmp, "w", format="NETCDF4") as nc:
        nc.createDimension("time", NT)
        nc.createDimension("latitude", fields_src.NY)
        nc.createDimension("longitude", fields_src.NX)
        t = nc.createVariable("time", "i8", ("time",))
        t.units = "hours since 2019-01-01 00:00:00"
        t.calendar = "proleptic_gregorian"
        t[:] = np.arange(NT, dtype=np.int64)
        lat = nc.createVariable("latitude", "f4", ("latitude",))
        lat.units = "degrees_north"
        lat[:] = np.linspace(90.0, -90.0, fields_src.NY, dtype=np.float32)
        lon = nc.createVariable("longitude", "f4", ("longitude",))
        lon.units = "degrees_east"
        lon[:] = np.arange(fields_src.NX, dtype=np.float32)
        out = {}
        for v in VARIABLES:
            out[v] = nc.createVariable(v, "f4", ("time", "latitude", "longitude"), zlib=True, complevel=1,
                                       shuffle=True, chunksizes=(CT, fields_src.NY, fields_src.NX))
            out[v].setncatts(fields_src.ATTRS[v])
        for t0 in range(0, NT, CT):
            for v, block in fields_src.fields(t0, CT).items():
                out[v][t0:t0 + CT] = block
    os.replace(tmp, path)
    size = os.path.getsize(path)
    if size < MIN_FILE_BYTES:
        raise SystemExit(f"{path} is {size / 1e6:.0f} MB, below the {MIN_FILE_BYTES / 1e6:.0f} MB the issue asks for")
    with open(marker_path, "w") as fh:
        json.dump(want, fh)
    return www, path


def make_refs(cli, www, path):
    """`lazycube refs FILE.nc -o www/refs.json` (the target sits beside the references)."""
    refs = os.path.join(www, "refs.json")
    subprocess.run([cli, "refs", path, "-o", refs], check=True, capture_output=True, text=True)
    return refs


# ---------------------------------------------------------------------------- report

def ratio_checks(res):
    peer = res["xarray"]["windows_per_s"]
    return [{"target": "[info] (a) GDAL backend vs (c) xarray + netCDF4",
             "measured": f"{res['gdal']['windows_per_s'] / peer:.1f}x", "pass": None},
            {"target": f"[info] (b) kerchunk refs over HTTP ({LATENCY_MS} ms) vs (c) xarray + netCDF4",
             "measured": f"{res['refs-http']['windows_per_s'] / peer:.1f}x", "pass": None}]


def markdown(report):
    lines = ["| peer | windows | windows/s | MB/s | first batch s | peak RSS MiB |",
             "|---|---:|---:|---:|---:|---:|"]
    for key, r in report["results"].items():
        lines.append(f"| {r['label']} | {r['windows']} | {r['windows_per_s']:.1f} | {r['mb_per_s']:.1f} | "
                     f"{r['time_to_first_batch_s']:.3f} | {r['peak_rss_mb']:.0f} |")
    lines += ["", "| ratio | measured |", "|---|---:|"]
    for c in report["checks"]:
        lines.append(f"| {c['target'].replace('[info] ', '')} | {c['measured']} |")
    return "\n".join(lines)


def print_report(report):
    print(f"\n== {report['file']} ({report['file_mb']:.0f} MB), batches of {BATCH} x {len(VARIABLES)} "
          f"channels x {batch_bench.dims_arg(INPUT_DIMS)} ==")
    print(f"{'peer':64} {'windows':>8} {'win/s':>9} {'MB/s':>8} {'1st s':>7} {'RSS MiB':>8}")
    for r in report["results"].values():
        print(f"{r['label']:64} {r['windows']:>8} {r['windows_per_s']:>9.1f} {r['mb_per_s']:>8.1f} "
              f"{r['time_to_first_batch_s']:>7.3f} {r['peak_rss_mb']:>8.0f}")
    print()
    for c in report["checks"]:
        print(f"  {c['target']:70} {c['measured']:>10}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--cache", default="build/bench-data", help="bench data dir (file written once)")
    ap.add_argument("--peer-seconds", type=float, default=25.0, help="time for the xarray peer (default 25)")
    ap.add_argument("--quick", action="store_true", help="40 batches per lazycube run, 5 s for xarray")
    ap.add_argument("--json", action="store_true", help="print one JSON document instead")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables instead")
    ap.add_argument("--worker", nargs=2, metavar=("FILE", "SECONDS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        path, seconds = args.worker
        print(json.dumps(batch_bench.xarray_worker(path, float(seconds), engine="netcdf4")))
        return 0

    cli = os.path.join(args.build_dir, "lazycube")
    if not os.access(cli, os.X_OK):
        raise SystemExit(f"{cli} not found: build it first (cmake --build {args.build_dir})")
    quiet = args.json or args.markdown
    www, path = ensure_file(args.cache, verbose=not quiet)
    refs = make_refs(cli, www, path)
    peer_seconds = 5.0 if args.quick else args.peer_seconds
    limit = ["--max-batches", "40"] if args.quick else []
    load = warn_if_busy()
    warm(www)
    report = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "file": path,
              "file_mb": os.path.getsize(path) / 1e6,
              "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(), "loadavg_at_start": load},
              "results": {}}

    def lazycube(key, label, url, extra):
        if not quiet:
            print(f"running {label} ...", file=sys.stderr, flush=True)
        r = batch_bench.run_lazycube(cli, url, extra + limit)
        r["label"] = label
        report["results"][key] = r

    lazycube("gdal", "(a) lazycube, GDAL backend, shuffle chunk", path, ["--shuffle", "chunk"])
    nginx = Nginx(os.path.join(os.path.abspath(args.cache), "netcdf", "nginx"), www, "/refs.json",
                  {"latency_ms": LATENCY_MS})
    try:
        lazycube("refs-http", f"(b) lazycube, kerchunk refs over HTTP ({LATENCY_MS} ms), shuffle chunk",
                 nginx.base + "/refs.json", ["--shuffle", "chunk"])
    finally:
        nginx.stop()
    if not quiet:
        print(f"running (c) xarray + netCDF4 ({peer_seconds:.0f} s) ...", file=sys.stderr, flush=True)
    r = run_json([sys.executable, os.path.abspath(__file__), "--worker", path, str(peer_seconds)])
    r["label"] = "(c) xarray open_dataset(engine=netcdf4) + isel(...).load() per window"
    report["results"]["xarray"] = r
    lazycube("refs-local", "[info] lazycube, kerchunk refs on local disk, shuffle chunk", refs, ["--shuffle", "chunk"])
    lazycube("gdal-random", "[info] lazycube, GDAL backend, shuffle random", path, ["--shuffle", "random"])
    report["checks"] = ratio_checks(report["results"])
    if args.json:
        print(json.dumps(report, indent=1))
    elif args.markdown:
        print(markdown(report))
    else:
        print_report(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
