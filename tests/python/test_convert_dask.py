"""lazycube.convert(..., client=dask.distributed.Client) (issue 19): the regions run as tasks on
a LocalCluster of 2 worker processes, each writing its own shards with the same engine; the
output is byte-identical to the single-process conversion; a worker killed mid-run is replaced
and its tasks run again, and the conversion still completes with the same bytes."""

import os
import signal
import threading
import time

import numpy as np
import pytest

from conftest import import_lazycube
from test_convert import store_files

xr = pytest.importorskip("xarray")
distributed = pytest.importorskip("distributed", reason="python3-distributed (Dask distributed) is not installed")
lazycube = import_lazycube()

OPTIONS = dict(chunks={"time": 2}, shards={"time": 4}, codec="zstd:3")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=50)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("src") / "src.zarr"
    rng = np.random.default_rng(3)
    xr.Dataset(
        {"a": (("time", "y", "x"), rng.standard_normal((200, 90, 180)).astype("f4")),
         "b": (("time", "y"), rng.integers(0, 1000, (200, 90)).astype("i4"))},
        coords={"time": np.arange(200), "y": np.linspace(-89, 89, 90)},
        attrs={"title": "dask conversion test"},
    ).to_zarr(path)
    return path


def test_dask_output_identical_to_single_process(client, source, tmp_path):
    lazycube.convert(str(source), str(tmp_path / "one.zarr"), **OPTIONS)
    written = lazycube.convert(str(source), str(tmp_path / "dask.zarr"), client=client, **OPTIONS)
    assert written > 0
    assert store_files(tmp_path / "dask.zarr") == store_files(tmp_path / "one.zarr")


def test_worker_killed_mid_run_still_completes(client, source, tmp_path):
    slow = dict(OPTIONS, codec="gzip:9")  # long enough to be killed in the middle
    lazycube.convert(str(source), str(tmp_path / "one.zarr"), **slow)
    out = tmp_path / "dask.zarr"
    result = {}

    def run():
        try:
            result["written"] = lazycube.convert(str(source), str(out), client=client, **slow)
        except BaseException as exc:  # noqa: BLE001 -- reported by the assertion below
            result["error"] = exc

    t = threading.Thread(target=run)
    t.start()
    shards = out / "a" / "c"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (shards.exists() and any(shards.iterdir())):
        time.sleep(0.005)
    pids = client.run(os.getpid)
    victim = sorted(pids.values())[0]
    os.kill(victim, signal.SIGKILL)
    assert not (out / "zarr.json").exists(), "the conversion ended before a worker could be killed"
    t.join(timeout=300)
    assert not t.is_alive()
    assert "error" not in result, result.get("error")
    assert store_files(out) == store_files(tmp_path / "one.zarr")
    client.wait_for_workers(2, timeout=60)


def test_cli_dask_flag(client, source, tmp_path, lazycube_cli):
    import subprocess

    lazycube.convert(str(source), str(tmp_path / "one.zarr"), **OPTIONS)
    args = [str(lazycube_cli), "convert", str(source), str(tmp_path / "cli.zarr"), "--chunks", "time=2",
            "--shards", "time=4", "--codec", "zstd:3", "--dask", client.scheduler.address]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert store_files(tmp_path / "cli.zarr") == store_files(tmp_path / "one.zarr")
    bad = subprocess.run(args[:3] + [str(tmp_path / "bad.zarr"), "--codec", "snappy", "--dask",
                                     client.scheduler.address], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and "snappy" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    assert not (tmp_path / "bad.zarr").exists()
