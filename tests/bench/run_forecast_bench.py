#!/usr/bin/python3
"""Forecast samples (issue 35): lazycube.torch.ForecastDataset against a GraphCast-style peer in
the same run, on an ERA5-like store.

Data (written once under --cache, default /tmp/lazycube-forecast-bench): `era5.zarr`, Zarr v2,
6-hourly from 1979 for --years (default 40: 58,440 time steps) on a 32 x 64 grid, chunks of 64
time steps, blosc lz4: t2m, u10, v10 (time, lat, lon), z (time, level 3, lat, lon), the static
lsm (lat, lon); 40 time steps removed (a gap) and NaN in u10 at 25 time steps. Float32 values:
2.7 GB. The sample: inputs [t2m, u10, v10, z] at -6h and 0h, targets the same at +6h .. +24h,
forcings [toa_incident_solar_radiation, year_progress_sin, day_progress_cos, lsm], batch 8.

Rows (each in its own process, --batches batches after the first):
  lazycube local        ForecastDataset, shuffle chunk (each time chunk fetched about once per
                        epoch), iterated in the process (the engine's threads)
  lazycube local, random shuffle         the same with a random order
  lazycube local, DataLoader 2 workers   the same through ds.loader(num_workers=2)
  lazycube over nginx 50 ms              the same store served by nginx with 50 ms injected latency
  peer (GraphCast-style)                 xr.open_dataset(engine="zarr", chunks={}), per sample
                                         .sel(time=anchor + offsets) and NumPy forcings, in a torch
                                         DataLoader with 2 workers (batch 8, shuffled)
  rollout bytes          bytes fetched for 64 anchors with rollout=1 and rollout=4 (fresh caches)
  first batch            a fresh process: construct with the validity index cached, first batch
  peak RSS               ru_maxrss of the local row against cache + fetch-ahead + 10 %

Targets: lazycube >= 10x the peer's samples/s; over nginx at 50 ms >= 50 % of the local rate;
rollout=1 bytes <= 1.1 x (2 + 1) / (2 + 4) of rollout=4's; first batch <= 1 s over >= 58,000
anchors. A report, not a test.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from bench_common import Nginx, emit_report, warm, warn_if_busy  # noqa: E402

FORMAT_VERSION = 2
NY, NX, LEVELS, CHUNK = 32, 64, 3, 64
VARS = ["t2m", "u10", "v10", "z"]
SPEC = dict(inputs=VARS, targets=VARS,
            forcings=["toa_incident_solar_radiation", "year_progress_sin", "day_progress_cos", "lsm"],
            input_offsets=["-6h", "0h"], target_offsets=["6h", "12h", "18h", "24h"], anchor_step="6h")
BATCH = 8


def write_store(root, years, chunk=CHUNK, name="era5.zarr"):
    import numcodecs
    import zarr
    path = os.path.join(root, name)
    marker = os.path.join(root, name + ".complete.json")
    want = {"version": FORMAT_VERSION, "years": years, "chunk": chunk}
    if os.path.exists(marker) and json.load(open(marker)) == want:
        return path
    steps = years * 1461
    gap = np.arange(steps // 3, steps // 3 + 40)
    keep = np.setdiff1d(np.arange(steps), gap)
    nt = len(keep)
    rng = np.random.default_rng(35)
    store = zarr.DirectoryStore(path)
    root_group = zarr.group(store, overwrite=True)
    comp = numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE)
    # coordinates without a fill value: Zarr v2's default 0 would be a _FillValue (time 0 NaT)
    t = root_group.create_dataset("time", data=(keep * 6).astype("int64"), chunks=(nt,), fill_value=None)
    t.attrs.update({"_ARRAY_DIMENSIONS": ["time"], "units": "hours since 1979-01-01", "calendar": "proleptic_gregorian"})
    lat = root_group.create_dataset("lat", data=np.linspace(88.6, -88.6, NY), fill_value=None)
    lat.attrs.update({"_ARRAY_DIMENSIONS": ["lat"], "units": "degrees_north"})
    lon = root_group.create_dataset("lon", data=np.linspace(0, 360, NX, endpoint=False), fill_value=None)
    lon.attrs.update({"_ARRAY_DIMENSIONS": ["lon"], "units": "degrees_east"})
    lev = root_group.create_dataset("level", data=np.array([850, 500, 250], "int32"), fill_value=None)
    lev.attrs.update({"_ARRAY_DIMENSIONS": ["level"], "units": "hPa"})
    lsm = root_group.create_dataset("lsm", data=(rng.random((NY, NX)) > 0.6).astype("float32"), fill_value=None)
    lsm.attrs["_ARRAY_DIMENSIONS"] = ["lat", "lon"]
    arrays = {}
    for v in ("t2m", "u10", "v10"):
        arrays[v] = root_group.create_dataset(v, shape=(nt, NY, NX), chunks=(chunk, NY, NX), dtype="float32",
                                              compressor=comp, fill_value=float("nan"))
        arrays[v].attrs["_ARRAY_DIMENSIONS"] = ["time", "lat", "lon"]
    arrays["z"] = root_group.create_dataset("z", shape=(nt, LEVELS, NY, NX), chunks=(chunk, LEVELS, NY, NX),
                                            dtype="float32", compressor=comp, fill_value=float("nan"))
    arrays["z"].attrs["_ARRAY_DIMENSIONS"] = ["time", "level", "lat", "lon"]
    nan_steps = set(rng.choice(nt, 25, replace=False).tolist())
    block = 4096
    for start in range(0, nt, block):
        n = min(block, nt - start)
        for v in ("t2m", "u10", "v10"):
            a = rng.normal(0, 1, (n, NY, NX)).astype("float32")
            if v == "u10":
                for i in range(start, start + n):
                    if i in nan_steps:
                        a[i - start, 3, 5] = np.nan
            arrays[v][start:start + n] = a
        arrays["z"][start:start + n] = rng.normal(0, 1, (n, LEVELS, NY, NX)).astype("float32")
        print(f"  wrote {start + n}/{nt} time steps", file=sys.stderr, flush=True)
    zarr.consolidate_metadata(store)
    json.dump(want, open(marker, "w"))
    return path


def python_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(REPO, "build", "python") + os.pathsep + env.get("PYTHONPATH", "")
    return env


# ---- the rows, each run in a child process (`--row NAME`) ------------------------------------

def row_lazycube(url, batches, workers, index_dir, shuffle):
    import torch  # noqa: F401
    import lazycube.torch as lctorch
    t0 = time.perf_counter()
    ds = lctorch.ForecastDataset(url, batch_size=BATCH, shuffle=shuffle, seed=1, index_dir=index_dir, **SPEC)
    loader = ds.loader(num_workers=workers, multiprocessing_context="spawn" if workers else None)
    n = 0
    t_first = None
    for batch in loader:
        n += 1
        if t_first is None:
            t_first = time.perf_counter()
        if n > batches:
            break
    t_end = time.perf_counter()
    return {"samples_per_s": (n - 1) * BATCH / (t_end - t_first), "first_batch_s": t_first - t0,
            "samples": len(ds.samples), "anchors": len(ds.samples.anchor_times), "excluded": ds.samples.excluded,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _peer_forcings(times, lat, lon, lsm):
    """The peer's NumPy forcings: solar radiation (the same closed form integrated numerically,
    12 points over the hour), year progress, local day progress, and the land-sea mask."""
    deg = np.pi / 180
    out = []
    lat2, lon2 = np.meshgrid(lat, lon, indexing="ij")
    for t in times:
        secs = (t - np.datetime64("1970-01-01", "ns")) / np.timedelta64(1, "s")
        n0 = (secs - 3600) / 86400 - 10957.5
        acc = 0
        for k in range(12):
            n = n0 + (k + 0.5) / 12 / 24
            L = 280.460 + 0.9856474 * n
            g = (357.528 + 0.9856003 * n) * deg
            lam = (L + 1.915 * np.sin(g) + 0.020 * np.sin(2 * g)) * deg
            eps = (23.439 - 0.0000004 * n) * deg
            dec = np.arcsin(np.sin(eps) * np.sin(lam))
            ra = np.arctan2(np.cos(eps) * np.sin(lam), np.cos(lam))
            h = (280.46061837 + 360.98564736629 * n) * deg + lon2 * deg - ra
            acc = acc + np.maximum(np.sin(lat2 * deg) * np.sin(dec) + np.cos(lat2 * deg) * np.cos(dec) * np.cos(h), 0)
        tisr = acc / 12
        year = np.full_like(lat2, np.sin(2 * np.pi * np.mod(secs / 86400 / 365.24219, 1)))
        day = np.cos(2 * np.pi * np.mod(secs / 86400 + lon2 / 360, 1))
        out.append(np.stack([tisr, year, day, lsm]))
    return np.stack(out).astype("float32")


def row_peer(url, batches):
    import torch
    import xarray as xr

    H = np.timedelta64(1, "h")
    inputs = np.array([-6, 0]) * H
    leads = np.array([6, 12, 18, 24]) * H

    class Samples(torch.utils.data.Dataset):
        def __init__(self):
            self.ds = None
            ds = xr.open_dataset(url, engine="zarr", chunks={})
            times = ds.time.values
            have = set(times.tolist())
            self.anchors = [t for t in times if all((t + o).astype("datetime64[ns]").tolist() in have
                                                    for o in list(inputs) + list(leads))]

        def __len__(self):
            return len(self.anchors)

        def __getitem__(self, i):
            if self.ds is None:
                self.ds = xr.open_dataset(url, engine="zarr", chunks={})
                self.lsm = self.ds.lsm.values
            ds = self.ds
            t = self.anchors[i]

            def fields(times):
                sel = ds[VARS].sel(time=times)
                parts = [sel[v].values[:, None] if sel[v].ndim == 3 else sel[v].values for v in VARS]
                return np.concatenate(parts, axis=1)

            x = fields(t + inputs)
            y = fields(t + leads)
            f = _peer_forcings(np.concatenate([t + inputs, t + leads]), ds.lat.values, ds.lon.values, self.lsm)
            return torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(f)

    t0 = time.perf_counter()
    data = Samples()
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=True, num_workers=2,
                                         generator=torch.Generator().manual_seed(1))
    n = 0
    t_first = None
    for _ in loader:
        n += 1
        if t_first is None:
            t_first = time.perf_counter()
        if n > batches:
            break
    t_end = time.perf_counter()
    return {"samples_per_s": (n - 1) * BATCH / (t_end - t_first), "first_batch_s": t_first - t0,
            "samples": len(data)}


def row_rollout(url, index_dir):
    import lazycube
    out = {}
    for k in (1, 4):
        s = lazycube.ForecastSamples(url, index_dir=index_dir, cache_bytes=1 << 30, **SPEC)
        ids = list(range(0, len(s), len(s) // 64))[:64]
        s.batch(ids, rollout=k)
        out[k] = s.cache_stats()["bytes_fetched"]
    return {"bytes_rollout_1": out[1], "bytes_rollout_4": out[4], "ratio": out[1] / out[4],
            "target_ratio": 1.1 * 3 / 6}


def row_first_batch(url, index_dir):
    import lazycube
    t0 = time.perf_counter()
    s = lazycube.ForecastSamples(url, index_dir=index_dir, **SPEC)
    loaded = s.core.index_loaded
    b = next(iter(s.batches(BATCH, shuffle="random", seed=3)))
    return {"first_batch_s": time.perf_counter() - t0, "index_loaded": loaded, "anchors": len(s.anchor_times),
            "batch_shape": list(b["inputs"].shape)}


def child(args):
    if args.row == "lazycube":
        r = row_lazycube(args.url, args.batches, args.workers, args.index_dir, args.shuffle)
    elif args.row == "peer":
        r = row_peer(args.url, args.batches)
    elif args.row == "rollout":
        r = row_rollout(args.url, args.index_dir)
    else:
        r = row_first_batch(args.url, args.index_dir)
    print(json.dumps(r))


def run_row(row, url, args, **more):
    cmd = [sys.executable, os.path.abspath(__file__), "--row", row, "--url", url, "--batches", str(args.batches),
           "--index-dir", args.index_dir]
    for k, v in more.items():
        cmd += ["--" + k.replace("_", "-"), str(v)]
    p = subprocess.run(cmd, env=python_env(), capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        raise SystemExit(f"row {row} failed:\n{p.stdout}\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def markdown(r):
    lines = ["| row | samples/s | first batch (s) |", "|---|---|---|"]
    for name in ("lazycube local", "lazycube local, random shuffle", "lazycube local, DataLoader 2 workers",
                 "lazycube over nginx 50 ms", "peer"):
        if name in r["rows"]:
            x = r["rows"][name]
            lines.append(f"| {name} | {x['samples_per_s']:.1f} | {x['first_batch_s']:.2f} |")
    lines.append("")
    for k, v in r["summary"].items():
        lines.append(f"- {k}: {v}")
    return "\n".join(lines)


def print_report(r):
    print(markdown(r))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cache", default="/tmp/lazycube-forecast-bench")
    p.add_argument("--years", type=int, default=40)
    p.add_argument("--batches", type=int, default=60)
    p.add_argument("--index-dir", default=None)
    p.add_argument("--row")
    p.add_argument("--url")
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--shuffle", default="chunk")
    p.add_argument("--json", action="store_true")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--save")
    args = p.parse_args()
    if args.row:
        return child(args)
    args.index_dir = args.index_dir or os.path.join(args.cache, "validity")
    os.makedirs(args.cache, exist_ok=True)
    load = warn_if_busy()
    url = write_store(args.cache, args.years)
    warm(url)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(url) for f in fs)
    rows = {}
    rows["first batch, index cold"] = run_row("first", url, args)
    rows["first batch"] = run_row("first", url, args)
    rows["lazycube local"] = run_row("lazycube", url, args)
    rows["lazycube local, random shuffle"] = run_row("lazycube", url, args, shuffle="random")
    rows["lazycube local, DataLoader 2 workers"] = run_row("lazycube", url, args, workers=2)
    rows["peer"] = run_row("peer", url, args)
    rows["rollout"] = run_row("rollout", url, args)
    # the same anchors in a store chunked one time step per chunk (ARCO ERA5's layout), 2 years
    rows["rollout, time chunks of 1"] = run_row("rollout", write_store(args.cache, 2, 1, "era5-t1.zarr"), args)
    nginx = Nginx(os.path.join(args.cache, "nginx"), args.cache, "/era5.zarr/.zmetadata", faults={"latency_ms": 50})
    try:
        remote = nginx.base + "/era5.zarr"
        rows["first batch over nginx 50 ms, index built"] = run_row("first", remote, args)
        rows["first batch over nginx 50 ms"] = run_row("first", remote, args)
        rows["lazycube over nginx 50 ms"] = run_row("lazycube", remote, args)
    finally:
        nginx.stop()
    local = rows["lazycube local"]["samples_per_s"]
    summary = {
        "store": f"{size / 1e9:.2f} GB, {rows['first batch']['anchors']} anchors",
        "lazycube / peer": f"{local / rows['peer']['samples_per_s']:.1f}x (target >= 10x)",
        "lazycube random shuffle / peer": f"{rows['lazycube local, random shuffle']['samples_per_s'] / rows['peer']['samples_per_s']:.1f}x",
        "nginx 50 ms / local": f"{rows['lazycube over nginx 50 ms']['samples_per_s'] / local:.2f} (target >= 0.5)",
        "rollout=1 / rollout=4 bytes": f"{rows['rollout']['ratio']:.3f} in 64-step chunks, "
                                       f"{rows['rollout, time chunks of 1']['ratio']:.3f} in 1-step chunks "
                                       f"(target <= {rows['rollout']['target_ratio']:.3f})",
        "first batch over nginx 50 ms, index cached": f"{rows['first batch over nginx 50 ms']['first_batch_s']:.2f} s",
        "first batch, index cached": f"{rows['first batch']['first_batch_s']:.2f} s (target <= 1 s; index loaded: "
                                     f"{rows['first batch']['index_loaded']})",
        "first batch, index built": f"{rows['first batch, index cold']['first_batch_s']:.2f} s",
        "peak RSS, local": f"{rows['lazycube local']['peak_rss_mb']:.0f} MiB",
        "load average": f"{load[0]:.1f}",
    }
    emit_report({"rows": rows, "summary": summary}, args, markdown, print_report)


if __name__ == "__main__":
    main()
