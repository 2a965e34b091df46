"""Idle keep-alive connections are bounded (issue 32): after an epoch of a DataLoader with 2
persistent workers reading over HTTP (nginx, 10 ms added latency, reads of 1,024 chunks each, so
that every read runs ~256 transfers at once), each worker keeps at most `max_idle_connections`
sockets to the server (default 32) once its engine has been quiet for a second, counted from
/proc: the worker's socket fds matched with /proc/net/tcp entries whose remote end is the
server's port. A control run with a large allowance, counted after the same wait, shows the
epoch really opened more connections than the default keeps.
"""

import os
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, import_lazycube

torch = pytest.importorskip("torch")  # before lazycube
xr = pytest.importorskip("xarray")
lazycube = import_lazycube()
from lazycube import torch as lctorch  # noqa: E402

sys.path.insert(0, str(REPO / "tests" / "servers"))
import nginx  # noqa: E402

SHAPE = (8, 128, 128)
CHUNKS = (1, 8, 8)  # 2,048 chunks of 256 bytes
INPUT_DIMS = {"time": 4, "y": 128, "x": 128}  # 2 windows of 1,024 chunks each


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    reason = nginx.unavailable_reason()
    if reason:
        pytest.skip("no nginx: %s" % reason)
    root = tmp_path_factory.mktemp("www")
    values = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)
    xr.Dataset({"a": (("time", "y", "x"), values)}).to_zarr(
        str(root / "cube.zarr"), encoding={"a": {"chunks": CHUNKS, "compressor": None}}, consolidated=True)
    with nginx.NginxServer(tmp_path_factory.mktemp("nginx"), root) as srv:
        srv.set_faults("latency_ms = 10")
        yield srv, values


def _server_socket_inodes(port):
    """inode -> state of the TCP sockets whose remote end is 127.0.0.1:port."""
    out = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            remote_port = int(f[2].rsplit(":", 1)[1], 16)
            if remote_port == port and f[9] != "0":
                out[f[9]] = f[3]
    return out


def _sockets_of(pid, port):
    inodes = _server_socket_inodes(port)
    found = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        m = re.fullmatch(r"socket:\[(\d+)\]", target)
        if m and m.group(1) in inodes:
            found += 1
    return found


def _epoch_then_count(url, port, values, storage_options):
    ds = lctorch.BatchDataset(url, input_dims=INPUT_DIMS, batch_size=1, shuffle="none",
                              storage_options=storage_options)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True)
    it = iter(loader)
    seen = 0
    for batch in it:
        x = batch if isinstance(batch, torch.Tensor) else batch[0]
        window = x.numpy().reshape(-1)
        assert any(np.array_equal(window, values[t:t + 4].reshape(-1)) for t in (0, 4)), "wrong values"
        seen += 1
    assert seen == 2
    # the engine closes connections past the allowance once it has been quiet for a second
    time.sleep(1.2)
    deadline = time.monotonic() + 2.0
    while True:
        counts = [_sockets_of(w.pid, port) for w in it._workers]
        limit = int(storage_options.get("max_idle_connections", 32))
        if all(c <= limit for c in counts) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    del it, loader
    return counts


def test_each_worker_keeps_at_most_the_idle_allowance(server):
    srv, values = server
    url, port = srv.url + "/cube.zarr", srv.port
    wide = _epoch_then_count(url, port, values, {"max_idle_connections": 10000})
    assert max(wide) > 32, "the control epoch kept only %s connections per worker: the test cannot tell" % wide
    default = _epoch_then_count(url, port, values, {})
    assert all(c <= 32 for c in default), default
    small = _epoch_then_count(url, port, values, {"max_idle_connections": 4})
    assert all(c <= 4 for c in small), small


def test_bad_allowance_is_an_error_naming_the_option(server):
    srv, _ = server
    with pytest.raises(lazycube.StoreError, match="max_idle_connections"):
        lazycube.open_dataset(srv.url + "/cube.zarr", storage_options={"max_idle_connections": "many"})


def test_a_forked_child_closes_the_parents_connections(server):
    """The parent's keep-alive connections are the parent's: a forked child (a DataLoader
    worker) closes its copies instead of keeping them open, unusable, for its whole life."""
    srv, values = server
    # An allowance above what one read opens: the engine's idle trim (all connections closed
    # after a quiet second with more than the allowance open) must not close the parent's
    # connections while a loaded machine forks (seen in CI: 0 left after the fork).
    ds = lazycube.open_dataset(srv.url + "/cube.zarr", storage_options={"max_idle_connections": 10000})
    np.testing.assert_array_equal(ds["a"].isel(time=0).values, values[0])
    assert _sockets_of(os.getpid(), srv.port) > 0, "the parent kept no connection: the test cannot tell"
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its sockets to the server before it reads anything
        try:
            os.write(w, str(_sockets_of(os.getpid(), srv.port)).encode())
        finally:
            os._exit(0)
    os.close(w)
    inherited = int(os.read(r, 64).decode())
    os.close(r)
    os.waitpid(pid, 0)
    assert inherited == 0
    assert _sockets_of(os.getpid(), srv.port) > 0  # the parent's stay open
