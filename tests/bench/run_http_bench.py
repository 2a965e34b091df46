#!/usr/bin/python3
"""Remote read throughput over HTTP: lazycube vs one request in flight vs zarr-python 2.13 + fsspec.

Writes (once, cached under build/bench-data/http) a Zarr v2 store of 1,024 uncompressed 1 MiB
float32 chunks (shape (1024, 512, 512), chunks (1, 512, 512), consolidated), starts nginx on
127.0.0.1 (tests/servers/start_nginx.sh, free port) with the lua fault injector adding 50 ms to
every request, and measures in one run, each peer in its own process:

  lazycube (default settings)          lazycube_bench_http read URL data
  lazycube, no added latency           the same with the injector adding nothing
  lazycube, 1 request in flight        ... --option max_concurrency=1, LAZYCUBE_NUM_THREADS=1
  zarr-python 2.13 + fsspec HTTP       zarr.open_consolidated(fsspec.get_mapper(URL))["data"][:]
  lazycube (default), fault mix        the same server with 10 % 503 + 5 % 429 + 2 % dropped
                                       connections on top of the 50 ms

plus informational rows that show where the time goes (Store::get_each of every chunk in one
call, the HTTP engine's ceiling, with and without the latency and faults; max_concurrency=1
alone; and Array::read with a larger decode thread pool).

Targets: lazycube at 50 ms >= 90 % of its own zero-latency rate on the same server and >= 1.5x
zarr-python + fsspec at 50 ms (issue 17, replacing the cloud issue's 3x, which loopback nginx on 2
cores cannot show); >= 25x the one-in-flight rate; under the fault mix >= 70 % of its clean
throughput. 1,024 chunks, not 256: a whole read waits one round trip before its first byte
arrives, and at ~1,500 chunks/s on loopback 256 chunks take ~0.17 s, so 50 ms of first-byte wait
alone would hold a 256-chunk read to ~77 % of the zero-latency rate. Every peer's output is checked against the
checksum of the data as written. nginx is stopped by PID at the end, also on errors.

Azurite (issue 17: "the same for Azurite without injected latency vs its own file read"): the
same store uploaded once to a private Azurite (kept under the cache directory), read in one run by
  lazycube az://                       lazycube_bench_http read az://bench/store.zarr data (SharedKey)
  lazycube, the local files            lazycube_bench_http read CACHE/full/store.zarr data
  zarr-python 2.13 + azure-storage-blob  zarr.open_consolidated(mapping)["data"][:], the mapping's
                                       getitems() fetching with 32 threads (adlfs, fsspec's Azure
                                       filesystem, is not packaged for Debian 12)
Targets: az:// >= 90 % of the local read, and >= 1.5x the zarr-python peer. Skipped with the
reason when Azurite or azure-storage-blob is missing (bash scripts/setup.sh --no-build).

Run from the repository root with Debian's /usr/bin/python3 after `cmake --build build`. A report,
not a test: it exits non-zero only when a peer fails or outputs disagree, never for a missed target.
"""
import argparse
import datetime
import json
import os
import platform
import signal
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

sys.path.insert(0, HERE)
from bench_common import REPO, Nginx, checksum, emit_report, run_json, warm, warn_if_busy  # noqa: E402
MB = 1e6
MIB = 1 << 20

FORMAT_VERSION = 1  # bump when the generated data changes
SEED = 20261122
NY, NX = 512, 512  # one chunk = 512 * 512 float32 = 1 MiB
STEPS = {"full": 1024, "quick": 32}
VARIABLE = "data"

LATENCY_MS = 50
CLEAN = {"latency_ms": LATENCY_MS}
NO_LATENCY = {"latency_ms": 0}
FAULTS = {"latency_ms": LATENCY_MS, "p503": 0.10, "p429": 0.05, "pdrop": 0.02}
TARGETS = {"one_in_flight": 25.0, "zarr_python": 1.5, "latency_vs_nolat": 0.90, "faults_vs_clean": 0.70,
           "azurite_vs_file": 0.90, "azurite_vs_zarr_python": 1.5}
