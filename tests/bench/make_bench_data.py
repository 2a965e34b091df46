#!/usr/bin/python3
"""Writes the read-benchmark arrays: one float32 field as two Zarr v2 stores (zarr-python 2.13).

The field looks like a reanalysis temperature cube: a smooth, slowly moving large-scale pattern
plus seeded small-scale noise, quantised to 1/64 K the way GRIB-packed data is. That gives the
compressors something realistic to do (neither constant nor random). Generated one time step at
a time, so memory stays at a few chunks whatever the array size.

Run with Debian's /usr/bin/python3 (it has numpy, zarr 2.13, numcodecs 0.11).
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np
import zarr
from numcodecs import Blosc, Zstd

FORMAT_VERSION = 1  # bump when the generated data changes
SEED = 20240611
NY, NX = 1024, 1024
STEPS = {"full": 128, "quick": 16}  # 512 MiB and 64 MiB of float32
VARIANTS = {
    "blosc-lz4": lambda: Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE),
    "zstd-3": lambda: Zstd(level=3),
}


def time_step(t):
    """One (NY, NX) float32 slab for time index t; depends only on (SEED, t)."""
    lat = np.linspace(-np.pi / 2, np.pi / 2, NY, dtype=np.float32)[:, None]
    lon = np.linspace(0, 2 * np.pi, NX, endpoint=False, dtype=np.float32)[None, :]
    phase = np.float32(0.05 * t)
    field = (288.0 - 45.0 * np.sin(lat) ** 2
             + 6.0 * np.cos(lat) * np.sin(3 * lon + phase)
             + 3.0 * np.sin(2 * lat + 0.5 * phase) * np.cos(5 * lon - 2 * phase)
             + 1.5 * np.sin(11 * lon + 7 * lat + 3 * phase))
    rng = np.random.default_rng([SEED, t])
    field += rng.normal(0.0, 0.4, size=(NY, NX)).astype(np.float32)
    return (np.round(field * 64.0) / 64.0).astype(np.float32)


def store_path(cache, size, variant):
    return os.path.join(cache, size, variant + ".zarr")


def marker(size):
    return {"format_version": FORMAT_VERSION, "seed": SEED, "shape": [STEPS[size], NY, NX]}


def is_valid(path, size):
    try:
        with open(os.path.join(path, "bench-complete.json")) as f:
            return json.load(f) == marker(size)
    except (OSError, ValueError):
        return False


def write_store(path, size, make_compressor):
    shutil.rmtree(path, ignore_errors=True)
    steps = STEPS[size]
    arr = zarr.open_array(path, mode="w", shape=(steps, NY, NX), chunks=(1, NY, NX),
                          dtype="<f4", compressor=make_compressor(), fill_value=None)
    for t in range(steps):
        arr[t] = time_step(t)
    # Written last: a store without it (interrupted run) is regenerated.
    with open(os.path.join(path, "bench-complete.json"), "w") as f:
        json.dump(marker(size), f)


def ensure(cache, size, verbose=True):
    """Makes every variant of `size` under `cache` unless already valid; returns {variant: path}."""
    paths = {}
    for variant, make_compressor in VARIANTS.items():
        path = store_path(cache, size, variant)
        if not is_valid(path, size):
            if verbose:
                print(f"writing {path} ...", file=sys.stderr, flush=True)
            write_store(path, size, make_compressor)
        paths[variant] = path
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default="build/bench-data", help="output dir (default %(default)s)")
    ap.add_argument("--quick", action="store_true", help="64 MiB variant instead of 512 MiB")
    args = ap.parse_args()
    for variant, path in ensure(args.cache, "quick" if args.quick else "full").items():
        print(variant, path)


if __name__ == "__main__":
    main()
