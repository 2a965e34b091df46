#!/usr/bin/env python3
"""The GPU hand-off of lazycube.torch.BatchDataset: device="cuda" against CPU batches moved
with .cuda(), on packed int16 channels (CF scale/offset/_FillValue, normalised per channel).

Writes an uncompressed Zarr v2 store with NumPy alone (no zarr-python needed): msl and sp as
int16 packed with scale_factor/add_offset/_FillValue, t2m as float32, time 512 x latitude 181 x
longitude 360, chunks 8 x 181 x 360 (267 MB). Batches of 64 windows of time 1 x latitude 64 x
longitude 64, chunk shuffle; one warm-up epoch (fills the chunk cache), then `--epochs` timed
epochs, each batch summed on the GPU as a stand-in for a training step. Rows:

  - CPU: BatchDataset(packed=True) unpacks + normalises on the CPU, then x.cuda()
  - device="cuda", packed: int16 crosses PCIe (pinned buffers, side stream) and lazycube's
    CUDA kernel unpacks + normalises on the GPU
  - the same two with packed=False (decoded batches: float32 by default, though msl and sp
    decode to float64 from their float64 scale/offset), the second also with dtype=torch.float64
    asked, and the float32 t2m alone
  - lazycube.BatchGenerator alone (no torch), decoded msl + sp: the CPU ceiling

Every row's label ends with the dtype its batches carry, as they were measured ("-> dtype").

Needs a CUDA build of torch and the lazycube package on sys.path; exits 0 with the reason when
there is no usable GPU. A report: the issue sets no GPU throughput target.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

SHAPE, CHUNK_T = (512, 181, 360), 8
DIMS = {"time": 1, "latitude": 64, "longitude": 64}
NORM = {"msl": (101000.0, 1000.0), "sp": (100000.0, 900.0)}
BATCH = 64


def write_store(root):
    """An uncompressed Zarr v2 group written with NumPy: raw C-order chunk files."""
    if os.path.exists(os.path.join(root, ".zgroup")):
        return
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(0)
    T, Y, X = SHAPE

    def array(name, dtype, attrs, dims, shape, chunks, chunk_data):
        d = os.path.join(root, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, ".zarray"), "w") as f:
            json.dump({"zarr_format": 2, "shape": shape, "chunks": chunks, "dtype": dtype, "compressor": None,
                       "fill_value": None, "filters": None, "order": "C"}, f)
        with open(os.path.join(d, ".zattrs"), "w") as f:
            json.dump(dict(attrs, _ARRAY_DIMENSIONS=dims), f)
        for start in range(0, shape[0], chunks[0]):
            key = ".".join([str(start // chunks[0])] + ["0"] * (len(shape) - 1))
            chunk_data(start, min(chunks[0], shape[0] - start)).astype(dtype).tofile(os.path.join(d, key))

    array("time", "<i8", {"units": "hours since 2020-01-01"}, ["time"], [T], [T], lambda s, n: np.arange(T))
    array("latitude", "<f4", {}, ["latitude"], [Y], [Y], lambda s, n: np.linspace(90, -90, Y))
    array("longitude", "<f4", {}, ["longitude"], [X], [X], lambda s, n: np.linspace(0, 359.5, X))
    packed = {"scale_factor": 0.5, "add_offset": 100000.0, "_FillValue": -32767}
    for name in ("msl", "sp"):
        array(name, "<i2", packed, ["time", "latitude", "longitude"], [T, Y, X], [CHUNK_T, Y, X],
              lambda s, n: rng.integers(-20000, 20000, size=(n, Y, X)))
    array("t2m", "<f4", {}, ["time", "latitude", "longitude"], [T, Y, X], [CHUNK_T, Y, X],
          lambda s, n: 280 + 10 * rng.standard_normal((n, Y, X)))
    with open(os.path.join(root, ".zgroup"), "w") as f:
        json.dump({"zarr_format": 2}, f)


def timed(torch, ds, move, epochs):
    for _ in ds:  # warm-up epoch: fills the chunk cache
        pass
    torch.cuda.synchronize()
    t0, n, x, dtypes = time.perf_counter(), 0, None, set()
    for e in range(epochs):
        ds.set_epoch(e + 1)
        for x in ds:
            dtypes.add(x.dtype)  # as the dataset yields it
            if move:
                x = x.cuda()
            (x.float() * 2).sum()  # a little GPU work per batch
            n += x.shape[0]
    torch.cuda.synchronize()
    return {"windows_per_s": n / (time.perf_counter() - t0), "dtype": dtype_text(dtypes),
            "device": str(x.device)}


def dtype_text(dtypes):
    """The dtype(s) of a row's batches, e.g. "torch.float32"."""
    return "/".join(sorted(str(d) for d in dtypes)) or "none"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", default="build/bench-data/gpu/packed.zarr")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        print("skipped: torch %s has no usable CUDA device" % torch.__version__)
        return 0
    import lazycube
    import lazycube.torch as lct
    write_store(args.store)
    kw = dict(input_dims=DIMS, batch_size=BATCH, variables=["msl", "sp"], shuffle="chunk", seed=1, normalize=NORM)
    plain = dict(kw)
    plain.pop("normalize")
    rows = [
        ("CPU: packed, unpacked + normalised on the CPU, then .cuda()", lct.BatchDataset(args.store, packed=True, **kw), True),
        ("device=\"cuda\", packed: int16 over PCIe, unpacked + normalised on the GPU",
         lct.BatchDataset(args.store, packed=True, device="cuda", **kw), False),
        ("CPU: decoded (packed=False), normalised, then .cuda()", lct.BatchDataset(args.store, packed=False, **kw), True),
        ("device=\"cuda\", decoded (packed=False), normalised on the GPU",
         lct.BatchDataset(args.store, packed=False, device="cuda", **kw), False),
        ("device=\"cuda\", decoded (packed=False), dtype=torch.float64 asked, normalised on the GPU",
         lct.BatchDataset(args.store, packed=False, device="cuda", dtype=torch.float64, **kw), False),
        ("CPU: t2m (stored float32) alone, then .cuda()", lct.BatchDataset(args.store, **dict(plain, variables=["t2m"])), True),
        ("device=\"cuda\": t2m (stored float32) alone", lct.BatchDataset(args.store, device="cuda", **dict(plain, variables=["t2m"])), False),
    ]
    results = []
    for label, ds, move in rows:
        r = timed(torch, ds, move, args.epochs)
        results.append(("%s -> %s" % (label, r["dtype"]), r))
    gen = lazycube.BatchGenerator(args.store, input_dims=DIMS, batch_size=BATCH, variables=["msl", "sp"],
                                  shuffle="chunk", seed=1)
    for _ in gen:
        pass
    t0, n, dtypes = time.perf_counter(), 0, set()
    for e in range(args.epochs):
        gen.set_epoch(e + 1)
        for b in gen:
            dtypes.add(b.x.dtype)
            n += BATCH
    r = {"windows_per_s": n / (time.perf_counter() - t0), "dtype": dtype_text(dtypes), "device": "cpu"}
    results.append(("lazycube.BatchGenerator alone (no torch), decoded msl + sp -> %s" % r["dtype"], r))
    # The GPU-unpacked batches equal the CPU-unpacked ones within float rounding.
    a = lct.BatchDataset(args.store, packed=True, **kw)
    b = lct.BatchDataset(args.store, packed=True, device="cuda", **kw)
    worst, batches = 0.0, 0
    for x, y in zip(a, b):
        x = x.cuda()
        if not torch.equal(torch.isnan(x), torch.isnan(y)):
            raise SystemExit("CPU and GPU batches differ in where NaN is")
        worst = max(worst, float(torch.nan_to_num(x - y).abs().max()))
        batches += 1
    name = torch.cuda.get_device_name()
    ratio = results[1][1]["windows_per_s"] / results[0][1]["windows_per_s"]
    if args.markdown:
        print(f"Measured on {name}, torch {torch.__version__}, {os.cpu_count()} CPUs\n")
        print("| peer | windows/s | batch dtype, device |\n|---|---:|---|")
        for label, r in results:
            print(f"| {label} | {r['windows_per_s']:.0f} | {r['dtype']}, {r['device']} |")
        print(f"\n| check | measured |\n|---|---:|")
        print(f"| device=\"cuda\" packed vs CPU + .cuda() | {ratio:.2f}x |")
        print(f"| max abs difference GPU vs CPU unpack, {batches} batches | {worst:.2e} |")
    else:
        print(json.dumps({"device": name, "rows": dict(results), "cuda_packed_vs_cpu": ratio,
                          "max_abs_diff": worst, "batches_compared": batches}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
