"""Fetch-ahead (`fetch_ahead_bytes`) from Python over nginx with injected latency: the torch
BatchDataset in-process and in forked DataLoader workers, and lazycube.BatchGenerator, give the
windows of the local store, each once per epoch, with chunks fetched ahead; 0 switches it off.
A random shuffle over more data than the cache warns once, naming shuffle="chunk"."""

import json
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

from conftest import REPO, import_lazycube

torch = pytest.importorskip("torch")  # before lazycube: torch must be loaded first
lazycube = import_lazycube()
import lazycube.torch as lctorch  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

sys.path.insert(0, str(REPO / "tests" / "servers"))
import nginx  # noqa: E402

VARS = ["t2m", "u10"]
DIMS = {"time": 4, "latitude": 16, "longitude": 16}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    reason = nginx.unavailable_reason()
    if reason:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("fetch_ahead")
    www = tmp / "www"
    shutil.copytree(REPO / "data" / "era5_sample_v2.zarr", www / "era5_sample_v2.zarr")
    with nginx.NginxServer(tmp / "nginx", www) as s:
        s.set_faults("latency_ms = 20")
        yield s


def local_windows():
    """Window id -> x of that window, from the local store without fetch-ahead."""
    gen = lazycube.BatchGenerator(str(REPO / "data" / "era5_sample_v2.zarr"), DIMS, batch_size=64,
                                  variables=VARS, drop_last=False, fetch_ahead_bytes=0)
    out = {}
    for b in gen:
        for k, wid in enumerate(b.window_ids):
            out[int(wid)] = b.x[k].copy()
    return out


def check(batches, want):
    seen = []
    for x, ids in batches:
        for k, wid in enumerate(ids.tolist()):
            np.testing.assert_array_equal(x[k].numpy(), want[wid])
            seen.append(wid)
    assert sorted(seen) == sorted(want), "not every window exactly once"


@pytest.mark.parametrize("num_workers", [0, 2])
def test_batch_dataset_streams_the_local_windows(server, num_workers):
    want = local_windows()
    url = server.url + "/era5_sample_v2.zarr"
    ds = lctorch.BatchDataset(url, input_dims=DIMS, batch_size=16, variables=VARS, shuffle="chunk",
                              seed=3, drop_last=False, return_window_ids=True,
                              fetch_ahead_bytes=8 << 20, num_workers=max(num_workers, 1))
    kw = dict(batch_size=None, num_workers=num_workers)
    if num_workers:
        kw["multiprocessing_context"] = "fork"
    check(list(DataLoader(ds, **kw)), want)


def test_generator_counts_chunks_fetched_ahead(server):
    url = server.url + "/era5_sample_v2.zarr"
    stats = {}
    for budget in (None, 0):
        gen = lazycube.BatchGenerator(url, DIMS, batch_size=16, variables=VARS, shuffle="chunk",
                                      cache_bytes=64 << 20, fetch_ahead_bytes=budget)
        windows = sum(len(b.window_ids) for b in gen)
        assert windows > 0
        stats[budget] = gen._core.cache_stats()
    assert gen.core.fetch_ahead_bytes == 0
    assert stats[None]["fetched_ahead"] > 0
    assert stats[None]["fetched_ahead_unused"] == 0
    assert stats[0]["fetched_ahead"] == 0


def test_negative_budget_is_refused():
    with pytest.raises(Exception, match="fetch_ahead_bytes"):
        lazycube.BatchGenerator(str(REPO / "data" / "era5_sample_v2.zarr"), DIMS, batch_size=16,
                                fetch_ahead_bytes=-1)


def test_random_shuffle_larger_than_cache_warns_once():
    path = str(REPO / "data" / "era5_sample_v2.zarr")
    with pytest.warns(UserWarning, match="read amplification.*shuffle 'chunk'"):
        lazycube.BatchGenerator(path, DIMS, batch_size=16, variables=VARS, shuffle="random",
                                cache_bytes=1 << 16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lazycube.BatchGenerator(path, DIMS, batch_size=16, variables=VARS, shuffle="chunk",
                                cache_bytes=1 << 16)
        lazycube.BatchGenerator(path, DIMS, batch_size=16, variables=VARS, shuffle="random")


def test_cli_bench_fetch_ahead_option(lazycube_cli, server):
    # Over the server's latency the walker is ahead of the batches for certain; on local files a
    # fast producer may read every chunk itself before the walker asks for it.
    remote, local = server.url + "/era5_sample_v2.zarr", str(REPO / "data" / "era5_sample_v2.zarr")

    def bench(*extra, cache_mb=8, url=remote):
        r = subprocess.run([str(lazycube_cli), "bench", url,
                            "--variables", "t2m", "--input-dims", "time=1,latitude=16,longitude=16",
                            "--cache-mb", str(cache_mb), "--max-batches", "40", "--json", *extra],
                           capture_output=True, text=True, check=True)
        return json.loads(r.stdout), r.stderr
    on, _ = bench("--shuffle", "chunk", "--fetch-ahead-mb", "1")
    assert on["fetch_ahead_mb"] == 1 and on["cache"]["fetched_ahead"] > 0
    off, _ = bench("--shuffle", "chunk", "--fetch-ahead-mb", "0")
    assert off["fetch_ahead_mb"] == 0 and off["cache"]["fetched_ahead"] == 0
    assert off["windows"] == on["windows"]
    # The default: the cache less the room batches re-read chunks from (under chunk shuffle two
    # chunk groups' chunks, at most half the cache; otherwise a quarter of the cache).
    default, _ = bench("--shuffle", "chunk")
    assert 4 <= default["fetch_ahead_mb"] < 8
    default, _ = bench("--shuffle", "random")
    assert default["fetch_ahead_mb"] == 6
    out, _ = bench("--shuffle", "random", cache_mb=1, url=local)  # --json: in the JSON
    assert any("read amplification" in w and "shuffle 'chunk'" in w for w in out["warnings"])
    r = subprocess.run([str(lazycube_cli), "bench", local, "--variables", "t2m",
                        "--input-dims", "time=1,latitude=16,longitude=16", "--cache-mb", "1",
                        "--shuffle", "random", "--max-batches", "2"],
                       capture_output=True, text=True, check=True)
    assert "lazycube: warning:" in r.stderr and "read amplification" in r.stderr
    assert "warning" not in r.stdout
