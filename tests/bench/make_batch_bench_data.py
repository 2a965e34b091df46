#!/usr/bin/python3
"""Writes the batch-benchmark store: an ERA5-like Zarr v2 group (zarr-python 2.13).

Four float32 variables t2m, u10, v10, msl over (time 512, latitude 181, longitude 360) — a 1°
global grid, hourly from 2019-01-01 — each a smooth, slowly moving large-scale pattern plus
seeded small-scale noise, quantised like GRIB-packed reanalysis data. Chunks (8, 181, 360)
(2.1 MB decoded), Blosc lz4 clevel 5 + byte shuffle; CF time coordinate ("hours since
2019-01-01", int64), latitude / longitude coordinates, `_ARRAY_DIMENSIONS` for xarray and
consolidated metadata. 534 MB decoded. Generated one chunk of time steps at a time, so memory
stays at a few chunks. `--steps N` (ensure(cache, nt=N)) writes the same fields over the first N
time steps to a store of its own (era5_like_tN.zarr): 128 steps is the warm-epoch workload of
run_ab_bench.py (133 MB decoded, ~94 MB on disk: every chunk fits the default cache).

Run with Debian's /usr/bin/python3 (numpy, zarr 2.13, numcodecs).
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np

FORMAT_VERSION = 1  # bump when the generated data changes
SEED = 20190101
NT, NY, NX = 512, 181, 360
CT = 8  # time steps per chunk
VARIABLES = ("t2m", "u10", "v10", "msl")
ATTRS = {
    "t2m": {"units": "K", "long_name": "2 metre temperature", "standard_name": "air_temperature"},
    "u10": {"units": "m s**-1", "long_name": "10 metre U wind component"},
    "v10": {"units": "m s**-1", "long_name": "10 metre V wind component"},
    "msl": {"units": "Pa", "long_name": "Mean sea level pressure",
            "standard_name": "air_pressure_at_mean_sea_level"},
}


def fields(t0, steps):
    """{variable: (steps, NY, NX) float32} for time steps t0..t0+steps; depends only on SEED."""
    lat = np.deg2rad(np.linspace(90.0, -90.0, NY, dtype=np.float32))[None, :, None]
    lon = np.deg2rad(np.arange(NX, dtype=np.float32))[None, None, :]
    t = np.arange(t0, t0 + steps, dtype=np.float32)[:, None, None]
    ph = 0.05 * t
    rng = np.random.default_rng([SEED, t0])
    shape = (steps, NY, NX)

    def noisy(field, sigma, quantum):
        field = field + rng.normal(0.0, sigma, size=shape).astype(np.float32)
        return (np.round(field / quantum) * quantum).astype(np.float32)

    return {
        "t2m": noisy(288.0 - 45.0 * np.sin(lat) ** 2 + 6.0 * np.cos(lat) * np.sin(3 * lon + ph)
                     + 3.0 * np.sin(2 * lat + 0.5 * ph) * np.cos(5 * lon - 2 * ph), 0.4, 1 / 64),
        "u10": noisy(8.0 * np.sin(2 * lat) * np.cos(lat) + 4.0 * np.sin(4 * lon - ph) * np.cos(lat),
                     0.8, 1 / 128),
        "v10": noisy(5.0 * np.cos(lat) * np.cos(3 * lon + 1.3 * ph) + 2.0 * np.sin(lat) * np.sin(2 * lon),
                     0.8, 1 / 128),
        "msl": noisy(101325.0 + 1500.0 * np.cos(2 * lat) + 900.0 * np.sin(lat) * np.sin(4 * lon + 0.7 * ph),
                     40.0, 1.0),
    }


def store_path(cache, nt=NT):
    name = "era5_like.zarr" if nt == NT else f"era5_like_t{nt}.zarr"
    return os.path.join(cache, "batch", name)


def marker(nt=NT):
    return {"format_version": FORMAT_VERSION, "seed": SEED, "shape": [nt, NY, NX], "chunks": [CT, NY, NX],
            "variables": list(VARIABLES), "compressor": "blosc-lz4-shuffle"}


def is_valid(path, nt=NT):
    try:
        with open(os.path.join(path, "bench-complete.json")) as f:
            return json.load(f) == marker(nt)
    except (OSError, ValueError):
        return False


def write_store(path, nt=NT):
    if nt <= 0 or nt % CT:
        raise ValueError(f"--steps must be a positive multiple of {CT}, got {nt}")
    import zarr
    from numcodecs import Blosc
    shutil.rmtree(path, ignore_errors=True)
    g = zarr.open_group(path, mode="w")
    g.attrs.update({"Conventions": "CF-1.6",
                    "source": "lazycube batch benchmark: synthetic ERA5-like fields "
                              "(tests/bench/make_batch_bench_data.py)"})
    time = g.create_dataset("time", data=np.arange(nt, dtype=np.int64), chunks=(nt,), compressor=None,
                         fill_value=None)
    time.attrs.update({"_ARRAY_DIMENSIONS": ["time"], "units": "hours since 2019-01-01 00:00:00",
                       "calendar": "proleptic_gregorian", "standard_name": "time"})
    lat = g.create_dataset("latitude", data=np.linspace(90.0, -90.0, NY, dtype=np.float32), compressor=None,
                            fill_value=None)
    lat.attrs.update({"_ARRAY_DIMENSIONS": ["latitude"], "units": "degrees_north", "standard_name": "latitude"})
    lon = g.create_dataset("longitude", data=np.arange(NX, dtype=np.float32), compressor=None,
                            fill_value=None)
    lon.attrs.update({"_ARRAY_DIMENSIONS": ["longitude"], "units": "degrees_east", "standard_name": "longitude"})
    arrays = {}
    for name in VARIABLES:
        a = g.create_dataset(name, shape=(nt, NY, NX), chunks=(CT, NY, NX), dtype="<f4",
                             compressor=Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE),
                             fill_value=None)
        a.attrs.update(dict(ATTRS[name], _ARRAY_DIMENSIONS=["time", "latitude", "longitude"]))
        arrays[name] = a
    for t0 in range(0, nt, CT):
        for name, values in fields(t0, CT).items():
            arrays[name][t0:t0 + CT] = values
    zarr.consolidate_metadata(path)
    # Written last: a store without it (interrupted run) is regenerated.
    with open(os.path.join(path, "bench-complete.json"), "w") as f:
        json.dump(marker(nt), f)


def ensure(cache, verbose=True, nt=NT):
    """Makes the store of `nt` time steps under `cache` unless already valid; returns its path."""
    path = store_path(cache, nt)
    if not is_valid(path, nt):
        if verbose:
            print(f"writing {path} (4 x {nt}x{NY}x{NX} float32, ~{max(1, 20 * nt // NT)} s) ...", file=sys.stderr,
                  flush=True)
        write_store(path, nt)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default="build/bench-data", help="bench data dir (default %(default)s)")
    ap.add_argument("--steps", type=int, default=NT, help=f"time steps, a multiple of {CT} (default %(default)s)")
    args = ap.parse_args()
    print(ensure(args.cache, nt=args.steps))


if __name__ == "__main__":
    main()