AZ_CONTAINER = "bench"
AZ_THREADS = 32


# ---------------------------------------------------------------------------- data

def slab(t):
    """One (NY, NX) float32 time step; depends only on (SEED, t). Uncompressed, so any values do."""
    rng = np.random.default_rng([SEED, t])
    return (280.0 + 10.0 * rng.standard_normal((NY, NX))).astype(np.float32)


def ensure_store(cache, size, verbose):
    """Writes ROOT/<size>/store.zarr once; reuses it while its marker matches. Returns
    (www root, marker dict)."""
    import zarr
    steps = STEPS[size]
    www = os.path.join(cache, size)
    store = os.path.join(www, "store.zarr")
    marker_path = os.path.join(www, "bench-complete.json")
    want = {"format_version": FORMAT_VERSION, "seed": SEED, "shape": [steps, NY, NX],
            "chunks": [1, NY, NX], "dtype": "float32", "compressor": None}
    if os.path.exists(marker_path):
        with open(marker_path) as fh:
            marker = json.load(fh)
        if all(marker.get(k) == v for k, v in want.items()):
            return www, marker
    if verbose:
        print(f"writing {store} ({steps} chunks of 1 MiB) ...", file=sys.stderr)
    if os.path.exists(marker_path):
        os.remove(marker_path)
    os.makedirs(www, exist_ok=True)
    g = zarr.open_group(store, mode="w")
    arr = g.create_dataset(VARIABLE, shape=(steps, NY, NX), chunks=(1, NY, NX), dtype="f4",
                           compressor=None, fill_value=None)
    arr.attrs["_ARRAY_DIMENSIONS"] = ["time", "y", "x"]
    total, words_before = 0, 0
    for t in range(steps):
        s = slab(t)
        arr[t] = s
        # checksum of the whole array from per-slab pieces: index offset by the words before
        w = s.reshape(-1).view(np.uint32).astype(np.uint64)
        k = (np.arange(w.size, dtype=np.uint64) + np.uint64(words_before)) * np.uint64(2) + np.uint64(1)
        total += int(np.sum(w * k, dtype=np.uint64))
        words_before += w.size
    zarr.consolidate_metadata(store)
    marker = dict(want, checksum=f"{total % (1 << 64):016x}", bytes=steps * NY * NX * 4)
    with open(marker_path, "w") as fh:
        json.dump(marker, fh)
    return www, marker


# ---------------------------------------------------------------------------- peers

