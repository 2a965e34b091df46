#!/usr/bin/python3
"""What an epoch of forecast samples costs at scale (issue 46, docs/forecast.md "Epochs at
scale"): bytes and requests nginx served for one epoch of lazycube.torch.ForecastDataset against
the bytes of the distinct chunks its samples need (egress), with each process's chunk cache far
smaller than the data, for W = 1 and W = 8 ranks (8 processes, each its own cache, no disk
cache), with 2 DataLoader workers per rank, and a random shuffle for contrast; shuffle quality
of the same order; samples/s at 50 ms latency against the same epoch with an unlimited cache.

Data (written once under --cache, default /tmp/lazycube-egress-bench): `era5.zarr`, Zarr v2,
--steps six-hourly steps (default 2,904) on a --grid grid (default 121x240), ONE time step per
chunk, blosc zstd: t2m, u10, sst (time, lat, lon), z (time, level 3, lat, lon), the static lsm;
--grid 121x240 gives 2.0 GB of float32. The sample: inputs t2m, u10, z at -6h and 0h, targets
the same at +6h .. +24h, forcings lsm and sst; batch 8; a footprint is 6 time steps.

Rows (each rank its own process):
  chunk, cache C footprints, W ranks x K workers   egress = bytes served / bytes needed
  random, cache 64 footprints, W = 1              for contrast
  chunk, unlimited cache, W = 1                   the throughput reference
  CLI <build>, cache 64 footprints               `lazycube bench URL --forecast` of this build and
                                                  of --baseline-cli (the previous main) in the
                                                  same run: egress and samples/s, like for like
--windows: the same for windows instead (lazycube.torch.BatchDataset, docs/batching.md "The
epoch planner"): sliding windows of 6 steps with overlap 5 over t2m, u10, sst on the whole grid,
batch 8 (a footprint: 6 steps of the three), rows chunk at 64 footprints for W = 1, 8 and 8 x 2
workers, at 16, random for contrast, and `lazycube bench` of this build and --baseline-cli (whose
chunk groups ordered such windows before the planner) at 64 footprints.
The shuffle quality (Spearman of position and anchor, median batch span, two seeds) is computed
from the order itself. Targets: egress <= 1.10 at 64 footprints (<= 1.5 at 16), W = 1 and 8, also
with 2 workers; |Spearman| <= 0.1; median batch span >= 50 %; 64-footprint samples/s >= 80 % of
the unlimited cache's. A report, not a test.

    /usr/bin/python3 tests/bench/run_epoch_egress_bench.py [--steps N --grid 121x240 --latency-ms 50]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from bench_common import Nginx, emit_report, warn_if_busy  # noqa: E402

FORMAT_VERSION = 1
LEVELS, BATCH, SPAN = 3, 8, 6
SPEC = dict(inputs=["t2m", "u10", "z"], targets=["t2m", "u10", "z"], forcings=["lsm", "sst"],
            input_offsets=["-6h", "0h"], target_offsets=["6h", "12h", "18h", "24h"])


def write_store(root, steps, ny, nx):
    import numcodecs
    import zarr
    path = os.path.join(root, "era5.zarr")
    marker = path + ".complete.json"
    want = {"version": FORMAT_VERSION, "steps": steps, "grid": [ny, nx]}
    if os.path.exists(marker) and json.load(open(marker)) == want:
        return path
    rng = np.random.default_rng(46)
    g = zarr.group(zarr.DirectoryStore(path), overwrite=True)
    comp = numcodecs.Blosc("zstd", 3, numcodecs.Blosc.SHUFFLE)
    t = g.create_dataset("time", data=np.arange(steps, dtype="int64") * 6, chunks=(steps,), fill_value=None)
    t.attrs.update({"_ARRAY_DIMENSIONS": ["time"], "units": "hours since 1979-01-01", "calendar": "proleptic_gregorian"})
    for name, n, units in (("lat", ny, "degrees_north"), ("lon", nx, "degrees_east")):
        c = g.create_dataset(name, data=np.linspace(-90, 90, n) if name == "lat" else np.linspace(0, 360, n, endpoint=False),
                             fill_value=None)
        c.attrs.update({"_ARRAY_DIMENSIONS": [name], "units": units})
    lev = g.create_dataset("level", data=np.array([850, 500, 250], "int32"), fill_value=None)
    lev.attrs.update({"_ARRAY_DIMENSIONS": ["level"], "units": "hPa"})
    lsm = g.create_dataset("lsm", data=(rng.random((ny, nx)) > 0.6).astype("float32"), fill_value=None)
    lsm.attrs["_ARRAY_DIMENSIONS"] = ["lat", "lon"]
    arrays = {}
    for v in ("t2m", "u10", "sst"):
        arrays[v] = g.create_dataset(v, shape=(steps, ny, nx), chunks=(1, ny, nx), dtype="float32", compressor=comp,
                                     fill_value=float("nan"))
        arrays[v].attrs["_ARRAY_DIMENSIONS"] = ["time", "lat", "lon"]
    arrays["z"] = g.create_dataset("z", shape=(steps, LEVELS, ny, nx), chunks=(1, LEVELS, ny, nx), dtype="float32",
                                   compressor=comp, fill_value=float("nan"))
    arrays["z"].attrs["_ARRAY_DIMENSIONS"] = ["time", "level", "lat", "lon"]
    # smooth fields (compressible as reanalyses are), different every step
    base = np.sin(np.linspace(0, 6, ny))[:, None] * np.cos(np.linspace(0, 9, nx))[None, :]
    block = 64
    for start in range(0, steps, block):
        n = min(block, steps - start)
        noise = rng.normal(0, 0.01, (n, ny, nx)).astype("float32")
        for k, v in enumerate(("t2m", "u10", "sst")):
            arrays[v][start:start + n] = (base[None] * (k + 1) + noise).round(3)
        arrays["z"][start:start + n] = (base[None, None] * np.array([1, 2, 3])[None, :, None, None]
                                        + noise[:, None]).round(3)
        print(f"  wrote {start + n}/{steps} time steps", file=sys.stderr, flush=True)
    zarr.consolidate_metadata(g.store)
    json.dump(want, open(marker, "w"))
    return path


def python_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(REPO, "build", "python") + os.pathsep + env.get("PYTHONPATH", "")
    env["OMP_NUM_THREADS"] = "1"
    return env


def served(log, offset):
    """(requests, body bytes) nginx logged since `offset` for chunk objects (not metadata)."""
    requests = total = 0
    with open(log, "rb") as fh:
        fh.seek(offset)
        for line in fh:
            # tests/servers/start_nginx.sh's format: conn reqs status "request" range bytes protocol
            m = re.search(rb'(\d{3}) "GET (\S+) [^"]*" \S+ (\d+)', line)
            if m and b"/." not in m.group(2) and m.group(1) in (b"200", b"206"):
                requests += 1
                total += int(m.group(3))
    return requests, total


WINDOW_VARS = ("t2m", "u10", "sst")


def needed_bytes(store, variables=("t2m", "u10", "z", "sst", "lsm")):
    """Bytes of the chunk objects of the variables the samples read (every time step is needed)."""
    total = 0
    for v in variables:
        d = os.path.join(store, v)
        total += sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if not f.startswith("."))
    return total


# ---- one rank (a child process) -------------------------------------------------------------

def window_child(a):
    import torch  # noqa: F401
    import lazycube.torch as lctorch
    ny, nx = (int(x) for x in a.grid.split("x"))
    ds = lctorch.BatchDataset(a.url, input_dims={"time": SPAN, "lat": ny, "lon": nx}, input_overlap={"time": SPAN - 1},
                              batch_size=BATCH, variables=list(WINDOW_VARS), shuffle=a.shuffle, seed=a.seed,
                              rank=a.rank, world_size=a.world, cache_bytes=a.cache_bytes, drop_last=False,
                              return_window_ids=True)
    loader = ds.loader(num_workers=a.workers, multiprocessing_context="spawn" if a.workers else None)
    t0 = time.perf_counter()
    order, n = [], 0
    for _, ids in loader:
        order.append([int(w) for w in ids])
        n += len(ids)
    seconds = time.perf_counter() - t0
    print(json.dumps({"order": order, "samples": n, "seconds": seconds, "fetched": ds.fetch_stats()}))


def child(a):
    if a.grid and a.windows:
        return window_child(a)
    import torch  # noqa: F401
    import lazycube.torch as lctorch
    ds = lctorch.ForecastDataset(a.url, batch_size=BATCH, shuffle=a.shuffle, seed=a.seed, rank=a.rank,
                                 world_size=a.world, cache_bytes=a.cache_bytes, index_dir=a.index_dir,
                                 missing="keep", **SPEC)
    loader = ds.loader(num_workers=a.workers, multiprocessing_context="spawn" if a.workers else None)
    t0 = time.perf_counter()
    order, n = [], 0
    for batch in loader:
        order.append([int(s) for s in batch["samples"]])
        n += len(batch["samples"])
    seconds = time.perf_counter() - t0
    print(json.dumps({"order": order, "samples": n, "seconds": seconds, "fetched": ds.fetch_stats(),
                      "anchors": len(ds.samples)}))


def run_epoch(url, args, shuffle, cache_bytes, world, workers, seed=1):
    procs = []
    for r in range(world):
        cmd = [sys.executable, __file__, "--row", "--url", url, "--shuffle", shuffle, "--seed", str(seed),
               "--rank", str(r), "--world", str(world), "--workers", str(workers), "--cache-bytes", str(cache_bytes),
               "--index-dir", args.index_dir] + (["--windows", "--grid", args.grid] if args.windows else [])
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, env=python_env(), text=True))
    outs = []
    for p in procs:
        out, _ = p.communicate(timeout=3600)
        if p.returncode != 0:
            raise SystemExit("a rank failed (%d)" % p.returncode)
        outs.append(json.loads(out.strip().splitlines()[-1]))
    return outs


def cli_rows(args, nginx, need, rows, name_format, rate, argv):
    """`lazycube bench ARGV` of this build and of --baseline-cli, alternating, twice: each row's
    egress (nginx's bytes over `need`), requests and `rate` (samples/s or windows/s) into `rows`."""
    clis = [("this build", args.cli if os.path.exists(args.cli) else os.path.join(REPO, "build", "lazycube"))]
    if args.baseline_cli:
        clis.append(("previous main", args.baseline_cli))
    for _ in range(2):
        for label, cli in clis:
            name = name_format % label
            offset = nginx.log_offset()
            out = subprocess.run([cli, "bench"] + argv, capture_output=True, text=True, timeout=3600)
            if out.returncode != 0:
                raise SystemExit("%s failed: %s" % (cli, out.stderr))
            got = json.loads(out.stdout.strip().splitlines()[-1])
            time.sleep(0.5)  # the access log's last lines
            requests, bytes_served = served(nginx.log, offset)
            row = rows.setdefault(name, {"egress": [], "requests": [], "samples_per_s": []})
            row["egress"].append(bytes_served / need)
            row["requests"].append(requests)
            row["samples_per_s"].append(got[rate])
            print("%-55s egress %.3f (%d requests), %.1f %s" % (name, bytes_served / need, requests, got[rate],
                                                                rate.replace("_per_s", "/s")),
                  file=sys.stderr, flush=True)


def quality(ranks):
    order = [s for r in ranks for b in r["order"] for s in b]
    n = len(order)
    pos = np.arange(n, dtype=float)
    anchor = np.array(order, dtype=float)
    rank_anchor = np.argsort(np.argsort(anchor)).astype(float)
    spearman = float(np.corrcoef(pos, rank_anchor)[0, 1])
    spans = sorted((max(b) - min(b)) / (n - 1) for r in ranks for b in r["order"] if len(b) > 1)
    return {"spearman": spearman, "median_batch_span": spans[len(spans) // 2],
            "exactly_once": sorted(order) == list(range(n)),
            "batches_per_rank": sorted({len(r["order"]) for r in ranks})}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cache", default="/tmp/lazycube-egress-bench")
    p.add_argument("--steps", type=int, default=2904)
    p.add_argument("--grid", default="121x240")
    p.add_argument("--latency-ms", type=int, default=50)
    p.add_argument("--cli", default=os.path.join(REPO, "build-release", "lazycube"),
                   help="this build's CLI (default build-release/lazycube, else build/lazycube)")
    p.add_argument("--baseline-cli", help="the previous main's CLI (a Release build), for the A/B rows")
    p.add_argument("--skip-processes", action="store_true", help="only the CLI rows")
    p.add_argument("--windows", action="store_true", help="windows (BatchDataset) instead of forecast samples")
    p.add_argument("--save", metavar="FILE", help="the report as JSON into FILE")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--markdown", action="store_true", help="print the report as Markdown")
    p.add_argument("--row", action="store_true", help=argparse.SUPPRESS)
    for name, kind in (("url", str), ("shuffle", str), ("seed", int), ("rank", int), ("world", int),
                       ("workers", int), ("cache-bytes", int), ("index-dir", str)):
        p.add_argument("--" + name, type=kind, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.row:
        return child(args)
    ny, nx = (int(x) for x in args.grid.split("x"))
    os.makedirs(args.cache, exist_ok=True)
    args.index_dir = args.index_dir or os.path.join(args.cache, "validity")
    load = warn_if_busy()
    store = write_store(args.cache, args.steps, ny, nx)
    if args.windows:
        return windows_main(args, store, ny, nx, load)
    need = needed_bytes(store)
    step = (3 + LEVELS) * ny * nx * 4  # decoded bytes of one time step of the time-varying fields
    footprint = SPAN * step
    nginx = Nginx(os.path.join(args.cache, "nginx"), args.cache, "/era5.zarr/.zmetadata",
                  faults={"latency_ms": args.latency_ms})
    rows, orders = {}, {}
    try:
        url = nginx.base + "/era5.zarr"
        # the validity index once (missing="keep" needs none; this warms nothing else)
        spec_path = os.path.join(args.cache, "spec.json")
        json.dump(dict(SPEC, missing="keep"), open(spec_path, "w"))  # the epoch alone: no validity pass
        cli_rows(args, nginx, need, rows, "CLI %s, chunk, cache 64 footprints", "samples_per_s",
                 [url, "--forecast", spec_path, "--batch-size", str(BATCH), "--shuffle", "chunk", "--seed", "1",
                  "--epochs", "1", "--json", "--cache-mb", str(max(1, round(64 * footprint / 2**20)))])
        cases = [] if args.skip_processes else [
            ("chunk", 64, 1, 0), ("chunk", 64, 8, 0), ("chunk", 64, 8, 2), ("chunk", 16, 1, 0),
            ("chunk", 16, 8, 0), ("random", 64, 1, 0), ("chunk", None, 1, 0)]
        for shuffle, fps, world, workers in cases:
            cache = int(fps * footprint) if fps else 64 << 30
            name = "%s, cache %s, W=%d%s" % (shuffle, "%d footprints" % fps if fps else "unlimited", world,
                                             " x %d workers" % workers if workers else "")
            offset = nginx.log_offset()
            t0 = time.perf_counter()
            ranks = run_epoch(url, args, shuffle, cache, world, workers)
            wall = time.perf_counter() - t0
            time.sleep(0.5)  # the access log's last lines
            requests, bytes_served = served(nginx.log, offset)
            samples = sum(r["samples"] for r in ranks)
            orders[name] = [s for r in ranks for b in r["order"] for s in b]
            rows[name] = dict(quality(ranks), requests=requests, bytes_served=bytes_served, bytes_needed=need,
                              egress=bytes_served / need, samples_per_s=samples / max(r["seconds"] for r in ranks),
                              wall_s=wall, cache_mb=cache / 2**20,
                              counters_egress=[round(r["fetched"]["egress_ratio"], 3) for r in ranks])
            print("%-45s egress %.3f (%d requests), %.0f samples/s, spearman %+.3f, median span %.2f"
                  % (name, rows[name]["egress"], requests, rows[name]["samples_per_s"], rows[name]["spearman"],
                     rows[name]["median_batch_span"]), file=sys.stderr, flush=True)
        other_seed = [] if args.skip_processes else run_epoch(url, args, "chunk", 64 * footprint, 1, 0, seed=2)
    finally:
        nginx.stop()
    summary = {"store": "%.2f GB of chunks (%d steps, grid %s, one step per chunk)" % (need / 1e9, args.steps, args.grid),
               "footprint": "%.1f MB (6 steps)" % (footprint / 1e6), "load average": "%.1f" % load[0]}
    by_cli = {k: v for k, v in rows.items() if k.startswith("CLI")}
    if len(by_cli) == 2:
        new_row, old_row = by_cli["CLI this build, chunk, cache 64 footprints"], by_cli[
            "CLI previous main, chunk, cache 64 footprints"]
        summary["CLI A/B (this build / previous main)"] = "egress %s vs %s; samples/s %.2fx (best of 2 each)" % (
            "/".join("%.3f" % e for e in new_row["egress"]), "/".join("%.3f" % e for e in old_row["egress"]),
            max(new_row["samples_per_s"]) / max(old_row["samples_per_s"]))
    if args.skip_processes:
        emit_report({"rows": rows, "summary": summary}, args, markdown, print_report)
        return
    ref = rows["chunk, cache unlimited, W=1"]["samples_per_s"]
    main_row = rows["chunk, cache 64 footprints, W=1"]
    summary.update({
        "egress, 64 footprints": ", ".join("%s %.3f" % (k.split(", ", 2)[2], v["egress"]) for k, v in rows.items()
                                           if "64 footprints" in k and k.startswith("chunk")) + " (target <= 1.10)",
        "egress, 16 footprints": ", ".join("%s %.3f" % (k.split(", ", 2)[2], v["egress"]) for k, v in rows.items()
                                           if "16 footprints" in k) + " (target <= 1.5)",
        "egress, random shuffle": "%.3f" % rows["random, cache 64 footprints, W=1"]["egress"],
        "shuffle quality": "spearman %+.3f, median batch span %.2f, seeds 1 and 2 give different orders: %s" % (
            main_row["spearman"], main_row["median_batch_span"],
            [s for r in other_seed for b in r["order"] for s in b] != orders["chunk, cache 64 footprints, W=1"]),
        "samples/s, 64 footprints / unlimited": "%.2f (target >= 0.8)" % (main_row["samples_per_s"] / ref),
    })
    emit_report({"rows": rows, "summary": summary}, args, markdown, print_report)


def windows_main(args, store, ny, nx, load):
    """The --windows rows (module doc)."""
    need = needed_bytes(store, WINDOW_VARS)
    footprint = SPAN * len(WINDOW_VARS) * ny * nx * 4
    nginx = Nginx(os.path.join(args.cache, "nginx-windows"), args.cache, "/era5.zarr/.zmetadata",
                  faults={"latency_ms": args.latency_ms})
    rows, orders = {}, {}
    windows = args.steps - SPAN + 1
    try:
        url = nginx.base + "/era5.zarr"
        cache_mb = max(1, round(64 * footprint / 2**20))
        cli_rows(args, nginx, need, rows, "CLI %s, windows, chunk, cache 64 footprints", "windows_per_s",
                 [url, "--variables", ",".join(WINDOW_VARS), "--input-dims", "time=%d,lat=%d,lon=%d" % (SPAN, ny, nx),
                  "--input-overlap", "time=%d" % (SPAN - 1), "--batch-size", str(BATCH), "--shuffle", "chunk",
                  "--seed", "1", "--epochs", "1", "--json", "--cache-mb", str(cache_mb)])
        cases = [] if args.skip_processes else [
            ("chunk", 64, 1, 0), ("chunk", 64, 8, 0), ("chunk", 64, 8, 2), ("chunk", 16, 1, 0), ("random", 64, 1, 0)]
        for shuffle, fps, world, workers in cases:
            cache = int(fps * footprint)
            name = "windows, %s, cache %d footprints, W=%d%s" % (shuffle, fps, world,
                                                                 " x %d workers" % workers if workers else "")
            offset = nginx.log_offset()
            ranks = run_epoch(url, args, shuffle, cache, world, workers)
            time.sleep(0.5)
            requests, bytes_served = served(nginx.log, offset)
            q = quality(ranks)
            q["exactly_once"] = sorted(w for r in ranks for b in r["order"] for w in b) == list(range(windows))
            orders[name] = [w for r in ranks for b in r["order"] for w in b]
            rows[name] = dict(q, requests=requests, bytes_served=bytes_served, bytes_needed=need,
                              egress=bytes_served / need,
                              samples_per_s=sum(r["samples"] for r in ranks) / max(r["seconds"] for r in ranks),
                              cache_mb=cache / 2**20, counters_egress=[round(r["fetched"]["egress_ratio"], 3) for r in ranks])
            print("%-55s egress %.3f (%d requests), %.0f windows/s, spearman %+.3f, median span %.2f, once %s"
                  % (name, rows[name]["egress"], requests, rows[name]["samples_per_s"], q["spearman"],
                     q["median_batch_span"], q["exactly_once"]), file=sys.stderr, flush=True)
    finally:
        nginx.stop()
    summary = {"store": "%.2f GB of chunks of %s (%d steps, grid %s, one step per chunk)" % (
                   need / 1e9, ", ".join(WINDOW_VARS), args.steps, args.grid),
               "footprint": "%.1f MB (6 steps)" % (footprint / 1e6), "load average": "%.1f" % load[0]}
    emit_report({"rows": rows, "summary": summary}, args, markdown, print_report)


def markdown(report):
    lines = ["| row | egress | requests | samples/s | spearman | median batch span |", "|---|---:|---:|---:|---:|---:|"]
    for name, r in report["rows"].items():
        if name.startswith("CLI"):
            lines.append("| %s | %s | %s | %s | | |" % (name, "/".join("%.3f" % e for e in r["egress"]),
                                                       "/".join(str(n) for n in r["requests"]),
                                                       "/".join("%.1f" % x for x in r["samples_per_s"])))
            continue
        lines.append("| %s | %.3f | %d | %.0f | %+.3f | %.2f |" % (name, r["egress"], r["requests"], r["samples_per_s"],
                                                                 r["spearman"], r["median_batch_span"]))
    lines += ["", *("- %s: %s" % kv for kv in report["summary"].items())]
    return "\n".join(lines) + "\n"


def print_report(report):
    print(markdown(report))


if __name__ == "__main__":
    main()
