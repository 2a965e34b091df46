"""The persistent chunk cache (--cache-dir / cache_dir) shared by concurrent processes over nginx:
4 CLI processes read overlapping variables through one cache directory small enough to force
eviction; every result must hash like the local read (no torn or stale bytes)."""

import hashlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "tests" / "servers"))
import nginx  # noqa: E402

STORE = "era5_sample_v3.zarr"


@pytest.fixture()
def server(tmp_path):
    reason = nginx.unavailable_reason()
    if reason:
        pytest.skip(reason)
    www = tmp_path / "www"
    shutil.copytree(REPO / "data" / STORE, www / STORE)
    with nginx.NginxServer(tmp_path / "nginx", www) as s:
        yield s


def digest(path):
    return hashlib.sha256(np.ascontiguousarray(np.load(path)).tobytes()).hexdigest()


def cache_bytes(cache):
    return sum(p.stat().st_size for p in cache.glob("*.lcc"))


def test_four_processes_share_a_small_cache(lazycube_cli, server, tmp_path):
    local = tmp_path / "local.npy"
    subprocess.run([str(lazycube_cli), "read", str(REPO / "data" / STORE), "t2m", "-o", str(local)], check=True)
    want = digest(local)
    cache = tmp_path / "cache"
    budget = 600_000  # about a quarter of the store: every round evicts
    procs = []
    for p in range(4):
        script = " && ".join(
            f"{lazycube_cli} read {server.url}/{STORE} t2m -o {tmp_path}/out{p}_{r}.npy --cache-dir {cache} "
            f"--option cache_size={budget}" for r in range(3))
        procs.append(subprocess.Popen(["sh", "-c", script], stderr=subprocess.PIPE, text=True))
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    for p in range(4):
        for r in range(3):
            assert digest(tmp_path / f"out{p}_{r}.npy") == want, (p, r)
    assert 0 < cache_bytes(cache) <= budget * 1.5  # each process may overshoot by 1/16 between checks
    assert not list(cache.glob(".tmp-*"))


def test_env_variable_and_changed_object(lazycube_cli, server, tmp_path, monkeypatch):
    cache = tmp_path / "envcache"
    monkeypatch.setenv("LAZYCUBE_CACHE_DIR", str(cache))
    url = f"{server.url}/{STORE}"
    first = tmp_path / "a.npy"
    subprocess.run([str(lazycube_cli), "read", url, "t2m", "-o", str(first)], check=True)
    assert cache_bytes(cache) > 0
    r = subprocess.run([str(lazycube_cli), "info", url, "--option", "cache_dir=/proc/no/such/dir"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "cache_dir" in r.stderr


def test_python_cache_dir_survives_pickling(server, tmp_path):
    import pickle

    from conftest import import_lazycube
    lazycube = import_lazycube()

    cache = tmp_path / "pycache"
    ds = lazycube.open_dataset(f"{server.url}/{STORE}", cache_dir=cache)
    want = np.asarray(lazycube.open_dataset(str(REPO / "data" / STORE))["t2m"].values)
    np.testing.assert_array_equal(np.asarray(ds["t2m"].values), want)
    assert cache_bytes(cache) > 0
    again = pickle.loads(pickle.dumps(ds))
    np.testing.assert_array_equal(np.asarray(again["t2m"].values), want)
