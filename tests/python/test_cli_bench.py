"""`lazycube bench` on the bundled sample (data/era5_sample_v2.zarr and _v3.zarr: time 96 x
latitude 61 x longitude 81, chunks 24 x 40 x 40, variables msl, t2m, u10, v10)."""
import json
import math
import subprocess

import pytest

from conftest import DATA, import_lazycube, run_cli

KEYS = ["batches", "windows", "seconds", "batches_per_s", "windows_per_s", "mb_per_s",
        "time_to_first_batch_s", "cache_hit_rate", "read_amplification", "peak_rss_mb"]
SAMPLES = ["era5_sample_v2.zarr", "era5_sample_v3.zarr"]


def bench(cli, *args, store="era5_sample_v2.zarr"):
    out = run_cli(cli, "bench", DATA / store, *args, "--json").stdout
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    return json.loads(lines[0])


@pytest.mark.parametrize("store", SAMPLES)
def test_json_keys_and_values(lazycube_cli, store):
    # 24 x 3 x 5 = 360 windows of 4 x 16 x 16: exactly 45 batches of 8.
    r = bench(lazycube_cli, "--variables", "t2m,u10", "--input-dims", "time=4,latitude=16,longitude=16",
              "--batch-size", "8", store=store)
    assert list(r)[:len(KEYS)] == KEYS
    assert r["batches"] == 45 and r["windows"] == 45 * 8 == r["windows_per_epoch"]
    assert r["batches_per_epoch"] == 45 and r["epochs"] == 1
    assert r["x_shape"] == [8, 2, 4, 16, 16] and r["x_dtype"] == "<f4"
    assert r["variables"] == ["t2m", "u10"] and r["shuffle"] == "none"
    assert r["seconds"] > 0 and r["peak_rss_mb"] > 1
    assert math.isclose(r["windows_per_s"], r["windows"] / r["seconds"], rel_tol=1e-6)
    assert math.isclose(r["batches_per_s"], r["batches"] / r["seconds"], rel_tol=1e-6)
    window_bytes = 2 * 4 * 16 * 16 * 4
    assert r["bytes_delivered"] == r["windows"] * window_bytes
    assert math.isclose(r["mb_per_s"], r["windows"] * window_bytes / 1e6 / r["seconds"], rel_tol=1e-6)
    assert 0 < r["time_to_first_batch_s"] < 30
    assert 0 <= r["cache_hit_rate"] <= 1
    # Ample cache (1 GiB default): every chunk fetched once.
    assert r["read_amplification"] == pytest.approx(1.0, abs=0.01)
    assert r["cache"]["misses"] > 0 and r["cache"]["evictions"] == 0


def test_max_batches_counts_across_epochs(lazycube_cli):
    args = ["--variables", "t2m", "--input-dims", "time=4,latitude=16,longitude=16", "--batch-size", "8",
            "--shuffle", "random", "--seed", "3"]
    r = bench(lazycube_cli, *args, "--epochs", "3", "--max-batches", "100")
    assert r["batches"] == 100 and r["windows"] == 800 and r["epochs"] == 3
    r = bench(lazycube_cli, *args, "--epochs", "2")
    assert r["batches"] == 90 and r["windows"] == 720 and r["epochs"] == 2
    r = bench(lazycube_cli, *args, "--max-batches", "7")
    assert r["batches"] == 7 and r["windows"] == 56 and r["epochs"] == 1


def test_short_last_batch(lazycube_cli):
    # 360 windows in batches of 50: 7 full batches and one of 10 (no drop_last).
    r = bench(lazycube_cli, "--variables", "t2m", "--input-dims", "time=4,latitude=16,longitude=16",
              "--batch-size", "50")
    assert r["batches"] == 8 and r["windows"] == 360


def test_chunk_shuffle_amplification_with_small_cache(lazycube_cli):
    # Windows 1 x 8 x 8 (96 x 7 x 10 = 6720 of them) never straddle t2m's chunks of 24 x 40 x 40
    # (150 KiB) and cover 16 of them (2.3 MiB); a 1 MiB cache holds 6.
    args = ["--variables", "t2m", "--input-dims", "time=1,latitude=8,longitude=8", "--batch-size", "16",
            "--cache-mb", "1", "--seed", "11"]
    chunk = bench(lazycube_cli, *args, "--shuffle", "chunk")
    rand = bench(lazycube_cli, *args, "--shuffle", "random")
    assert chunk["windows"] == rand["windows"] == 6720
    assert chunk["read_amplification"] <= 1.1
    assert rand["read_amplification"] > 2 * chunk["read_amplification"]
    assert chunk["cache_hit_rate"] > rand["cache_hit_rate"]


