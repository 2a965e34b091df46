"""Helpers shared by the benchmark drivers (run_read_bench.py, run_http_bench.py,
run_batch_bench.py, run_python_bench.py, run_netcdf_bench.py)."""
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

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
    """Reads `path` (a file, or every file under a directory) once, so that the page cache
    holds the store."""
    walked = [(os.path.dirname(path), None, [os.path.basename(path)])] if os.path.isfile(path) else os.walk(path)
    for root, _, files in walked:
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


# Free page reporting's running total of memory handed back to the host (a counter this VM's
# kernel exposes; absent elsewhere).
REPORTED_KIB = "/sys/module/page_reporting/parameters/reported_kib"


def _reported_kib():
    try:
        with open(REPORTED_KIB) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def settle(seconds, quiet=3.5, limit=60.0):
    """Waits before a timed process is started, so that it fills its memory under the same
    conditions as the peer before it: at least `seconds`, and where the kernel counts the memory
    that free page reporting hands back to the host (REPORTED_KIB), until that count has not
    moved for `quiet` seconds (at most `limit`). Returns the seconds waited.

    Why: on VMs with free page reporting (this one: virtio-balloon) memory a process frees stays
    backed by the host until the guest reports it, in passes ~2 s apart of at most 192 MiB each,
    so 1 GB freed takes ~12 s to hand back. Memory still backed is first touched ~20x faster
    (512 MiB of huge pages: 0.04 s against 0.8-1.0 s once reported). A process started within
    that time fills its chunk cache with the previous process's pages: with a fixed 5 s between
    the runs, the CLI (which starts at once) took them after each Python run (which frees ~900
    MB), while Python, importing torch first, used them up before its first epoch -- cold epochs
    of 0.56 s against 0.87 s for the same engine work. `quiet` is longer than the time between
    two passes."""
    t0 = time.monotonic()
    time.sleep(seconds)
    last = _reported_kib()
    if last is None:
        return time.monotonic() - t0
    still_since = time.monotonic()
    while time.monotonic() - t0 < limit and time.monotonic() - still_since < quiet:
        time.sleep(0.25)
        now = _reported_kib()
        if now != last:
            last, still_since = now, time.monotonic()
    return time.monotonic() - t0


def add_settle_argument(parser):
    """--settle for the drivers that time several processes (see settle())."""
    parser.add_argument("--settle", type=float, default=2.0,
                        help="least seconds between the timed processes (default 2), then until free "
                             "page reporting is still where the kernel counts it (see bench_common.settle)")


def emit_report(report, args, markdown, print_report):
    """Saves the report as JSON to --save FILE when given, then prints it as --json asks
    (the document), --markdown (`markdown(report)`), or as text (`print_report(report)`)."""
    if args.save:
        with open(args.save, "w") as fh:
            json.dump(report, fh, indent=1)
    if args.json:
        print(json.dumps(report, indent=1))
    elif args.markdown:
        print(markdown(report))
    else:
        print_report(report)


def warn_if_busy():
    """Warns on stderr when the load average says other work shares the machine; returns the
    load averages (for the report)."""
    load = os.getloadavg()
    if load[0] > 0.5 * os.cpu_count():
        print(f"WARNING: load average {load[0]:.1f} on {os.cpu_count()} CPUs: other work is running, "
              "timings will be low and noisy", file=sys.stderr)
    return load


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Nginx:
    """tests/servers/start_nginx.sh in the foreground serving `root` (its PID is the nginx
    master), with the lua fault injector set to `faults` (e.g. {"latency_ms": 50}). Ready once
    GET `ready_path` answers. `workers`: nginx worker processes (default: one per core, as a
    production server would run; the tests run one)."""

    def __init__(self, prefix, root, ready_path, faults=None, workers=None):
        self.prefix = prefix
        os.makedirs(prefix, exist_ok=True)
        self.set_faults(faults or {})
        self.log = os.path.join(prefix, "logs", "access.log")
        self.workers = workers or os.cpu_count() or 1
        env = dict(os.environ, PATH=os.environ.get("PATH", "") + ":/usr/sbin",
                   LAZYCUBE_NGINX_WORKERS=str(self.workers))
        self.stderr = open(os.path.join(prefix, "nginx.stderr"), "w")
        self.proc = subprocess.Popen(["bash", os.path.join(REPO, "tests", "servers", "start_nginx.sh"), prefix, root],
                                     stdout=subprocess.PIPE, stderr=self.stderr, text=True, env=env)
        line = self.proc.stdout.readline().strip()
        if not line.isdigit():
            self.stop()
            raise SystemExit(f"nginx did not start: {line!r}; see {self.stderr.name}")
        self.port = int(line)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 10
        while True:
            try:
                with urllib.request.urlopen(self.base + ready_path, timeout=2) as r:
                    r.read()
                break
            except Exception:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise SystemExit("nginx did not answer on " + self.base)
                time.sleep(0.1)

    def set_faults(self, cfg):
        body = "return {" + ", ".join(f"{k} = {v}" for k, v in cfg.items()) + "}\n"
        tmp = os.path.join(self.prefix, "faults.lua.tmp")
        with open(tmp, "w") as fh:
            fh.write(body)
        os.replace(tmp, os.path.join(self.prefix, "faults.lua"))

    def log_offset(self):
        try:
            return os.path.getsize(self.log)
        except OSError:
            return 0

    def statuses_since(self, offset):
        """HTTP statuses nginx logged since `offset` (444 = connection dropped by the injector)."""
        counts = {}
        with open(self.log, "rb") as fh:
            fh.seek(offset)
            for line in fh:
                m = re.search(rb'" (\d{3}) ', line)
                if m:
                    counts[m.group(1).decode()] = counts.get(m.group(1).decode(), 0) + 1
        return dict(sorted(counts.items()))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
