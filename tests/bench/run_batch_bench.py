#!/usr/bin/python3
"""Training-batch throughput: `lazycube bench` vs xarray + dask per-window reads (what xbatcher
does inside) and, when available, xbatcher + torch DataLoader.

Workload (issue 4): an ERA5-like Zarr v2 store (make_batch_bench_data.py: t2m, u10, v10, msl over
time 512 x latitude 181 x longitude 360, chunks 8 x 181 x 360, blosc-lz4) on local disk, warm page
cache; batches of 32 windows of time 1 x latitude 64 x longitude 64 with the 4 variables as
channels, shuffled. Every peer runs in its own process (per-peer peak RSS from ru_maxrss).

Rows:
- lazycube `bench --json`: --shuffle random and --shuffle chunk with the default cache (1 GiB,
  larger than the 534 MB of data), both again with --cache-mb 64 (smaller than the data: read
  amplification), and a >= 10^6-window configuration (overlap 63 on latitude and longitude:
  118 x 297 x 512 = 17.9 M windows) with --cache-mb 256 for the time to first batch and the RSS
  bound;
- xarray 2023.01 `open_zarr` (dask): per window `ds[vars].isel(...).load()`, channels stacked with
  numpy, 32 windows stacked into a batch; the same windows in a seeded random order, for
  --peer-seconds (default 25 s);
- lazycube.BatchGenerator in xbatcher mode over the store opened with engine="lazycube": the
  same loop with window w taken as gen[w] (an xr.Dataset identical to xbatcher's batch w);
- the xarray loop and the lazycube loop again over the store loaded into memory (NumPy), in one
  process, alternating in rounds of 256 windows (the median of the per-round ratios is checked);
- xbatcher BatchGenerator + MapDataset + torch DataLoader(batch_size=32, shuffle=True,
  num_workers 0 and 2), only when XBATCHER_SRC names an xbatcher checkout and torch imports.

Targets: lazycube (one cold epoch, chunk and random shuffle, default cache) >= 50x the xarray
peer's windows/s; first batch
<= 0.5 s for the 10^6-window configuration; its peak RSS <= cache budget + 150 MiB; chunk-shuffle
read amplification <= 1.1 with the 64 MiB cache; (issue 23) lazycube's xbatcher mode >= 10x
the xarray loop, and >= 3x it on the in-memory Dataset. A report, not a test: it exits non-zero only when
a peer fails, never for a missed target. Run from the repository root with /usr/bin/python3 after
`cmake --build build --target lazycube_cli lazycube_python`.
"""
import argparse
import datetime
import json
import os
import platform
import resource
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_batch_bench_data as data  # noqa: E402
from bench_common import add_settle_argument, run_json, settle, warm, warn_if_busy  # noqa: E402

VARIABLES = list(data.VARIABLES)
INPUT_DIMS = {"time": 1, "latitude": 64, "longitude": 64}
BATCH = 32
BIG_OVERLAP = {"latitude": 63, "longitude": 63}  # (181-63) * (360-63) * 512 = 17.9 M windows
SMALL_CACHE_MB, BIG_CACHE_MB = 64, 256
TARGETS = {"speedup": 50.0, "xbatcher_mode": 10.0, "in_memory": 3.0, "first_batch_s": 0.5, "rss_slack_mb": 150.0, "chunk_amplification": 1.1}
SEED = 7


def dims_arg(d):
    return ",".join(f"{k}={v}" for k, v in d.items())


# ---------------------------------------------------------------------------- lazycube

def lazycube_rows(quick):
    """(key, label, extra args) of every lazycube run."""
    max_b = ["--max-batches", "40"] if quick else []
    big = ["--input-overlap", dims_arg(BIG_OVERLAP), "--max-batches", "40" if quick else "300"]
    return [
        ("random", "lazycube, shuffle random", ["--shuffle", "random"] + max_b),
        ("chunk", "lazycube, shuffle chunk", ["--shuffle", "chunk"] + max_b),
        ("random-3", "lazycube, shuffle random, 3 epochs", ["--shuffle", "random", "--epochs", "3"] + max_b),
        ("random-small", f"lazycube, shuffle random, cache {SMALL_CACHE_MB} MiB",
         ["--shuffle", "random", "--cache-mb", str(SMALL_CACHE_MB)] + max_b),
        ("chunk-small", f"lazycube, shuffle chunk, cache {SMALL_CACHE_MB} MiB",
         ["--shuffle", "chunk", "--cache-mb", str(SMALL_CACHE_MB)] + max_b),
        ("big-random", f"lazycube, 17.9 M windows, shuffle random, cache {BIG_CACHE_MB} MiB",
         ["--shuffle", "random", "--cache-mb", str(BIG_CACHE_MB)] + big),
        ("big-chunk", f"lazycube, 17.9 M windows, shuffle chunk, cache {BIG_CACHE_MB} MiB",
         ["--shuffle", "chunk", "--cache-mb", str(BIG_CACHE_MB)] + big),
    ]