def test_cache_off(lazycube_cli):
    r = bench(lazycube_cli, "--variables", "t2m", "--input-dims", "time=24,latitude=40,longitude=40",
              "--cache-mb", "0", "--batch-size", "2")
    assert r["windows"] == 8 and r["cache"]["budget_mb"] == 0
    assert r["cache_hit_rate"] == 0 and r["cache"]["evictions"] == 0 and r["cache"]["peak_bytes_cached"] == 0


def test_human_output(lazycube_cli):
    p = run_cli(lazycube_cli, "bench", DATA / "era5_sample_v3.zarr", "--variables", "msl,v10",
                "--input-dims", "latitude=32,longitude=32", "--input-overlap", "latitude=16,longitude=16",
                "--batch-size", "4", "--max-batches", "5")
    for word in ("batches/s", "windows/s", "MB/s", "first batch", "read amplification", "peak RSS"):
        assert word in p.stdout
    assert p.stderr == ""  # no progress bar when stderr is not a terminal


def fails(cli, *args):
    p = subprocess.run([str(cli), "bench", str(DATA / "era5_sample_v2.zarr"), *args],
                       capture_output=True, text=True, timeout=60)
    assert p.stdout == ""
    assert p.stderr.startswith("lazycube: ") and len(p.stderr.strip().splitlines()) == 1, p.stderr
    return p.returncode, p.stderr


@pytest.mark.parametrize("args, status, words", [
    (["--variables", "t2m,nope", "--input-dims", "latitude=8"], 1, ["nope"]),
    (["--variables", "t2m", "--input-dims", "latitude=abc"], 2, ["latitude=abc"]),
    (["--variables", "t2m", "--input-dims", "latitude"], 2, ["latitude", "DIM=N"]),
    (["--variables", "t2m", "--input-dims", "depth=3"], 1, ["depth"]),
    (["--variables", "t2m", "--input-dims", "latitude=100"], 1, ["latitude", "61"]),
    (["--variables", "t2m", "--input-dims", "latitude=8", "--input-overlap", "latitude=8"], 1, ["latitude"]),
    (["--variables", "t2m", "--input-dims", "latitude=8", "--input-overlap", "time=1"], 2, ["time"]),
    (["--variables", "t2m", "--input-dims", "latitude=8", "--shuffle", "sideways"], 2, ["sideways"]),
    (["--variables", "t2m", "--input-dims", "latitude=8", "--batch-size", "0"], 2, ["--batch-size"]),
    (["--variables", "t2m", "--input-dims", "latitude=8,latitude=4"], 2, ["latitude", "twice"]),
    (["--input-dims", "latitude=8"], 2, ["--variables"]),
])
def test_errors(lazycube_cli, args, status, words):
    code, err = fails(lazycube_cli, *args)
    assert code == status, err
    for w in words:
        assert w in err


def test_one_document_drives_python_and_the_cli_alike(lazycube_cli):
    """The CLI's flags and Python's arguments become the same document of batch options
    (BatchOptions::from_json): the same resolved configuration -- dims, variables, order, seed,
    shard -- hence the same windows in the same order."""
    lazycube = import_lazycube()  # skips where the package is not built (the sanitizer builds)
    r = bench(lazycube_cli, "--variables", "t2m,u10", "--input-dims", "time=4,latitude=16,longitude=16",
              "--input-overlap", "latitude=2", "--batch-size", "8", "--shuffle", "chunk", "--seed", "5",
              "--max-batches", "1")
    gen = lazycube.BatchGenerator(str(DATA / "era5_sample_v2.zarr"), {"time": 4, "latitude": 16, "longitude": 16},
                                  {"latitude": 2}, batch_size=8, variables=["t2m", "u10"], shuffle="chunk",
                                  seed=5, drop_last=False)
    assert r["config"] == gen.core.options
    assert r["config"]["shuffle"] == "chunk" and r["config"]["seed"] == 5
    assert r["batches_per_epoch"] == len(gen)
