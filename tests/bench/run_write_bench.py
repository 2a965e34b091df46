#!/usr/bin/env python3
"""Zarr write benchmark: a float32 array (T, 1024, 1024) in (1, 1024, 1024) chunks written from
memory to a local store, lazycube's zarr::Writer (lazycube_bench_write) against zarr-python 2.13
(`arr[:] = data`, its default single-threaded path), same Zarr v2 compressor, each in its own
process, best of N. Both stores are read back with zarr-python and compared with the source.

    /usr/bin/python3 tests/bench/run_write_bench.py [--t 64] [--runs 3] [--build-dir build]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import run_json, warn_if_busy  # noqa: E402

ZARR_WORKER = r"""
import json, sys, time, shutil
import numpy as np, numcodecs, zarr
raw, t, store, codec, runs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
data = np.fromfile(raw, dtype='<f4').reshape(t, 1024, 1024)
name, *params = codec.split(':')
compressor = {'zstd': lambda: numcodecs.Zstd(int(params[0])),
              'blosc': lambda: numcodecs.Blosc(params[0], int(params[1]), numcodecs.Blosc.SHUFFLE),
              'zlib': lambda: numcodecs.Zlib(int(params[0]))}[name]()
best = 1e300
for _ in range(runs):
    shutil.rmtree(store, ignore_errors=True)
    t0 = time.perf_counter()
    arr = zarr.open(store, mode='w', shape=data.shape, chunks=(1, 1024, 1024), dtype='<f4',
                    compressor=compressor, fill_value=float('nan'))
    arr[:] = data
    best = min(best, time.perf_counter() - t0)
print(json.dumps({'mode': 'zarr-python', 'seconds': best, 'gb_per_s': data.nbytes / best / 1e9,
                  'bytes': data.nbytes, 'runs': runs}))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--t", type=int, default=64, help="time steps of 4 MiB (default 64: 256 MiB)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--work", default="/tmp/lazycube-write-bench")
    args = ap.parse_args()
    warn_if_busy()
    exe = os.path.join(args.build_dir, "tests", "bench", "lazycube_bench_write")
    os.makedirs(args.work, exist_ok=True)
    raw = os.path.join(args.work, "source.f4")
    rng = np.random.default_rng(7)
    y, x = np.meshgrid(np.linspace(0, 6, 1024, dtype=np.float32), np.linspace(0, 9, 1024, dtype=np.float32), indexing="ij")
    with open(raw, "wb") as f:
        for i in range(args.t):  # smooth field + noise, quantised to 1/64 like packed reanalysis data
            field = 280 + 15 * np.sin(x + 0.1 * i) * np.cos(y) + rng.normal(0, 0.5, (1024, 1024)).astype(np.float32)
            f.write((np.round(field * 64) / 64).astype("<f4").tobytes())
    source = np.fromfile(raw, dtype="<f4").reshape(args.t, 1024, 1024)
    rows = []
    for text in ["zstd:3", "blosc:lz4:5"]:
        ours_text = text if not text.startswith("blosc") else text + ":shuffle"
        ours_store, theirs_store = os.path.join(args.work, "ours.zarr"), os.path.join(args.work, "theirs.zarr")
        ours = run_json([exe, raw, str(args.t), ours_store, ours_text, "2", "--runs", str(args.runs)])
        theirs = run_json(["/usr/bin/python3", "-c", ZARR_WORKER, raw, str(args.t), theirs_store, text, str(args.runs)])
        import zarr
        same = all(np.array_equal(zarr.open(os.path.join(s, "data") if s == ours_store else s, mode="r")[:], source)
                   for s in (ours_store, theirs_store))
        rows.append((text, ours, theirs, same))
    print(f"Zarr v2 write, float32 ({args.t}, 1024, 1024) = {source.nbytes / 2**20:.0f} MiB, chunks (1, 1024, 1024), "
          f"best of {args.runs}, {os.cpu_count()} cores")
    print(f"{'codec':<14}{'lazycube GB/s':>15}{'zarr-python GB/s':>18}{'ratio':>8}  values")
    for text, ours, theirs, same in rows:
        print(f"{text:<14}{ours['gb_per_s']:>15.3f}{theirs['gb_per_s']:>18.3f}{ours['gb_per_s'] / theirs['gb_per_s']:>8.2f}  "
              f"{'equal' if same else 'DIFFER'}")
    shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
