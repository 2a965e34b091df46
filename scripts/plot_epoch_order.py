#!/usr/bin/env python3
"""Draws docs/epoch_order.png: anchor time (up) against position in the epoch (right) for one
epoch of forecast samples with shuffle=None, "chunk" and "random" (left to right), on an
ERA5-like store of 2,904 six-hourly steps stored one step per chunk, with a chunk cache of 64
sample footprints (docs/forecast.md "Epochs at scale"). Needs the built package on PYTHONPATH;
writes the PNG with NumPy and zlib only.

    PYTHONPATH=build/python /usr/bin/python3 scripts/plot_epoch_order.py [OUT.png]
"""

import struct
import sys
import tempfile
import zlib

import numpy as np
import zarr

import lazycube

STEPS, SIZE, PAD = 2904, 280, 12


def store(path):
    root = zarr.open_group(path, mode="w")
    t = root.create_dataset("time", data=np.arange(STEPS, dtype="int64") * 6, chunks=(STEPS,), fill_value=None)
    t.attrs.update({"_ARRAY_DIMENSIONS": ["time"], "units": "hours since 2000-01-01"})
    a = root.create_dataset("t2m", data=np.zeros((STEPS, 4, 4), "float32"), chunks=(1, 4, 4), compressor=None)
    a.attrs["_ARRAY_DIMENSIONS"] = ["time", "y", "x"]


def order(samples, shuffle):
    sched = samples.schedule(8, shuffle, 0)
    return np.array([s for j in range(sched.worker_batches) for s in sched.batch(j)])


def png(pixels):
    h, w = pixels.shape
    raw = b"".join(b"\0" + bytes(row) for row in pixels.astype(np.uint8))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "docs/epoch_order.png"
    with tempfile.TemporaryDirectory() as tmp:
        store(tmp + "/s.zarr")
        footprint = 6 * 4 * 4 * 4  # six steps of one 4 x 4 float32 field
        samples = lazycube.ForecastSamples(tmp + "/s.zarr", inputs=["t2m"], targets=["t2m"],
                                           input_offsets=["-6h", "0h"], target_offsets=["6h", "12h", "18h", "24h"],
                                           missing="keep", cache_bytes=64 * footprint)
        panels = [order(samples, s) for s in (None, "chunk", "random")]
    canvas = np.full((SIZE + 2 * PAD, 3 * (SIZE + PAD) + PAD), 255, np.uint8)
    for i, o in enumerate(panels):
        x0 = PAD + i * (SIZE + PAD)
        canvas[PAD:PAD + SIZE, x0:x0 + SIZE] = 245
        canvas[PAD + SIZE, x0:x0 + SIZE] = 0  # axes
        canvas[PAD:PAD + SIZE, x0] = 0
        n = len(o)
        xs = x0 + (np.arange(n) * (SIZE - 1) // max(n - 1, 1))
        ys = PAD + SIZE - 1 - (o * (SIZE - 1) // max(n - 1, 1))
        canvas[ys, xs] = 0
    with open(out, "wb") as f:
        f.write(png(canvas))
    print("wrote", out)


if __name__ == "__main__":
    main()