def run_lazycube(cli, store, extra):
    cmd = [cli, "bench", store, "--variables", ",".join(VARIABLES), "--input-dims", dims_arg(INPUT_DIMS),
           "--batch-size", str(BATCH), "--seed", str(SEED), "--json"] + extra
    r = run_json(cmd)
    r["command"] = "lazycube " + " ".join(cmd[1:])
    return r


# ---------------------------------------------------------------------------- xarray peer

def rates(batches, windows, nbytes, seconds, first, **extra):
    """A Python peer's result with the same first keys as `lazycube bench --json`."""
    return dict({"batches": batches, "windows": windows, "seconds": seconds, "batches_per_s": batches / seconds,
                 "windows_per_s": windows / seconds, "mb_per_s": nbytes / 1e6 / seconds,
                 "time_to_first_batch_s": first,
                 "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}, **extra)


def window_order(sizes, seed):
    """Start indices (time, latitude, longitude) of every non-overlapping window, shuffled."""
    counts = [sizes[d] // INPUT_DIMS[d] for d in INPUT_DIMS]
    order = np.random.default_rng(seed).permutation(int(np.prod(counts)))
    return counts, order


def window_loop(window, counts, order, seconds, t_start, t_open, **extra):
    """The xbatcher-equivalent loop every Python peer runs: per window (in `order`, numbered
    row-major over `counts` as xbatcher numbers its batches) the xarray object `window(w, sel)`
    gives, its variables stacked as channels with numpy, 32 windows stacked into a batch; for
    `seconds`."""
    windows = batches = nbytes = 0
    first = None
    t_last = t_open
    for b0 in range(0, order.size - BATCH + 1, BATCH):
        items = []
        for w in order[b0:b0 + BATCH]:
            it, iy, ix = np.unravel_index(w, counts)
            sel = {d: slice(int(i) * n, int(i) * n + n)
                   for (d, n), i in zip(INPUT_DIMS.items(), (it, iy, ix))}
            sub = window(int(w), sel)
            items.append(np.stack([sub[v].values for v in VARIABLES]))
        x = np.stack(items)  # (sample, channel, time, latitude, longitude)
        t_last = time.perf_counter()
        batches += 1
        windows += x.shape[0]
        nbytes += x.nbytes
        if first is None:
            first = t_last - t_start
        if t_last - t_open >= seconds:
            break
    return rates(batches, windows, nbytes, t_last - t_open, first, windows_per_epoch=int(order.size),
                 x_shape=list(x.shape), **extra)


def xarray_worker(store, seconds, engine="zarr", in_memory=False):
    """Per window ds[vars].isel(...).load() (window_loop). engine "zarr": xr.open_zarr (dask);
    otherwise xr.open_dataset(store, engine=engine); `in_memory`: the Dataset loaded first (NumPy)."""
    import dask
    import xarray as xr
    t_start = time.perf_counter()
    opened = xr.open_zarr(store) if engine == "zarr" else xr.open_dataset(store, engine=engine)
    ds = opened[VARIABLES]
    if in_memory:
        ds = ds.load()
    t_open = time.perf_counter()
    counts, order = window_order(ds.sizes, SEED)
    return window_loop(lambda w, sel: ds.isel(sel).load(), counts, order, seconds, t_start, t_open,
                       versions={"xarray": xr.__version__, "dask": dask.__version__})


def lazycube_xbatcher_worker(store, seconds):
    """The same loop over lazycube.BatchGenerator in xbatcher mode over the store opened with
    engine="lazycube": window w is gen[w], an xr.Dataset identical to xbatcher's batch w."""
    import xarray as xr
    import lazycube
    t_start = time.perf_counter()
    ds = xr.open_dataset(store, engine="lazycube")[VARIABLES]
    gen = lazycube.BatchGenerator(ds, input_dims=dict(INPUT_DIMS))
    t_open = time.perf_counter()
    counts, order = window_order(ds.sizes, SEED)
    assert len(gen) == order.size and gen.reader == "lazycube" and isinstance(gen[0], xr.Dataset)
    return window_loop(lambda w, sel: gen[w], counts, order, seconds, t_start, t_open,
                       reader=gen.reader, versions={"lazycube": lazycube.__version__})


MEMORY_ROUND = 256  # windows per round of the in-memory pair


def memory_pair_worker(store, seconds):
    """The loop over the store loaded into memory (NumPy), xarray's isel(...).load() and
    lazycube.BatchGenerator's gen[w] (cut from the same arrays) alternating in rounds of
    MEMORY_ROUND windows in one process, so that both see the same machine (on a shared VM two
    separate runs of a few seconds differ by up to 2x); `seconds` for each. Gives both peers'
    results and the per-round ratios."""
    import xarray as xr
    import lazycube
    ds = xr.open_zarr(store)[VARIABLES].load()
    gen = lazycube.BatchGenerator(ds, input_dims=dict(INPUT_DIMS))
    counts, order = window_order(ds.sizes, SEED)
    assert len(gen) == order.size and gen.reader == "xarray" and isinstance(gen[0], xr.Dataset)
    loops = {"xarray-memory": lambda w, sel: ds.isel(sel).load(),
             "lazycube-xbatcher-memory": lambda w, sel: gen[w]}
    totals = {k: {"windows": 0, "seconds": 0.0, "bytes": 0} for k in loops}
    ratios = []
    start = 0
    while min(t["seconds"] for t in totals.values()) < seconds:
        part = order[start:start + MEMORY_ROUND]
        start = (start + MEMORY_ROUND) % (order.size - MEMORY_ROUND)
        rate = {}
        for key, window in loops.items():
            t0 = time.perf_counter()
            r = window_loop(window, counts, part, 1e9, t0, t0)
            totals[key]["windows"] += r["windows"]
            totals[key]["seconds"] += r["seconds"]
            totals[key]["bytes"] += r["mb_per_s"] * 1e6 * r["seconds"]
            rate[key] = r["windows_per_s"]
        ratios.append(rate["lazycube-xbatcher-memory"] / rate["xarray-memory"])
    out = {}
    for key, t in totals.items():
        out[key] = rates(t["windows"] // BATCH, t["windows"], t["bytes"], t["seconds"], None,
                         windows_per_epoch=int(order.size), rounds=len(ratios),
                         versions={"lazycube": lazycube.__version__, "xarray": xr.__version__})
    out["paired_ratios"] = ratios
    return out


# ---------------------------------------------------------------------------- xbatcher peer

def xbatcher_unavailable():
    src = os.environ.get("XBATCHER_SRC")
    if not src:
        return "XBATCHER_SRC is not set (point it at an xbatcher checkout)"
    if not os.path.isdir(os.path.join(src, "xbatcher")):
        return f"XBATCHER_SRC={src} holds no xbatcher/ package"
    try:
        import torch  # noqa: F401
    except ImportError as e:
        return f"torch does not import ({e})"
    return None


def to_channels(batch):
    """MapDataset transform: the 4 variables as channels (xbatcher's to_tensor takes only one)."""
    import torch
    return torch.tensor(batch.to_array().values)


def xbatcher_worker(store, seconds, workers):
    sys.path.insert(0, os.environ["XBATCHER_SRC"])
    import torch
    import xarray as xr
    import xbatcher
    from xbatcher.loaders.torch import MapDataset
    t_start = time.perf_counter()
    ds = xr.open_zarr(store)[VARIABLES]
    t_open = time.perf_counter()
    gen = xbatcher.BatchGenerator(ds, input_dims=dict(INPUT_DIMS))
    torch.manual_seed(SEED)
    loader = torch.utils.data.DataLoader(MapDataset(gen, transform=to_channels), batch_size=BATCH,
                                         shuffle=True, num_workers=workers, drop_last=True)
    windows = batches = nbytes = 0
    first = None
    t_last = t_open
    shape = None
    for x in loader:
        t_last = time.perf_counter()
        batches += 1
        windows += x.shape[0]
        nbytes += x.numel() * x.element_size()
        shape = list(x.shape)
        if first is None:
            first = t_last - t_start
        if t_last - t_open >= seconds:
            break
    return rates(batches, windows, nbytes, t_last - t_open, first, windows_per_epoch=len(gen), x_shape=shape,
                 num_workers=workers,
                 versions={"xbatcher": getattr(xbatcher, "__version__", "?"), "torch": torch.__version__})


# ---------------------------------------------------------------------------- report

def evaluate(res):
    lc, peer = res["lazycube"], res["peers"]["xarray"]
    # One cold epoch per shuffle mode: chunk shuffle is lazycube's shuffled order for training
    # (random within and across chunk groups); plain random is the peer's order.
    checks = []
    for key in ("chunk", "random"):
        speedup = lc[key]["windows_per_s"] / peer["windows_per_s"]
        checks.append({"target": f"lazycube >= {TARGETS['speedup']:.0f}x xarray windows/s (shuffle {key}, 1 epoch)",
                       "measured": f"{speedup:.1f}x", "pass": speedup >= TARGETS["speedup"]})
    peers = res["peers"]
    ratio = peers["lazycube-xbatcher"]["windows_per_s"] / peers["xarray"]["windows_per_s"]
    checks.append({"target": f"lazycube xbatcher mode (xr.Dataset per window) >= "
                             f"{TARGETS['xbatcher_mode']:.0f}x the same xarray loop",
                   "measured": f"{ratio:.1f}x", "pass": ratio >= TARGETS["xbatcher_mode"]})
    ratio = float(np.median(res["memory_paired_ratios"]))
    checks.append({"target": f"in-memory Dataset through lazycube >= {TARGETS['in_memory']:.0f}x "
                             f"the same loop (median of {len(res['memory_paired_ratios'])} "
                             f"alternating rounds)",
                   "measured": f"{ratio:.1f}x", "pass": ratio >= TARGETS["in_memory"]})
    checks += [{"target": "[info] shuffle random over 3 epochs (the cache holds the data after the first)",
                "measured": f"{lc['random-3']['windows_per_s'] / peer['windows_per_s']:.1f}x", "pass": None}]
    rss_limit = BIG_CACHE_MB + TARGETS["rss_slack_mb"]
    for key in ("big-chunk", "big-random"):
        r, shuffle = lc[key], key.split("-")[1]
        first = r["time_to_first_batch_s"]
        checks.append({"target": f"first batch <= {TARGETS['first_batch_s']} s, {r['windows_per_epoch']:,} "
                                 f"windows, shuffle {shuffle}",
                       "measured": f"{first:.3f} s", "pass": first <= TARGETS["first_batch_s"]})
        checks.append({"target": f"peak RSS <= cache {BIG_CACHE_MB} MiB + {TARGETS['rss_slack_mb']:.0f} MiB, "
                                 f"shuffle {shuffle}",
                       "measured": f"{r['peak_rss_mb']:.0f} MiB", "pass": r["peak_rss_mb"] <= rss_limit})
    amp = lc["chunk-small"]["read_amplification"]
    checks.append({"target": f"chunk-shuffle read amplification <= {TARGETS['chunk_amplification']} "
                             f"(cache {SMALL_CACHE_MB} MiB)",
                   "measured": f"{amp:.3f} (random: {lc['random-small']['read_amplification']:.2f})",
                   "pass": amp <= TARGETS["chunk_amplification"]})
    return checks


def table_rows(report):
    rows = []
    for key, label, _ in report["lazycube_rows"]:
        r = report["results"]["lazycube"][key]
        rows.append((label, r, f"{100 * r['cache_hit_rate']:.1f}", f"{r['read_amplification']:.3f}"))
    for key, r in report["results"]["peers"].items():
        rows.append((r["label"], r, "", ""))
    return rows


def fmt_row(r):
    return [f"{r['windows']}", f"{r['windows_per_s']:.1f}", f"{r['mb_per_s']:.1f}",
            "" if r["time_to_first_batch_s"] is None else f"{r['time_to_first_batch_s']:.3f}",
            f"{r['peak_rss_mb']:.0f}"]


def verdict(check):
    return {True: "PASS", False: "MISS", None: "info"}[check["pass"]]


def print_report(report):
    print(f"\n== batches of {BATCH} x {len(VARIABLES)} channels x {dims_arg(INPUT_DIMS)}, "
          f"store {report['store']} ==")
    print(f"{'peer':58} {'windows':>8} {'win/s':>9} {'MB/s':>8} {'1st s':>7} {'RSS MiB':>8} "
          f"{'hit %':>6} {'ampl.':>6}")
    for label, r, hit, amp in table_rows(report):
        w, ws, mbs, first, rss = fmt_row(r)
        print(f"{label:58} {w:>8} {ws:>9} {mbs:>8} {first:>7} {rss:>8} {hit:>6} {amp:>6}")
    for reason in report["skipped"]:
        print(f"  skipped: {reason}")
    print()
    for c in report["checks"]:
        print(f"  {c['target']:62} {c['measured']:>28}  {verdict(c)}")


def markdown(report):
    lines = ["| peer | windows | windows/s | MB/s | first batch s | peak RSS MiB | hit rate % | read ampl. |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for label, r, hit, amp in table_rows(report):
        lines.append("| " + " | ".join([label] + fmt_row(r) + [hit, amp]) + " |")
    for reason in report["skipped"]:
        lines.append(f"\nSkipped: {reason}")
    lines += ["", "| target | measured | result |", "|---|---:|---|"]
    for c in report["checks"]:
        lines.append(f"| {c['target']} | {c['measured']} | {verdict(c)} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--cache", default="build/bench-data", help="bench data dir (store written once)")
    ap.add_argument("--peer-seconds", type=float, default=25.0, help="time per Python peer (default 25)")
    ap.add_argument("--quick", action="store_true", help="40 batches per lazycube run, 5 s per peer")
    ap.add_argument("--json", action="store_true", help="print one JSON document instead")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables instead")
    add_settle_argument(ap)
    ap.add_argument("--worker", nargs=3, metavar=("PEER", "STORE", "SECONDS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        peer, store, seconds = args.worker
        if peer == "xarray":
            out = xarray_worker(store, float(seconds))
        elif peer == "lazycube-xbatcher":
            out = lazycube_xbatcher_worker(store, float(seconds))
        elif peer == "memory-pair":
            out = memory_pair_worker(store, float(seconds))
        else:
            out = xbatcher_worker(store, float(seconds), int(peer.split("-")[1]))
        print(json.dumps(out))
        return 0

    cli = os.path.join(args.build_dir, "lazycube")
    if not os.access(cli, os.X_OK):
        raise SystemExit(f"{cli} not found: build it first (cmake --build {args.build_dir} --target lazycube_cli)")
    package = os.path.abspath(os.path.join(args.build_dir, "python"))
    if not os.path.isdir(os.path.join(package, "lazycube")):
        raise SystemExit(f"{package}/lazycube not found: build it first (cmake --build {args.build_dir})")
    env = dict(os.environ, PYTHONPATH=package)  # the lazycube package of the Python peers
    quiet = args.json or args.markdown
    store = data.ensure(args.cache, verbose=not quiet)
    peer_seconds = 5.0 if args.quick else args.peer_seconds
    load = warn_if_busy()
    warm(store)
    report = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "store": store,
              "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                          "loadavg_at_start": load},
              "lazycube_rows": lazycube_rows(args.quick), "skipped": [],
              "results": {"lazycube": {}, "peers": {}}}
    for key, label, extra in report["lazycube_rows"]:
        if not quiet:
            print(f"running {label} ...", file=sys.stderr, flush=True)
        settle(args.settle)  # each row fills its cache with memory in the same state
        report["results"]["lazycube"][key] = run_lazycube(cli, store, extra)
    peers = [("xarray", "xarray open_zarr + isel(...).load() per window"),
             ("lazycube-xbatcher", "lazycube.BatchGenerator xbatcher mode (xr.Dataset) per window"),
             ("memory-pair", "in-memory Dataset: isel(...).load() / lazycube.BatchGenerator per window")]
    pair_labels = {"xarray-memory": "in-memory Dataset: isel(...).load() per window",
                   "lazycube-xbatcher-memory": "in-memory Dataset: lazycube.BatchGenerator per window"}
    reason = xbatcher_unavailable()
    if reason:
        report["skipped"].append(f"xbatcher + torch DataLoader: {reason}")
    else:
        peers += [(f"xbatcher-{w}", f"xbatcher MapDataset + DataLoader, num_workers {w}") for w in (0, 2)]
    for key, label in peers:
        if not quiet:
            print(f"running {label} ({peer_seconds:.0f} s) ...", file=sys.stderr, flush=True)
        settle(args.settle)
        r = run_json([sys.executable, os.path.abspath(__file__), "--worker", key, store, str(peer_seconds)],
                     env=env)
        if key == "memory-pair":  # two peers measured alternately in one process
            report["results"]["memory_paired_ratios"] = r.pop("paired_ratios")
            for k, v in r.items():
                report["results"]["peers"][k] = dict(v, label=pair_labels[k])
            continue
        r["label"] = label
        report["results"]["peers"][key] = r
    report["checks"] = evaluate(report["results"])
    if args.json:
        print(json.dumps(report, indent=1))
    elif args.markdown:
        print(markdown(report))
    else:
        print_report(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