def zarr_read_worker(mode, open_mapping, runs, versions):
    """Opens the consolidated store behind `open_mapping()` with zarr-python 2.13 and times
    `runs` whole reads of VARIABLE (the zarr-python peers' one measurement)."""
    import zarr
    t_open = time.perf_counter()
    arr = zarr.open_consolidated(open_mapping(), mode="r")[VARIABLE]
    open_s = time.perf_counter() - t_open
    times, data = [], None
    for _ in range(runs):
        data = None
        t0 = time.perf_counter()
        data = arr[:]
        times.append(time.perf_counter() - t0)
    nchunks = int(np.prod([-(-s // c) for s, c in zip(arr.shape, arr.chunks)]))
    best = min(times)
    return {"mode": mode, "seconds": best, "gb_per_s": data.nbytes / best / 1e9, "bytes": int(data.nbytes),
            "runs": times, "checksum": checksum(data), "chunks": nchunks, "open_seconds": open_s,
            "versions": dict(versions, zarr=zarr.__version__)}


def zarr_python_worker(url, runs):
    """zarr-python 2.13 through fsspec's HTTP filesystem (aiohttp), as users write it."""
    import fsspec
    return dict(zarr_read_worker("zarr-python", lambda: fsspec.get_mapper(url), runs, {"fsspec": fsspec.__version__}),
                store=url)


def azure_blob_store(connection_string, container, prefix):
    """A read-only zarr 2.13 store over azure-storage-blob: chunks fetched by getitems() with
    AZ_THREADS threads (zarr uses getitems when a store has it)."""
    from zarr.storage import BaseStore

    class Store(AzureBlobMapping, BaseStore):
        def __setitem__(self, key, value):
            raise PermissionError("read-only")

        def __delitem__(self, key):
            raise PermissionError("read-only")

    return Store(connection_string, container, prefix)


class AzureBlobMapping:
    """The reading half of azure_blob_store."""

    def __init__(self, connection_string, container, prefix):
        from azure.storage.blob import ContainerClient
        from concurrent.futures import ThreadPoolExecutor
        self.cc = ContainerClient.from_connection_string(connection_string, container)
        self.prefix = prefix.rstrip("/") + "/"
        self.pool = ThreadPoolExecutor(AZ_THREADS)

    def _get(self, key):
        from azure.core.exceptions import ResourceNotFoundError
        try:
            return self.cc.download_blob(self.prefix + key).readall()
        except ResourceNotFoundError:
            raise KeyError(key)

    def __getitem__(self, key):
        return self._get(key)

    def getitems(self, keys, on_error="omit"):
        def one(k):
            try:
                return k, self._get(k)
            except KeyError:
                return k, None
        return {k: v for k, v in self.pool.map(one, keys) if v is not None}

    def __contains__(self, key):
        try:
            self._get(key)
            return True
        except KeyError:
            return False

    def __iter__(self):
        return (b.name[len(self.prefix):] for b in self.cc.list_blobs(name_starts_with=self.prefix))

    def __len__(self):
        return sum(1 for _ in self)


def zarr_azure_worker(connection_string, runs):
    """zarr-python 2.13 through the Azure SDK (azure_blob_store)."""
    import azure.storage.blob
    return zarr_read_worker("zarr-python+azure-sdk",
                            lambda: azure_blob_store(connection_string, AZ_CONTAINER, "store.zarr"), runs,
                            {"azure-storage-blob": azure.storage.blob.__version__})


def azurite_unavailable():
    sys.path.insert(0, os.path.join(REPO, "tests", "servers"))
    import azurite
    return azurite.unavailable_reason()


def run_azurite(exe, www, size, cache, runs, quiet):
    """The Azurite rows: (results, skip reason)."""
    reason = azurite_unavailable()
    if reason:
        return {}, reason
    import azurite
    directory = os.path.join(cache, f"azurite-{size}")
    marker = os.path.join(directory, "bench-uploaded.json")
    store = os.path.join(www, "store.zarr")
    with open(os.path.join(www, "bench-complete.json")) as fh:
        want = json.load(fh)["checksum"]
    server = azurite.AzuriteServer(directory)
    try:
        uploaded = None
        if os.path.exists(marker):
            with open(marker) as fh:
                uploaded = json.load(fh).get("checksum")
        if uploaded != want:  # Azurite keeps its blobs in `directory` between runs
            if not quiet:
                print(f"  uploading {store} to Azurite ...", file=sys.stderr, flush=True)
            client = server.client()
            try:
                client.create_container(AZ_CONTAINER)
            except Exception:  # exists from an interrupted upload
                pass
            server.upload_tree(AZ_CONTAINER, store, "store.zarr")
            with open(marker, "w") as fh:
                json.dump({"checksum": want}, fh)
        lc = [exe, "read"]
        peers = [
            ("az", "lazycube az:// (Azurite, SharedKey)",
             lc + [f"az://{AZ_CONTAINER}/store.zarr", VARIABLE, "--runs", str(runs),
                   "--option", "connection_string=" + server.connection_string]),
            ("az_file", "lazycube, the same store from local files", lc + [store, VARIABLE, "--runs", str(runs)]),
            ("az_zarr_python", f"zarr-python 2.13 + azure-storage-blob ({AZ_THREADS} threads)",
             [sys.executable, os.path.abspath(__file__), "--azure-worker", server.connection_string,
              "--runs", str(runs)]),
        ]
        results = {}
        for key, label, cmd in peers:
            if not quiet:
                print(f"  {label} ...", file=sys.stderr, flush=True)
            r = run_json(cmd)
            results[key] = {"label": label, "faults": {}, "info": False, "result": r, "summary": summarize(r),
                            "nginx_statuses": {}}
        return results, None
    finally:
        server.stop()


def peer_list(exe, url, runs, slow_runs, info):
    """(key, label, faults, argv, extra env, informational)."""
    lc = [exe, "read", url, VARIABLE]
    peers = [
        ("default", "lazycube (default)", CLEAN, lc + ["--runs", str(runs)], None, False),
        ("nolat", "lazycube (default), no added latency", NO_LATENCY, lc + ["--runs", str(runs)], None, False),
        # max_concurrency caps one Store call (one engine batch); with one decode thread as well,
        # one request is in flight whichever path Array::read takes (batched get_each on network
        # stores, or one get per chunk from each decode thread as before).
        ("one_in_flight", "lazycube, 1 in flight", CLEAN,
         lc + ["--runs", str(slow_runs), "--option", "max_concurrency=1"], {"LAZYCUBE_NUM_THREADS": "1"},
         False),
        ("zarr_python", "zarr-python 2.13 + fsspec", CLEAN,
         [sys.executable, os.path.abspath(__file__), "--worker", url, "--runs", str(runs)], None, False),
        ("faults", "lazycube (default), fault mix", FAULTS, lc + ["--runs", str(runs)], None, False),
    ]
    if info:
        many = [exe, "get-each", url, VARIABLE, "--runs", str(runs)]
        peers += [
            ("get_each", "Store::get_each, all chunks [info]", CLEAN, many, None, True),
            ("get_each_faults", "Store::get_each, fault mix [info]", FAULTS, many, None, True),
            # No injected latency: what loopback, nginx and the client can move on this machine.
            ("get_each_nolat", "Store::get_each, no added latency [info]", NO_LATENCY, many, None, True),
            ("mc1_only", "lazycube, max_concurrency=1 only [info]", CLEAN,
             lc + ["--runs", str(slow_runs), "--option", "max_concurrency=1"], None, True),
            ("threads64", "lazycube, LAZYCUBE_NUM_THREADS=64 [info]", CLEAN, lc + ["--runs", str(runs)],
             {"LAZYCUBE_NUM_THREADS": "64"}, True),
        ]
    return peers


def summarize(r):
    runs = r["runs"]
    chunks, nbytes = r["chunks"], r["bytes"]
    best, med = min(runs), statistics.median(runs)
    out = {"best_s": best, "median_s": med, "first_s": runs[0],
           "chunks_per_s": chunks / best, "mb_per_s": nbytes / MB / best,
           "median_chunks_per_s": chunks / med}
    if "stats" in r:
        st = r["stats"]
        out["requests_per_run"] = [s["requests"] for s in st]
        out["retries_per_run"] = [s["retries"] for s in st]
        causes = {}
        for s in st:
            for c, n in s["retries_by_cause"].items():
                causes[c] = causes.get(c, 0) + n
        out["retries_by_cause"] = causes
        out["errors"] = sum(s["errors"] for s in st)
        out["latency_ms_p50"] = st[-1]["latency_ms_p50"]
        out["latency_ms_p99"] = st[-1]["latency_ms_p99"]
    return out


def evaluate(res, expected):
    s = {k: v["summary"] for k, v in res.items()}
    checks = {}
    d = s["default"]["chunks_per_s"]
    for key, peer in (("one_in_flight", "one_in_flight"), ("zarr_python", "zarr_python")):
        ratio = d / s[peer]["chunks_per_s"]
        checks[key] = {"ratio": ratio, "target": TARGETS[key], "pass": ratio >= TARGETS[key]}
    ratio = d / s["nolat"]["chunks_per_s"]
    checks["latency_vs_nolat"] = {"ratio": ratio, "target": TARGETS["latency_vs_nolat"],
                                  "pass": ratio >= TARGETS["latency_vs_nolat"]}
    ratio = s["faults"]["chunks_per_s"] / d
    checks["faults_vs_clean"] = {"ratio": ratio, "target": TARGETS["faults_vs_clean"],
                                 "pass": ratio >= TARGETS["faults_vs_clean"]}
    if "az" in s:
        for key, peer in (("azurite_vs_file", "az_file"), ("azurite_vs_zarr_python", "az_zarr_python")):
            ratio = s["az"]["chunks_per_s"] / s[peer]["chunks_per_s"]
            checks[key] = {"ratio": ratio, "target": TARGETS[key], "pass": ratio >= TARGETS[key]}
    sums = {k: v["result"]["checksum"] for k, v in res.items()}
    checks["checksums"] = sums
    checks["expected_checksum"] = expected
    checks["checksums_equal"] = all(c == expected for c in sums.values())
    return checks


def fmt_retries(sm):
    if "retries_per_run" not in sm:
        return "n/a"
    causes = ", ".join(f"{c} {n}" for c, n in sorted(sm["retries_by_cause"].items()))
    per = "/".join(str(n) for n in sm["retries_per_run"])
    return per + (f" ({causes})" if causes else "")


def print_report(report):
    m = report["machine"]
    print(f"\n== HTTP read: {report['chunks']} chunks x 1 MiB float32, nginx +{LATENCY_MS} ms/request, "
          f"{m['cpu_count']} CPUs, best of {report['runs']} "
          f"(one-in-flight: {report['slow_runs']}) ==")
    print(f"{'peer':42} {'chunks/s':>9} {'MB/s':>8} {'best s':>7} {'median s':>8} {'1st s':>7} "
          f"{'req/run':>8}  retries per run (causes)  nginx statuses")
    for key, v in report["results"].items():
        sm = v["summary"]
        req = "/".join(str(n) for n in sm.get("requests_per_run", [])) or "n/a"
        st = " ".join(f"{k}:{n}" for k, n in v["nginx_statuses"].items())
        print(f"{v['label']:42} {sm['chunks_per_s']:9.1f} {sm['mb_per_s']:8.1f} {sm['best_s']:7.3f} "
              f"{sm['median_s']:8.3f} {sm['first_s']:7.3f} {req:>8}  {fmt_retries(sm)}  {st}")
    c = report["checks"]
    labels = {"one_in_flight": "lazycube / one in flight", "zarr_python": "lazycube / zarr-python+fsspec",
              "latency_vs_nolat": "lazycube 50 ms / no latency", "faults_vs_clean": "lazycube fault mix / clean",
              "azurite_vs_file": "lazycube az:// / local files", "azurite_vs_zarr_python": "az:// / zarr-python+SDK"}
    for key, label in labels.items():
        if key not in c:
            continue
        x = c[key]
        print(f"  {label:32} {x['ratio']:7.2f}x  target >= {x['target']:.2f}x  "
              f"{'PASS' if x['pass'] else 'MISS'}")
    if c["checksums_equal"]:
        print(f"  outputs identical to the data written (checksum {c['expected_checksum']})")
    else:
        print("  !!!!! OUTPUT MISMATCH: expected " + c["expected_checksum"] + ", got "
              + json.dumps(c["checksums"]) + " !!!!!")


def markdown(report):
    lines = ["| peer | chunks/s | MB/s | best s | median s | requests/run | retries/run (causes) |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for key, v in report["results"].items():
        sm = v["summary"]
        req = "/".join(str(n) for n in sm.get("requests_per_run", [])) or "n/a"
        lines.append(f"| {v['label']} | {sm['chunks_per_s']:.1f} | {sm['mb_per_s']:.1f} | {sm['best_s']:.3f} | "
                     f"{sm['median_s']:.3f} | {req} | {fmt_retries(sm)} |")
    c = report["checks"]
    lines += ["", "| target | measured | result |", "|---|---:|---|"]
    for key, label in (("one_in_flight", "lazycube >= 25x one request in flight"),
                       ("zarr_python", "lazycube >= 1.5x zarr-python 2.13 + fsspec at 50 ms"),
                       ("latency_vs_nolat", "lazycube at 50 ms >= 90 % of its zero-latency rate"),
                       ("faults_vs_clean", "fault mix >= 70 % of clean"),
                       ("azurite_vs_file", "Azurite: lazycube az:// >= 90 % of its local file read"),
                       ("azurite_vs_zarr_python", "Azurite: lazycube >= 1.5x zarr-python 2.13 + azure-storage-blob")):
        if key not in c:
            continue
        x = c[key]
        val = (f"{x['ratio'] * 100:.0f} %" if key in ("faults_vs_clean", "latency_vs_nolat", "azurite_vs_file")
               else f"{x['ratio']:.2f}x")
        lines.append(f"| {label} | {val} | {'PASS' if x['pass'] else 'MISS'} |")
    lines.append(f"| outputs identical (checksum) | {c['expected_checksum']} | "
                 f"{'PASS' if c['checksums_equal'] else 'MISMATCH'} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--cache", default="build/bench-data/http", help="benchmark store (reused)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per peer, best reported")
    ap.add_argument("--slow-runs", type=int, default=1,
                    help="timed runs of the one-in-flight peer (~14 s each at full size)")
    ap.add_argument("--nginx-workers", type=int, default=None,
                    help="nginx worker processes (default: one per core)")
    ap.add_argument("--quick", action="store_true", help="32 chunks, 1 run each (smoke test)")
    ap.add_argument("--no-info", action="store_true", help="skip the informational rows")
    ap.add_argument("--json", action="store_true", help="print one JSON document instead")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables instead")
    ap.add_argument("--save", metavar="FILE", help="also write the JSON document to FILE")
    ap.add_argument("--no-azurite", action="store_true", help="skip the Azurite rows")
    ap.add_argument("--worker", metavar="URL", help=argparse.SUPPRESS)
    ap.add_argument("--azure-worker", metavar="CONNECTION_STRING", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(zarr_python_worker(args.worker, args.runs)))
        return 0
    if args.azure_worker:
        print(json.dumps(zarr_azure_worker(args.azure_worker, args.runs)))
        return 0
    if args.quick:
        args.runs = 1

    exe = os.path.join(args.build_dir, "tests", "bench", "lazycube_bench_http")
    if not os.access(exe, os.X_OK):
        raise SystemExit(f"{exe} not found: build it first (cmake --build {args.build_dir} "
                         "--target lazycube_bench_http)")
    size = "quick" if args.quick else "full"
    quiet = args.json or args.markdown
    www, marker = ensure_store(os.path.abspath(args.cache), size, verbose=not quiet)
    warm(www)
    load = warn_if_busy()

    # SIGTERM/SIGINT unwind through `finally`, so nginx is always stopped.
    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_signal)

    report = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
              "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                          "loadavg_at_start": load},
              "size": size, "chunks": marker["shape"][0], "bytes": marker["bytes"],
              "latency_ms": LATENCY_MS, "faults": FAULTS, "runs": args.runs, "slow_runs": args.slow_runs,
              "results": {}}
    nginx = Nginx(os.path.join(os.path.abspath(args.cache), f"nginx-{size}"), www, "/store.zarr/.zmetadata", CLEAN,
                  workers=args.nginx_workers)
    report["nginx_workers"] = nginx.workers
    try:
        url = nginx.base + "/store.zarr"
        report["url"] = url
        for key, label, faults, cmd, env, info in peer_list(exe, url, args.runs, args.slow_runs,
                                                            not args.no_info):
            nginx.set_faults(faults)
            if not quiet:
                print(f"  {label} ...", file=sys.stderr, flush=True)
            off = nginx.log_offset()
            r = run_json(cmd, env=dict(os.environ, **env) if env else None)
            report["results"][key] = {"label": label, "faults": faults, "info": info, "result": r,
                                      "summary": summarize(r),
                                      "nginx_statuses": nginx.statuses_since(off)}
    finally:
        nginx.stop()
    if args.no_azurite:
        report["azurite_skipped"] = "--no-azurite"
    else:
        az, reason = run_azurite(exe, www, size, os.path.abspath(args.cache), args.runs, quiet)
        report["results"].update(az)
        if reason:
            report["azurite_skipped"] = reason
            print(f"Azurite rows skipped: {reason}", file=sys.stderr)
    report["checks"] = evaluate(report["results"], marker["checksum"])
    emit_report(report, args, markdown, print_report)
    if not report["checks"]["checksums_equal"]:
        print("!!!!! the peers' outputs disagree with the data written !!!!!", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
