#!/usr/bin/env python3
"""Virtual GRIB benchmark (issue 34): lazycube's GRIB codec (ecCodes) against GDAL's GRIB driver
decoding the same messages, in one process, alternating (lazycube_bench_grib decode).

Inputs: the real ERA5 2 m temperature file (GRIB1, 744 messages of 33 x 49 points: the cost per
message dominates), its GRIB2 conversion, and a synthetic GRIB2 file of 0.25-degree global fields
(1440 x 721 points, 16 bits, simple packing and complex packing with spatial differencing: the
unpacking dominates). Simple packing is decoded by the codec itself (the same values as ecCodes,
bit for bit), every other packing through ecCodes. lazycube reads each message's
byte range from the file and decodes it to float64, as it reads a virtual chunk; GDAL opens the
file (its inventory of the messages) and reads every band as float64. The ratio is GDAL's time
over lazycube's (> 1: lazycube is faster); the median over --rounds processes, each best of --runs.
Target: ratio >= 0.8 on every input.

    cmake --build build --target lazycube_bench_grib
    /usr/bin/python3 tests/bench/run_grib_bench.py            # 5 rounds
    /usr/bin/python3 tests/bench/run_grib_bench.py --quick    # 3 rounds, fewer synthetic fields
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import REPO, run_json, warm, warn_if_busy  # noqa: E402

REAL = "era5-2mt-2019-03-uk.grib"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    ap.add_argument("--cache", default=None, help="where the GRIB inputs are written (default BUILD/bench-data/grib)")
    ap.add_argument("--shared-data", default=os.environ.get("LAZYCUBE_SHARED_DATA", os.path.join(os.path.dirname(REPO), "shared", "data")))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.rounds = 3
    tool = os.path.join(a.build_dir, "tests", "bench", "lazycube_bench_grib")
    if not os.path.exists(tool):
        sys.exit("build lazycube_bench_grib first (needs ecCodes): cmake --build %s --target lazycube_bench_grib" % a.build_dir)
    cache = a.cache or os.path.join(a.build_dir, "bench-data", "grib")
    os.makedirs(cache, exist_ok=True)
    inputs = []
    real = os.path.join(a.shared_data, "real", REAL)
    if os.path.exists(real):
        grib2 = os.path.join(cache, "era5-2mt-2019-03-uk.grib2")
        if not os.path.exists(grib2):
            run_json([tool, "grib2", real, grib2])
        inputs += [("ERA5 UK t2m, GRIB1 (744 x 33 x 49)", real), ("ERA5 UK t2m, GRIB2 (744 x 33 x 49)", grib2)]
    else:
        print("note: %s not found, the real-file rows are skipped" % real)
    fields = 4 if a.quick else 12
    # Simple packing is decoded by lazycube itself; complex packing with spatial differencing
    # (GFS's) goes through ecCodes.
    for packing, label in (("grid_simple", "simple packing"), ("grid_complex_spatial_differencing", "complex packing 5.3")):
        synthetic = os.path.join(cache, "global-0p25-%d-%s.grib2" % (fields, packing))
        if not os.path.exists(synthetic):
            run_json([tool, "synthetic", synthetic, "--ni", "1440", "--nj", "721", "--messages", str(fields),
                      "--packing", packing])
        inputs.append(("synthetic 0.25 deg global, GRIB2 16-bit %s (%d x 721 x 1440)" % (label, fields), synthetic))
    warn_if_busy()
    rows = []
    for name, path in inputs:
        warm(path)
        results = [run_json([tool, "decode", path, "--runs", str(a.runs)]) for _ in range(a.rounds)]
        ratio = statistics.median(r["ratio"] for r in results)
        best = min(results, key=lambda r: r["lazycube_s"])
        rows.append({"input": name, "messages": best["messages"], "lazycube_s": min(r["lazycube_s"] for r in results),
                     "gdal_s": min(r["gdal_s"] for r in results), "ratio": ratio,
                     "max_abs_diff": max(r["max_abs_diff"] for r in results)})
    if a.markdown:
        print("| input | messages | lazycube (s) | GDAL (s) | GDAL / lazycube | max abs diff |")
        print("|---|---:|---:|---:|---:|---:|")
        for r in rows:
            print("| %s | %d | %.4f | %.4f | %.2f | %.1e |" % (r["input"], r["messages"], r["lazycube_s"], r["gdal_s"],
                                                             r["ratio"], r["max_abs_diff"]))
    else:
        for r in rows:
            print(json.dumps(r))
    ok = all(r["ratio"] >= 0.8 for r in rows)
    print("PASS" if ok else "MISS", "(target: lazycube's GRIB codec >= 0.8x GDAL's GRIB driver on every input)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
