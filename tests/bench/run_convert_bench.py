#!/usr/bin/python3
"""Converting a store (issue 19): `lazycube convert` against xarray + dask's `to_zarr`, both
rechunking the same ERA5-like input from maps to time series.

Input (written once by zarr-python 2.13 under --cache, default build/bench-data/convert, reused
while its bench-complete.json marker matches): a consolidated Zarr v2 group shaped like ERA5 on
its 0.25-degree grid — t2m and msl, float32 (time 288, latitude 721, longitude 1440), hourly
from 2020-01-01 (CF time coordinate, int64 hours), fill value NaN as xarray writes it — chunked
as ERA5 arrives: one map per chunk, (1, 721, 1440) = 4.15 MB decoded, Blosc lz4 clevel 5 + byte
shuffle. Each map is a smooth, slowly moving large-scale pattern plus seeded noise, quantised
like GRIB-packed data (1/64 K, 1 Pa), so it compresses like reanalysis fields (~2x). 2.39 GB
decoded. `--small`: the same for 192 steps of a 361 x 720 grid (399 MB; shards time=96,
latitude=192, longitude=288). `--quick`: 48 steps of a 181 x 360 grid (25 MB), one run each, for a
smoke run.

Target layout (both peers, Zarr v2, Blosc lz4:5:shuffle — zarr-python's default — set
explicitly on both sides): time series for training on long windows at a point or a small
patch, chunks time=96, latitude=96, longitude=144 (96 x 96 x 144 float32 = 5.3 MB decoded; three
time chunks, 8 x 10 tiles per map). Every output chunk gathers 96 input maps, so this is the
rechunk that holds the most input at once. Rows, each a process of its own:

  lazycube convert, v2      lazycube convert SRC DST --format 2 --chunks time=96,latitude=96,longitude=144
                            --codec blosc:lz4:5:shuffle
  lazycube convert, v3      the same chunks in shards of time=96, latitude=384, longitude=720 (106 MB,
                            4 per time block), Zarr v3 (an extra lazycube row: no peer writes v3 here)
  xarray + dask             xr.open_dataset(SRC, engine="zarr", chunks={time: 1, latitude: 721,
  (source chunks)           longitude: 1440}).chunk({target}).to_zarr(DST, encoding=compressor) with
                            dask's default threaded scheduler (dask 2022.12, one thread per core):
                            xarray at its best here, every source chunk decoded once
  xarray open_dataset(src)  xr.open_dataset(SRC, engine="zarr").chunk({target}).to_zarr(...): the
  .chunk(...).to_zarr       peer exactly as issue 19 spells it; each dask task reads its target region
                            from the lazily indexed source, decoding every source chunk it touches
                            (one run by default, --issue-peer-runs: ~30 s here)

The same from the NetCDF4 twin of the input (--no-netcdf leaves these out): era5_like.nc, written
once beside the store by xarray + netCDF4-python as ERA5 arrives from the Copernicus data store:
one map per HDF5 chunk, zlib level 1 + shuffle (720 MB). lazycube convert to Zarr v2; xarray +
dask opened with chunks={time: 1} (each HDF5 chunk decoded once, under netCDF4's lock); xarray
open_dataset(SRC).chunk({target}) as the issue spells it (engine netcdf4; ~6 minutes here: each
target region decodes every map it touches through the netCDF-C chunk cache).

Seconds: the lazycube row is the whole CLI process; the xarray row is timed inside its process
from before open_dataset to the end of to_zarr (its Python imports are not counted). MB/s =
10^6 decoded input bytes per second. CPU s: user + system seconds of the child (least over the
runs; the xarray row's over the same span as its seconds), which a shared machine disturbs less
than wall time. Peak RSS: ru_maxrss of each child (os.wait4). Output MB: bytes of the files
written. Best of --runs (default 3) for every row, the rows alternating in rounds, warm page
cache, `sync` and --settle seconds before every timed process. Outputs of the last round are
checked, then removed: each v2 output with `xr.testing.assert_identical` against the source
(xarray over zarr-python 2.13, every variable and coordinate, --verify-block time steps at a
time), the v3 output against the source through lazycube (every variable, raw and CF-decoded).
About 12 minutes at full size with --runs 3 (the two as-spelled xarray rows ~7 of them; 2.5 with
--no-netcdf), the read-back checks included.

Decode + encode bound (issue 47; convert_bound, --no-bound leaves it out), printed beside the
rows: every source chunk decoded once and every output chunk encoded once, single-threaded with
numcodecs (Blosc's threads off) into reused buffers, the seconds summed and divided by the cores;
gathering, writing and page faults are not in it. For the NetCDF4 twin the same maps deflated as
its HDF5 chunks are (shuffle + zlib level 1), inflated with Python's zlib and unshuffled by Blosc.
Each lazycube row is
reported as a fraction of it (bound seconds / the row's seconds; target >= 80 %).

--baseline CLI: every lazycube row again with another lazycube CLI (the previous main's), in
the same rounds, reported as an A/B (not read back).

Targets (issue 19): lazycube >= 3x the rate of xarray.open_dataset(src).chunk(...).to_zarr(dst);
(issue 47) >= 2x xarray + dask opened with the source's chunks, >= 80 % of the bound; lazycube's
peak RSS bounded by what it holds, not by the input: <= its chunk cache (512 MiB, ZarrOutputOptions::cache_bytes) + 2 x the
regions in flight (decoded + encoded; at most cores + 1 regions and 1 GiB) + 100 MiB.

Run from the repository root with Debian's /usr/bin/python3 after
`cmake --build build --target lazycube_cli lazycube_python`. A report, not a test: it exits non-zero only
when a peer fails or an output differs from the source, never for a missed target.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_common import REPO, emit_report, settle, warm, warn_if_busy  # noqa: E402

MB = 1e6
MIB = 1 << 20
FORMAT_VERSION = 1  # bump when the generated data changes
SEED = 20200101
VARIABLES = ("t2m", "msl")
CODEC = "blosc:lz4:5:shuffle"
SIZES = {
    "full": {"nt": 288, "ny": 721, "nx": 1440, "chunks": {"time": 96, "latitude": 96, "longitude": 144},
             "shards": {"time": 96, "latitude": 384, "longitude": 720}},
    "small": {"nt": 192, "ny": 361, "nx": 720, "chunks": {"time": 96, "latitude": 96, "longitude": 144},
              "shards": {"time": 96, "latitude": 192, "longitude": 288}},
    "quick": {"nt": 48, "ny": 181, "nx": 360, "chunks": {"time": 24, "latitude": 48, "longitude": 96},
              "shards": {"time": 24, "latitude": 96, "longitude": 192}},
}
CACHE_MIB = 512  # ZarrOutputOptions::cache_bytes, the CLI's default
IN_FLIGHT_CAP = 1 << 30  # zarr_output.cpp kInFlightBytes
TARGET_SPEED = 3.0
TARGET_BOUND = 0.8  # of the decode + encode bound
TARGET_TUNED = 2.0  # issue 47: against xarray + dask opened with the source's chunks
ATTRS = {
    "t2m": {"units": "K", "long_name": "2 metre temperature", "standard_name": "air_temperature"},
    "msl": {"units": "Pa", "long_name": "Mean sea level pressure",
            "standard_name": "air_pressure_at_mean_sea_level"},
}


# ---------------------------------------------------------------------------- data

def fields(t, ny, nx):
    """{variable: (ny, nx) float32} for time step t; depends only on (SEED, t)."""
    lat = np.deg2rad(np.linspace(90.0, -90.0, ny, dtype=np.float32))[:, None]
    lon = np.deg2rad(np.linspace(0.0, 360.0, nx, endpoint=False, dtype=np.float32))[None, :]
    ph = np.float32(0.05 * t)
    rng = np.random.default_rng([SEED, t])

    def noisy(field, sigma, quantum):
        field = field + rng.normal(0.0, sigma, size=(ny, nx)).astype(np.float32)
        return (np.round(field / quantum) * quantum).astype(np.float32)

    return {
        "t2m": noisy(288.0 - 45.0 * np.sin(lat) ** 2 + 6.0 * np.cos(lat) * np.sin(3 * lon + ph)
                     + 3.0 * np.sin(2 * lat + 0.5 * ph) * np.cos(5 * lon - 2 * ph), 0.4, 1 / 64),
        "msl": noisy(101325.0 + 1500.0 * np.cos(2 * lat) + 900.0 * np.sin(lat) * np.sin(4 * lon + 0.7 * ph),
                     40.0, 1.0),
    }


def ensure_store(cache, size, verbose):
    """Writes CACHE/<size>/era5_like.zarr once; reuses it while its marker matches. Returns
    (store path, marker dict)."""
    import numcodecs
    import zarr
    cfg = SIZES[size]
    nt, ny, nx = cfg["nt"], cfg["ny"], cfg["nx"]
    root = os.path.join(cache, size)
    store = os.path.join(root, "era5_like.zarr")
    marker_path = os.path.join(root, "bench-complete.json")
    want = {"format_version": FORMAT_VERSION, "seed": SEED, "shape": [nt, ny, nx], "chunks": [1, ny, nx],
            "variables": list(VARIABLES), "compressor": CODEC}
    if os.path.exists(marker_path):
        with open(marker_path) as fh:
            marker = json.load(fh)
        if all(marker.get(k) == v for k, v in want.items()) and os.path.isdir(store):
            return store, marker
        os.remove(marker_path)
    if verbose:
        print(f"writing {store} ({len(VARIABLES)} x {nt} maps of {ny} x {nx}) ...", file=sys.stderr, flush=True)
    shutil.rmtree(store, ignore_errors=True)
    os.makedirs(root, exist_ok=True)
    g = zarr.open_group(store, mode="w")
    g.attrs.update({"Conventions": "CF-1.6", "title": "ERA5-like benchmark input (lazycube tests/bench)"})
    comp = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
    arrays = {}
    for name in VARIABLES:
        a = g.create_dataset(name, shape=(nt, ny, nx), chunks=(1, ny, nx), dtype="f4", compressor=comp,
                             fill_value=np.nan)
        a.attrs.update(dict(ATTRS[name], _ARRAY_DIMENSIONS=["time", "latitude", "longitude"]))
        arrays[name] = a
    coords = (("time", np.arange(nt, dtype="i8"),
               {"units": "hours since 2020-01-01 00:00:00", "calendar": "proleptic_gregorian",
                "standard_name": "time"}),
              ("latitude", np.linspace(90.0, -90.0, ny), {"units": "degrees_north", "standard_name": "latitude"}),
              ("longitude", np.linspace(0.0, 360.0, nx, endpoint=False),
               {"units": "degrees_east", "standard_name": "longitude"}))
    for name, values, attrs in coords:
        a = g.create_dataset(name, shape=values.shape, chunks=values.shape, dtype=values.dtype, compressor=comp,
                             fill_value=None if values.dtype.kind == "i" else np.nan)
        a[:] = values
        a.attrs.update(dict(attrs, _ARRAY_DIMENSIONS=[name]))
    step = 8
    for t0 in range(0, nt, step):
        block = {name: [] for name in VARIABLES}
        for t in range(t0, min(nt, t0 + step)):
            for name, f in fields(t, ny, nx).items():
                block[name].append(f)
        for name in VARIABLES:
            arrays[name][t0:t0 + len(block[name])] = np.stack(block[name])
    zarr.consolidate_metadata(store)
    nbytes = len(VARIABLES) * nt * ny * nx * 4 + nt * 8 + ny * 8 + nx * 8
    marker = dict(want, bytes=nbytes, stored_bytes=tree_bytes(store))
    with open(marker_path, "w") as fh:
        json.dump(marker, fh)
    return store, marker


def ensure_netcdf(store, verbose):
    """The NetCDF4 twin of the input, written once beside it by xarray + netCDF4-python, as ERA5
    arrives from the Copernicus data store: one map per HDF5 chunk, zlib level 1 + shuffle, the
    same values, coordinates and attributes. Returns its path."""
    import xarray as xr
    path = os.path.join(os.path.dirname(store), "era5_like.nc")
    marker_path = path + ".complete.json"
    want = {"format_version": FORMAT_VERSION, "store_marker_mtime": os.path.getmtime(
        os.path.join(os.path.dirname(store), "bench-complete.json"))}
    if os.path.exists(marker_path) and os.path.exists(path):
        with open(marker_path) as fh:
            if json.load(fh) == want:
                return path
    if verbose:
        print(f"writing {path} ...", file=sys.stderr, flush=True)
    with xr.open_dataset(store, engine="zarr", chunks={"time": 8}) as ds:
        encoding = {v: {"zlib": True, "complevel": 1, "shuffle": True, "chunksizes": (1,) + ds[v].shape[1:]}
                    for v in ds.data_vars}
        ds.to_netcdf(path, engine="netcdf4", encoding=encoding)
    with open(marker_path, "w") as fh:
        json.dump(want, fh)
    return path


def tree_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


def dims_text(d):
    return ",".join(f"{k}={v}" for k, v in d.items())


# ---------------------------------------------------------------------------- peers

def source_engine(src):
    return "netcdf4" if src.endswith(".nc") else "zarr"


# Encoding keys that describe how the source stored a variable (chunks, compression), which
# to_zarr would refuse or misapply; the CF keys (dtype, units, calendar, _FillValue, scale) stay.
STORAGE_ENCODING = ("chunks", "preferred_chunks", "chunksizes", "zlib", "complevel", "shuffle", "fletcher32",
                    "contiguous", "compression", "compressor", "filters", "szip_coding", "szip_pixels_per_block")


def xarray_worker(src, dst, size, form):
    """The peer, in its own process: open, rechunk to the target, to_zarr (dask's threaded
    scheduler), the same compressor as lazycube's row. form "tuned": opened with dask chunks of
    one source chunk (each source chunk decoded once); form "issue": `open_dataset(src)` without
    chunks, as issue 19 spells the peer (each dask task reads its target region from the lazily
    indexed backend array)."""
    import dask
    import numcodecs
    import xarray as xr
    import zarr
    import resource
    cfg = SIZES[size]

    def cpu():
        ru = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process
        return ru.ru_utime + ru.ru_stime

    cpu0, t0 = cpu(), time.perf_counter()
    chunks = {"time": 1, "latitude": cfg["ny"], "longitude": cfg["nx"]} if form == "tuned" else None
    ds = xr.open_dataset(src, engine=source_engine(src), chunks=chunks)
    ds = ds.chunk(cfg["chunks"])
    comp = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
    for v in ds.variables.values():
        for key in STORAGE_ENCODING:  # the dask chunks and the compressor below set the output's
            v.encoding.pop(key, None)
    ds.to_zarr(dst, mode="w", consolidated=True, encoding={name: {"compressor": comp} for name in ds.variables})
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "cpu_s": cpu() - cpu0, "versions": {"xarray": xr.__version__, "dask": dask.__version__,
                                             "zarr": zarr.__version__, "numcodecs": numcodecs.__version__},
            "scheduler": "threaded (dask default)"}


def timed(cmd):
    """Runs `cmd`; (wall seconds, peak RSS MiB, CPU seconds (user + system) of that child,
    stdout). RuntimeError on failure."""
    import tempfile
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        # wait4 on this pid: the rusage of this child alone (RUSAGE_CHILDREN would mix the peers).
        _, status, ru = os.wait4(p.pid, 0)
        seconds = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            sys.stderr.write(err.read())
            raise RuntimeError(f"FAILED ({p.returncode}): {' '.join(cmd)}")
        return seconds, ru.ru_maxrss / 1024.0, ru.ru_utime + ru.ru_stime, out.read()


def peers(cli, src, nc_src, out, size, baseline=None):
    """(key, label, argv, source, destination) in run order within a round; the NetCDF rows when
    nc_src is given; each lazycube row again with the `baseline` CLI (key + "_base") when given."""
    cfg = SIZES[size]
    chunks, shards = dims_text(cfg["chunks"]), dims_text(cfg["shards"])

    def lazycube(source, dst, *extra, tool=cli):
        return [tool, "convert", source, dst, "--chunks", chunks, "--codec", CODEC, "--no-progress", *extra]

    def xarray(source, dst, form):
        return [sys.executable, os.path.abspath(__file__), "--xarray-worker", source, dst, "--size", size,
                "--form", form]

    v2, v3, xr_dst, xr_issue = (os.path.join(out, n) for n in ("lazycube-v2.zarr", "lazycube-v3.zarr",
                                                               "xarray-v2.zarr", "xarray-issue-v2.zarr"))
    rows = [
        ("lazycube_v2", "lazycube convert, Zarr v2", lazycube(src, v2, "--format", "2"), src, v2),
        ("xarray_dask", "xarray + dask to_zarr (source chunks), Zarr v2", xarray(src, xr_dst, "tuned"), src, xr_dst),
        ("xarray_issue", "xarray open_dataset(src).chunk(...).to_zarr", xarray(src, xr_issue, "issue"), src, xr_issue),
        ("lazycube_v3", "lazycube convert, Zarr v3 sharded",
         lazycube(src, v3, "--format", "3", "--shards", shards), src, v3),
    ]
    if nc_src:
        nc_v2, nc_xr, nc_issue = (os.path.join(out, n) for n in ("nc-lazycube-v2.zarr", "nc-xarray-v2.zarr",
                                                                "nc-xarray-issue-v2.zarr"))
        rows += [
            ("nc_lazycube_v2", "NetCDF4 source: lazycube convert, Zarr v2", lazycube(nc_src, nc_v2, "--format", "2"),
             nc_src, nc_v2),
            ("nc_xarray_dask", "NetCDF4 source: xarray + dask (source chunks)", xarray(nc_src, nc_xr, "tuned"),
             nc_src, nc_xr),
            ("nc_xarray_issue", "NetCDF4 source: xarray open_dataset(src).chunk(...)",
             xarray(nc_src, nc_issue, "issue"), nc_src, nc_issue),
        ]
    if baseline:
        for key, label, cmd, source, dst in list(rows):
            if not is_xarray(key):
                base_dst = dst.replace(".zarr", "-base.zarr")
                rows.append((key + "_base", label + " (baseline CLI)", [baseline] + cmd[1:3] + [base_dst] + cmd[4:],
                             source, base_dst))
    return rows


def is_issue_peer(key):
    return key.endswith("xarray_issue")


def is_xarray(key):
    return "xarray" in key


# ---------------------------------------------------------------------------- checks

def verify_v2(src, dst, block):
    """xarray (over zarr-python 2.13) reads `dst` identical to `src`, `block` time steps at a time."""
    import xarray as xr
    a = xr.open_dataset(src, engine=source_engine(src), chunks=None)
    b = xr.open_dataset(dst, engine="zarr", chunks=None)
    if sorted(a.variables) != sorted(b.variables):
        raise AssertionError(f"variables differ: {sorted(a.variables)} vs {sorted(b.variables)}")
    for t0 in range(0, a.sizes["time"], block):
        sel = {"time": slice(t0, t0 + block)}
        xr.testing.assert_identical(b.isel(sel).load(), a.isel(sel).load())


def verify_v3(build_dir, src, dst, block):
    """lazycube reads `dst` equal to `src` (raw and CF-decoded), `block` time steps at a time."""
    sys.path.insert(0, os.path.join(build_dir, "python"))
    import lazycube
    decoded_src = lazycube.open_dataset(src)
    for decode_cf in (False, True):
        a = lazycube.open_dataset(src, decode_cf=decode_cf)
        b = lazycube.open_dataset(dst, decode_cf=decode_cf)
        if sorted(a.variables) != sorted(b.variables):
            raise AssertionError(f"variables differ: {sorted(a.variables)} vs {sorted(b.variables)}")
        if dict(a.attrs) != dict(b.attrs):
            raise AssertionError("group attributes differ")
        for name in a.variables:
            va, vb = a[name], b[name]
            want = dict(va.attrs)
            if not decode_cf and "_FillValue" in decoded_src[name].encoding:
                # The v2 source keeps its fill value in the array metadata; the v3 copy in the
                # _FillValue attribute (as xarray writes v3), which a raw open shows.
                want.setdefault("_FillValue", decoded_src[name].encoding["_FillValue"])
            if va.dims != vb.dims or va.dtype != vb.dtype or want != dict(vb.attrs):
                raise AssertionError(f"{name}: dims/dtype/attrs differ: {va.dims} {va.dtype} {want} vs "
                                     f"{vb.dims} {vb.dtype} {dict(vb.attrs)}")
            if "time" in va.dims and va.dims != ("time",):
                for t0 in range(0, a.sizes["time"], block):
                    sel = {"time": slice(t0, t0 + block)}
                    np.testing.assert_array_equal(vb.isel(sel).values, va.isel(sel).values, err_msg=name)
            else:
                np.testing.assert_array_equal(vb.values, va.values, err_msg=name)


# ---------------------------------------------------------------------------- bound

def convert_bound(src, size, netcdf):
    """The decode + encode bound of the convert (as the read bench's decode bound): every source
    chunk decoded once and every output chunk encoded once, single-threaded (numcodecs, Blosc's own
    threads off, into buffers reused across chunks), the seconds summed; the bound is that sum
    divided by the cores. Gathering the output chunks, writing and page faults are not counted.
    The Zarr source's chunks are its stored bytes (blosc lz4:5:shuffle); for the NetCDF4 twin the
    same maps deflated as its HDF5 chunks are (4-byte shuffle + zlib level 1: Python's zlib and a
    NumPy transpose for the unshuffle; the bytes are made here, not read from the HDF5 file: no
    h5py here). Returns
    {decode_s, encode_s, single_s, cores, bound_s} per source ("zarr", and "netcdf" when asked)."""
    import numcodecs
    import zarr
    from numcodecs import blosc
    blosc.use_threads = False
    cfg = SIZES[size]
    nt, ny, nx = cfg["nt"], cfg["ny"], cfg["nx"]
    ct, cy, cx = (cfg["chunks"][d] for d in ("time", "latitude", "longitude"))
    out_codec = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
    unshuffler = numcodecs.Blosc(cname="lz4", clevel=0, shuffle=numcodecs.Blosc.SHUFFLE)
    g = zarr.open_group(src, mode="r")
    cores = os.cpu_count() or 1
    sums = {"zarr": [0.0, 0.0]}
    if netcdf:
        sums["netcdf"] = [0.0, 0.0]
    block = np.empty((ct, ny, nx), np.float32)
    tile = np.empty((ct, cy, cx), np.float32)
    clock = time.perf_counter
    for name in VARIABLES:
        a = g[name]
        src_codec = a.compressor
        for t0 in range(0, nt, ct):
            n = min(ct, nt - t0)
            for t in range(t0, t0 + n):
                raw = a.store[a._chunk_key((t, 0, 0))]
                c0 = clock()
                src_codec.decode(raw, out=block[t - t0])
                sums["zarr"][0] += clock() - c0
                if netcdf:  # the HDF5 chunk of this map: shuffle, then deflate (untimed); its decode timed
                    as_bytes = block[t - t0].view(np.uint8).reshape(-1, 4)
                    deflated = zlib.compress(np.ascontiguousarray(as_bytes.T).tobytes(), 1)
                    stored_shuffled = unshuffler.encode(block[t - t0])
                    c0 = clock()
                    zlib.decompress(deflated)
                    # The unshuffle at SIMD speed (a NumPy transpose is ~10x slower): Blosc's, of
                    # a level-0 frame, which holds the same shuffled bytes uncompressed.
                    unshuffler.decode(stored_shuffled, out=block[t - t0])
                    sums["netcdf"][0] += clock() - c0
            block[n:] = np.nan  # the fill value pads the last time block, as the writers pad it
            for y0 in range(0, ny, cy):
                for x0 in range(0, nx, cx):
                    part = block[:, y0:y0 + cy, x0:x0 + cx]
                    tile.fill(np.nan)
                    tile[:, :part.shape[1], :part.shape[2]] = part
                    c0 = clock()
                    out_codec.encode(tile)
                    spent = clock() - c0
                    for key in sums:
                        sums[key][1] += spent
    return {key: {"decode_s": d, "encode_s": e, "single_s": d + e, "cores": cores, "bound_s": (d + e) / cores}
            for key, (d, e) in sums.items()}


# ---------------------------------------------------------------------------- report

def rss_bound_mib(size):
    """What lazycube may hold (see the docstring): cache + 2 x regions in flight + 100 MiB."""
    cfg = SIZES[size]
    bounds = {}
    for key, unit in (("lazycube_v2", cfg["chunks"]), ("lazycube_v3", cfg["shards"]),
                      ("nc_lazycube_v2", cfg["chunks"])):
        region = 4
        for dim, n in unit.items():
            region *= min(n, {"time": cfg["nt"], "latitude": cfg["ny"], "longitude": cfg["nx"]}[dim])
        in_flight = max(1, min((os.cpu_count() or 1) + 1, IN_FLIGHT_CAP // region))
        bounds[key] = CACHE_MIB + 2 * in_flight * region / MIB + 100
    return bounds


# (lazycube row, its xarray peers (as the issue spells it, tuned to the source's chunks), label)
COMPARISONS = (("lazycube_v2", "xarray_issue", "xarray_dask", "v2"),
               ("lazycube_v3", "xarray_issue", "xarray_dask", "v3 sharded"),
               ("nc_lazycube_v2", "nc_xarray_issue", "nc_xarray_dask", "NetCDF4 -> v2"))


def summarize(report):
    nbytes = report["input_bytes"]
    rows = report["results"]
    for r in rows.values():
        r["best_s"] = min(r["seconds"])
        r["mb_per_s"] = nbytes / MB / r["best_s"]
        r["peak_rss_mib"] = max(r["rss_mib"])
        r["least_cpu_s"] = min(r["cpu_s"])
    checks = {}
    for key, issue_peer, tuned_peer, _ in COMPARISONS:
        if key not in rows:
            continue
        r, x = rows[key], rows[tuned_peer]
        checks[key] = {"speed_tuned": x["best_s"] / r["best_s"],
                       "rss_ratio": r["peak_rss_mib"] / x["peak_rss_mib"],
                       "cpu_ratio": x["least_cpu_s"] / r["least_cpu_s"],
                       "rss_bound_mib": report["rss_bounds_mib"][key]}
        if issue_peer in rows:
            checks[key]["speed_issue"] = rows[issue_peer]["best_s"] / r["best_s"]
        bound = report.get("bound", {}).get("netcdf" if key.startswith("nc_") else "zarr")
        if bound:
            checks[key]["bound_s"] = bound["bound_s"]
            checks[key]["bound_fraction"] = bound["bound_s"] / r["best_s"]
        if key + "_base" in rows:
            checks[key]["speed_base"] = rows[key + "_base"]["best_s"] / r["best_s"]
    report["checks"] = checks


def table_rows(report):
    input_mib = report["input_bytes"] / MIB
    for key, r in report["results"].items():
        yield (r["label"], f"{r['best_s']:.2f}", "/".join(f"{s:.2f}" for s in r["seconds"]), f"{r['mb_per_s']:.0f}",
               f"{r['least_cpu_s']:.2f}", f"{r['peak_rss_mib']:.0f}", f"{r['peak_rss_mib'] / input_mib:.2f}", f"{r['output_bytes'] / MB:.0f}",
               r.get("verified", "not checked"))


def bound_rows(report):
    """The decode + encode bound as rows beside the peers: (label, seconds, MB/s)."""
    for key, b in report.get("bound", {}).items():
        tag = "NetCDF4 source: " if key == "netcdf" else ""
        yield (f"{tag}decode + encode bound (1 thread x {b['cores']}: decode {b['decode_s']:.2f} s + encode "
               f"{b['encode_s']:.2f} s)", f"{b['bound_s']:.2f}", f"{report['input_bytes'] / MB / b['bound_s']:.0f}")


HEADER = ("peer", "best s", "runs s", "MB/s", "CPU s", "peak RSS MiB", "RSS / input", "output MB", "reads back")


def target_lines(report):
    c, rows = report["checks"], report["results"]
    out = []
    for key, _, _, tag in COMPARISONS:
        if key not in c:
            continue
        x = c[key]
        if "speed_issue" in x:
            out.append((f"lazycube {tag} / xarray open_dataset(src).chunk(...).to_zarr (the issue's peer)",
                        f"{x['speed_issue']:.2f}x", f">= {TARGET_SPEED:.0f}x",
                        "PASS" if x["speed_issue"] >= TARGET_SPEED else "MISS"))
        out.append((f"lazycube {tag} / xarray + dask opened with the source's chunks", f"{x['speed_tuned']:.2f}x",
                    f">= {TARGET_TUNED:.0f}x", "PASS" if x["speed_tuned"] >= TARGET_TUNED else "MISS"))
        rss = rows[key]["peak_rss_mib"]
        out.append((f"lazycube {tag} peak RSS (MiB)", f"{rss:.0f}", f"<= {x['rss_bound_mib']:.0f}",
                    "PASS" if rss <= x["rss_bound_mib"] else "MISS"))
        out.append((f"lazycube {tag} / xarray+dask (source chunks) peak RSS", f"{x['rss_ratio']:.2f}", "(info)", ""))
        out.append((f"xarray+dask (source chunks) / lazycube {tag} CPU seconds", f"{x['cpu_ratio']:.2f}x", "(info)", ""))
        if "bound_fraction" in x:
            out.append((f"lazycube {tag} / decode + encode bound ({x['bound_s']:.2f} s)",
                        f"{100 * x['bound_fraction']:.0f} %", f">= {100 * TARGET_BOUND:.0f} %",
                        "PASS" if x["bound_fraction"] >= TARGET_BOUND else "MISS"))
        if "speed_base" in x:
            out.append((f"lazycube {tag} / the baseline CLI (seconds)", f"{x['speed_base']:.2f}x", "(A/B)", ""))
    return out


def print_report(report):
    m = report["machine"]
    print(f"\n== convert: {report['input_bytes'] / MB:.0f} MB input ({report['input_bytes'] / MIB:.0f} MiB decoded, "
          f"{report['input_stored_bytes'] / MB:.0f} MB stored), maps -> chunks {report['chunks']}, "
          f"{m['cpu_count']} CPUs, load {m['loadavg_at_start'][0]:.2f} at start / {m['loadavg_at_end'][0]:.2f} at end, best of {report['runs']} "
          f"(xarray with source chunks: {report['peer_runs']}, open_dataset(src).chunk: "
          f"{report['issue_peer_runs']}) ==")
    widths = (52, 7, 20, 6, 6, 12, 11, 9, 12)
    print("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(HEADER, widths))))
    for row in table_rows(report):
        print("  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(row, widths))))
    for label, seconds, rate in bound_rows(report):
        print(f"{label:52}  {seconds:>7}  {'':>20}  {rate:>6}")
    for name, value, target, result in target_lines(report):
        print(f"  {name:84} {value:>8}  {target:>8}  {result}")


def markdown(report):
    lines = ["| " + " | ".join(HEADER) + " |", "|---|" + "---:|" * (len(HEADER) - 2) + "---|"]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(report)]
    lines += [f"| {label} | {seconds} | | {rate} | | | | | |" for label, seconds, rate in bound_rows(report)]
    lines += ["", "| target | measured | bound | result |", "|---|---:|---:|---|"]
    lines += [f"| {n} | {v} | {t} | {r} |" for n, v, t, r in target_lines(report)]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--cache", default="build/bench-data/convert", help="input store (written once) and outputs")
    ap.add_argument("--runs", type=int, default=3, help="timed runs of each lazycube row (best reported)")
    ap.add_argument("--peer-runs", type=int, default=None,
                    help="timed runs of the xarray + dask rows opened with the source's chunks (default: --runs)")
    ap.add_argument("--issue-peer-runs", type=int, default=1,
                    help="timed runs of the open_dataset(src).chunk(...) rows (default 1: minutes each at full size)")
    ap.add_argument("--no-netcdf", action="store_true", help="leave out the NetCDF4-source rows")
    ap.add_argument("--verify-block", type=int, default=96, help="time steps compared at a time")
    ap.add_argument("--no-verify", action="store_true", help="skip the read-back checks")
    ap.add_argument("--keep", action="store_true", help="keep the outputs of the last round")
    ap.add_argument("--quick", action="store_true", help="48 steps of 181 x 360, one run each (smoke run)")
    ap.add_argument("--small", action="store_true",
                    help="the smaller store: 192 steps of 361 x 720 (399 MB), shards time=96,latitude=192,longitude=288")
    ap.add_argument("--baseline", metavar="CLI",
                    help="also run every lazycube row with this lazycube CLI (an A/B, alternating in the rounds)")
    ap.add_argument("--no-bound", action="store_true", help="leave out the decode + encode bound")
    ap.add_argument("--json", action="store_true", help="print one JSON document instead")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables instead")
    ap.add_argument("--save", metavar="FILE", help="also write the JSON document to FILE")
    ap.add_argument("--settle", type=float, default=2.0,
                    help="least seconds between the timed processes (bench_common.settle)")
    ap.add_argument("--xarray-worker", nargs=2, metavar=("SRC", "DST"), help=argparse.SUPPRESS)
    ap.add_argument("--bound-worker", metavar="SRC", help=argparse.SUPPRESS)
    ap.add_argument("--bound-netcdf", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--size", default="full", help=argparse.SUPPRESS)
    ap.add_argument("--form", default="tuned", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.xarray_worker:
        print(json.dumps(xarray_worker(*args.xarray_worker, args.size, args.form)))
        return 0
    if args.bound_worker:
        print(json.dumps(convert_bound(args.bound_worker, args.size, args.bound_netcdf)))
        return 0
    size = "quick" if args.quick else "small" if args.small else "full"
    if args.quick:
        args.runs = args.peer_runs = args.issue_peer_runs = 1
    if args.peer_runs is None:
        args.peer_runs = args.runs
    cli = os.path.abspath(os.path.join(args.build_dir, "lazycube"))
    if not os.access(cli, os.X_OK):
        raise SystemExit(f"{cli} not found: build it first (cmake --build {args.build_dir} --target lazycube_cli lazycube_python)")
    quiet = args.json or args.markdown
    cache = os.path.abspath(args.cache)
    src, marker = ensure_store(cache, size, verbose=not quiet)
    nc_src = None if args.no_netcdf else ensure_netcdf(src, verbose=not quiet)
    out = os.path.join(cache, size, "out")
    load = warn_if_busy()
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    report = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "commit": commit,
              "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(), "loadavg_at_start": load},
              "size": size, "input_bytes": marker["bytes"], "input_stored_bytes": marker["stored_bytes"],
              "chunks": dims_text(SIZES[size]["chunks"]), "shards": dims_text(SIZES[size]["shards"]),
              "codec": CODEC, "runs": args.runs, "peer_runs": args.peer_runs,
              "issue_peer_runs": args.issue_peer_runs,
              "rss_bounds_mib": rss_bound_mib(size), "results": {}}
    plan = peers(cli, src, nc_src, out, size, os.path.abspath(args.baseline) if args.baseline else None)
    if not args.no_bound:
        if not quiet:
            print("  decode + encode bound ...", file=sys.stderr, flush=True)
        # In a child process: the parent's memory would show in every later child's peak RSS
        # (ru_maxrss counts the image forked before exec).
        report["bound"] = json.loads(subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--bound-worker", src, "--size", size]
            + ([] if nc_src is None else ["--bound-netcdf"]), check=True, capture_output=True,
            text=True).stdout.strip().splitlines()[-1])

    def runs_of(key):
        return args.issue_peer_runs if is_issue_peer(key) else args.peer_runs if is_xarray(key) else args.runs

    failed = False
    try:
        for rnd in range(max(args.runs, args.peer_runs, args.issue_peer_runs)):
            for key, label, cmd, source, dst in plan:
                if rnd >= runs_of(key):
                    continue
                shutil.rmtree(dst, ignore_errors=True)
                os.makedirs(out, exist_ok=True)
                warm(source)
                os.sync()
                settle(args.settle)
                if not quiet:
                    print(f"  round {rnd + 1}: {label} ...", file=sys.stderr, flush=True)
                seconds, rss, cpu, stdout = timed(cmd)
                row = report["results"].setdefault(key, {"label": label, "command": cmd, "seconds": [], "rss_mib": [],
                                                         "wall_s": [], "cpu_s": []})
                row["wall_s"].append(seconds)
                if is_xarray(key):
                    inner = json.loads(stdout.strip().splitlines()[-1])
                    seconds, cpu = inner["seconds"], inner["cpu_s"]
                    row["versions"] = inner["versions"]
                row["seconds"].append(seconds)
                row["cpu_s"].append(cpu)
                row["rss_mib"].append(rss)
                row["output_bytes"] = tree_bytes(dst)
        if not args.no_verify:
            for key, label, cmd, source, dst in plan:
                if key not in report["results"]:
                    continue  # not run (--issue-peer-runs 0)
                if key.endswith("_base"):
                    report["results"][key]["verified"] = "not checked (baseline)"
                    continue
                if not quiet:
                    print(f"  checking {label} ...", file=sys.stderr, flush=True)
                try:
                    if key.startswith("lazycube_v3"):
                        verify_v3(os.path.abspath(args.build_dir), source, dst, args.verify_block)
                        report["results"][key]["verified"] = "equal (lazycube)"
                    else:
                        verify_v2(source, dst, args.verify_block)
                        report["results"][key]["verified"] = "identical (xarray)"
                except AssertionError as e:
                    failed = True
                    report["results"][key]["verified"] = "DIFFERS"
                    print(f"!!!!! {label}: the output differs from the source: {e}", file=sys.stderr)
    finally:
        if not args.keep:
            shutil.rmtree(out, ignore_errors=True)
    report["machine"]["loadavg_at_end"] = os.getloadavg()
    summarize(report)
    emit_report(report, args, markdown, print_report)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
