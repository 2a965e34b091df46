"""Helpers shared by the benchmark drivers (run_read_bench.py, run_http_bench.py,
run_batch_bench.py)."""
import json
import os
import subprocess
import sys

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


def warm(path):
    """Reads every file under `path` once, so that the page cache holds the store."""
    for root, _, files in os.walk(path):
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                while fh.read(1 << 24):
                    pass


def run_json(cmd, env=None, timeout=900):
    """Runs `cmd`; returns the JSON object on the last line of its stdout (RuntimeError naming
    the command, after echoing its stderr, when it fails or prints nothing)."""
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if p.returncode != 0 or not p.stdout.strip():
        sys.stderr.write(p.stderr)
        raise RuntimeError(f"FAILED ({p.returncode}): {' '.join(cmd)}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def warn_if_busy():
    """Warns on stderr when the load average says other work shares the machine; returns the
    load averages (for the report)."""
    load = os.getloadavg()
    if load[0] > 0.5 * os.cpu_count():
        print(f"WARNING: load average {load[0]:.1f} on {os.cpu_count()} CPUs: other work is running, "
              "timings will be low and noisy", file=sys.stderr)
    return load
