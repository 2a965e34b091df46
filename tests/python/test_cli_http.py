"""The CLI over HTTP (nginx on 127.0.0.1): --option storage options and info --stats."""

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "tests" / "servers"))
import nginx  # noqa: E402


@pytest.fixture()
def server(tmp_path):
    reason = nginx.unavailable_reason()
    if reason:
        pytest.skip(reason)
    www = tmp_path / "www"
    shutil.copytree(REPO / "data" / "era5_sample_v3.zarr", www / "era5_sample_v3.zarr")
    with nginx.NginxServer(tmp_path / "nginx", www) as s:
        yield s


def cli(exe, *args, check=True):
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, check=check)


def test_info_stats_json(lazycube_cli, server):
    url = server.url + "/era5_sample_v3.zarr"
    out = json.loads(cli(lazycube_cli, "info", url, "--json", "--stats", "--option", "retries=3",
                         "--option", "max_concurrency=8").stdout)
    assert "t2m" in out["variables"]
    stats = out["stats"]
    assert stats["requests"] >= 1 and stats["bytes"] > 0 and stats["errors"] == 0
    assert set(stats["latency_ms"]) == {"p50", "p90", "p99", "max"}
    text = cli(lazycube_cli, "info", url, "--stats").stdout
    assert "Store stats:" in text and "requests:" in text


def test_read_over_http_equals_local(lazycube_cli, server, tmp_path):
    server.set_faults("p503 = 0.2")
    remote, local = tmp_path / "remote.npy", tmp_path / "local.npy"
    cli(lazycube_cli, "read", server.url + "/era5_sample_v3.zarr", "t2m", "-o", remote,
        "--option", "retries=20", "--option", "backoff=0.001")
    cli(lazycube_cli, "read", REPO / "data" / "era5_sample_v3.zarr", "t2m", "-o", local)
    np.testing.assert_array_equal(np.load(remote), np.load(local))


def test_bad_options(lazycube_cli, server):
    url = server.url + "/era5_sample_v3.zarr"
    r = cli(lazycube_cli, "info", url, "--option", "max_concurency=4", check=False)
    assert r.returncode == 1 and "max_concurency" in r.stderr
    r = cli(lazycube_cli, "info", url, "--option", "retries", check=False)
    assert r.returncode == 2 and "KEY=VALUE" in r.stderr


def test_gcs_and_gs_read_alike_with_tuning_options(lazycube_cli, server, tmp_path):
    # gs:// and its alias gcs:// reach nginx through endpoint_url (the bucket is the directory
    # served, anonymous), taking HTTP's tuning options too.
    opts = ["--option", "endpoint_url=" + server.url, "--option", "deadline=30", "--option", "max_concurrency=4",
            "--option", "coalesce_gap=0", "--option", "backoff=0.01"]
    local = tmp_path / "local.npy"
    cli(lazycube_cli, "read", REPO / "data" / "era5_sample_v3.zarr", "t2m", "-o", local)
    for scheme in ("gs", "gcs"):
        out = tmp_path / (scheme + ".npy")
        cli(lazycube_cli, "read", scheme + "://era5_sample_v3.zarr", "t2m", "-o", out, *opts)
        np.testing.assert_array_equal(np.load(out), np.load(local))
    r = cli(lazycube_cli, "info", "gcs://era5_sample_v3.zarr", *opts, "--option", "bogus=1", check=False)
    assert r.returncode == 1 and "'bogus'" in r.stderr and "gs://" in r.stderr
    assert "valid: max_concurrency, timeout" in r.stderr and "endpoint_url" in r.stderr
