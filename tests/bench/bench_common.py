"""Helpers shared by the benchmark drivers (run_read_bench.py, run_http_bench.py)."""
import numpy as np


def checksum(arr):
    """Same as bench_common.hpp: sum of 32-bit words w_i * (2i + 1), mod 2^64, as 16 hex digits."""
    words = np.ascontiguousarray(arr).reshape(-1).view(np.uint32)
    total, step = 0, 1 << 22
    for lo in range(0, words.size, step):
        w = words[lo:lo + step].astype(np.uint64)
        k = np.arange(lo, lo + w.size, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
        total += int(np.sum(w * k, dtype=np.uint64))
    return f"{total % (1 << 64):016x}"
