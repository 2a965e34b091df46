"""A DataLoader worker killed with SIGKILL mid-epoch (issue 21): for lazycube's BatchDataset
(iterable) and WindowDataset (map-style), in workers of every start method, over a local store
and over HTTP (nginx, with latency, so that the kill lands while the worker is reading), with
persistent workers and pin_memory too: the loop ends with an error within seconds -- torch's
RuntimeError naming the dead worker (see the note on forkserver below and docs/faults.md) --,
every item delivered before (and after) the kill equals the reference values, and once the
loader is dropped no worker process is left.

Each case runs in a child process (loader_kill_child.py, a session of its own) under a hard
timeout, so that a loader that hangs fails the test instead of hanging the run.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, import_lazycube
from loader_kill_child import window_of
import cache_entries  # noqa: E402

torch = pytest.importorskip("torch")  # before lazycube
xr = pytest.importorskip("xarray")
lazycube = import_lazycube()

sys.path.insert(0, str(REPO / "tests" / "servers"))
import nginx  # noqa: E402

HERE = Path(__file__).resolve().parent
VARS = ["a", "b"]
DIMS = {"time": 2, "y": 16, "x": 16}  # 16 x 4 x 4 = 256 windows of the 32 x 64 x 64 cube
CHILD_TIMEOUT_S = 90
ERROR_WITHIN_S = 10  # torch reports a dead worker on SIGCHLD at once, at worst after 5 s of polling


@pytest.fixture(scope="module")
def www(tmp_path_factory):
    root = tmp_path_factory.mktemp("www")
    values = np.arange(32 * 64 * 64, dtype=np.float32).reshape(32, 64, 64)
    ds = xr.Dataset({"a": (("time", "y", "x"), values), "b": (("time", "y", "x"), 1 - values)},
                    coords={"time": np.arange(32), "y": np.arange(64), "x": np.arange(64)})
    ds.to_zarr(str(root / "cube.zarr"), encoding={v: {"chunks": (4, 16, 16)} for v in VARS},
               consolidated=True)
    with xr.open_zarr(str(root / "cube.zarr")) as read:
        np.save(root / "reference.npy", np.stack([read[v].transpose("time", "y", "x").values for v in VARS]))
    return root


@pytest.fixture(scope="module")
def http_server(www, tmp_path_factory):
    reason = nginx.unavailable_reason()
    if reason:
        pytest.skip("no nginx for the HTTP case: %s" % reason)
    prefix = tmp_path_factory.mktemp("nginx")
    with nginx.NginxServer(prefix, www) as server:
        server.set_faults("latency_ms = 15")  # every chunk read waits: kills land mid-read
        yield server


@pytest.fixture(scope="module")
def http_url(http_server):
    return http_server.url + "/cube.zarr"


def run_child(args):
    """The JSON result of loader_kill_child.py; fails (killing its process group) when it does not
    finish within CHILD_TIMEOUT_S."""
    # the child imports the lazycube this process imported (conftest may have found it itself)
    package_root = str(Path(lazycube.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])))
    proc = subprocess.Popen([sys.executable, str(HERE / "loader_kill_child.py"), json.dumps(args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)
    try:
        out, err = proc.communicate(timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail("the DataLoader hung after a worker was SIGKILLed (no result in %d s)\nstdout:\n%s\n"
                    "stderr:\n%s" % (CHILD_TIMEOUT_S, out, err[-4000:]))
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # anything of the session still running
        except ProcessLookupError:
            pass
    assert proc.returncode == 0, "child exited %d\nstdout:\n%s\nstderr:\n%s" % (proc.returncode, out, err[-4000:])
    result = json.loads(out.strip().splitlines()[-1])
    result["stderr"] = err[-3000:]
    return result


CASES = [
    # (form, store, method, persistent_workers + pin_memory)
    ("batch", "local", "fork", False),
    ("batch", "local", "spawn", False),
    ("window", "local", "fork", False),
    ("batch", "local", "forkserver", True),
    ("window", "local", "fork", True),
    ("batch", "http", "fork", False),
    ("window", "http", "spawn", True),
    ("batch", "http-cache", "fork", False),  # the workers share a chunk cache directory
]


@pytest.mark.parametrize("form,store,method,persistent", CASES,
                         ids=["-".join([f, s, m] + (["persistent"] if p else [])) for f, s, m, p in CASES])
def test_worker_killed_mid_epoch(www, request, tmp_path, form, store, method, persistent):
    url = request.getfixturevalue("http_url") if store.startswith("http") else str(www / "cube.zarr")
    args = {"url": url, "form": form, "method": method, "variables": VARS, "dims": DIMS,
            "reference": str(www / "reference.npy"), "kill_after": 5}
    cache = tmp_path / "cache"
    if store == "http-cache":
        args["storage_options"] = {"cache_dir": str(cache)}
    if persistent:
        # a second epoch on the same persistent workers, the kill in it; pin_memory on (torch
        # pins only when CUDA is available: a no-op on a CPU-only machine)
        args.update(persistent=True, pin_memory=True, epochs=2, kill_epoch=1)
    result = run_child(args)
    crashed = [msg for _, msg in result["errors"] if "killed by signal" in msg or "exited unexpectedly" in msg]
    if result["errors"] and result.get("killed_at_batch") is None and not crashed:
        # The loop failed before this test killed anything, and no worker died: torch 1.13's own
        # fetch of a worker's batch (its file-descriptor handover, seen once on a loaded CI
        # machine as an in-flight error at batch 5 with no kill) -- not the case under test. Once
        # more; a second such failure fails the test with both results. A worker that died on its
        # own before the kill is a failure at once (below: no error naming the killed worker).
        first = result
        result = run_child(args)
        assert not (result["errors"] and result.get("killed_at_batch") is None), \
            "the loop failed twice before the kill: %s / %s" % (first, result)
    assert result.get("killed_at_batch") is not None, "the loop ended before the kill: %s" % result
    assert result["wrong"] == [], "items with wrong values delivered: windows %s" % result["wrong"]
    # torch's report naming the killed worker: the loop's error, or (pytorch#28950, a race in
    # torch 1.13's _try_get_data) right after the ConnectionError of fetching the dead worker's
    # batch in flight, as the next exception (the user's traceback ends with it). Forkserver
    # workers are not children of this process: no SIGCHLD, so after that ConnectionError no
    # report follows (torch's limit; its own check finds a dead worker after 5 s otherwise).
    # A forked worker can miss its report too: when the main process's liveness check
    # (multiprocessing's is_alive(), a waitpid) reaps the dead worker before torch's SIGCHLD handler
    # asks (waitid), the handler finds nothing to report (seen once in CI with persistent workers).
    errors = result["errors"]
    assert errors, "the loop ended without an error after the worker was killed: %s" % result
    named = [msg for kind, msg in errors if kind == "RuntimeError" and "DataLoader worker (pid" in msg
             and str(result["killed_pid"]) in msg
             and ("killed by signal: Killed" in msg or "exited unexpectedly" in msg)]
    # the dead worker's batch in flight: its shared-memory descriptor fetched over a socket the
    # kill closed -- before the connection (refused), mid-connection (reset) or before a byte of
    # the answer (EOFError from multiprocessing's recv_handle)
    in_flight = errors[0][0] in ("ConnectionResetError", "ConnectionRefusedError", "EOFError")
    assert named or in_flight, "no error naming the killed worker: %s" % result
    assert errors[0][0] == "RuntimeError" or in_flight, result
    assert result["error_after_s"] is not None and result["error_after_s"] < ERROR_WITHIN_S, result
    assert result["epochs_done"] == (1 if persistent else 0), result
    per_epoch = 64  # batches of 4 windows
    assert result["delivered"] < per_epoch * (2 if persistent else 1), "the epoch ran to its end: %s" % result
    assert result["workers_alive"] == [], "workers left running after the loader was dropped: %s" % result
    if store == "http-cache":
        # the killed worker published whole entries or none (a publish it was in the middle of
        # stays a .tmp- file, which readers never open and eviction removes after an hour); a
        # later reader through the same directory gets the reference values
        assert cache_entries.entries(cache), "nothing was cached"
        assert all(cache_entries.entry_whole(p) for p in cache_entries.entries(cache))
        ds = lazycube.open_dataset(url, cache_dir=str(cache))
        reference = np.load(www / "reference.npy")
        for k, v in enumerate(VARS):
            np.testing.assert_array_equal(ds[v].values, reference[k], err_msg=v)


@pytest.mark.parametrize("form", ["batch", "window"])
def test_server_restarted_mid_epoch(www, http_server, form):
    """nginx stopped and started again (300 ms down) while DataLoader workers read an epoch over
    HTTP: the engine's retries recover, and the epoch yields every window once with the values
    of the local store. DataLoader(timeout=) bounds each batch: a hang fails."""
    import lazycube.torch as lctorch
    from torch.utils.data import DataLoader

    reference = np.load(www / "reference.npy")
    # one request at a time per worker (15 ms each): the epoch takes ~2 s, the restart lands in it
    options = {"storage_options": {"retries": "20", "backoff": "0.05", "max_backoff": "0.4",
                                   "deadline": "30", "max_concurrency": "1"}}
    url = http_server.url + "/cube.zarr"
    if form == "batch":
        data = lctorch.BatchDataset(url, input_dims=DIMS, batch_size=4, variables=VARS, shuffle="random",
                                    seed=1, return_window_ids=True, **options)
        kwargs = {"batch_size": None}
    else:
        data = lctorch.WindowDataset(url, DIMS, variables=VARS, return_window_ids=True, **options)
        kwargs = {"batch_size": 4, "shuffle": True}
    loader = DataLoader(data, num_workers=2, multiprocessing_context="fork", timeout=60, **kwargs)
    log = http_server.prefix / "logs" / "access.log"
    restarts = []

    def restart():
        http_server.stop()
        time.sleep(0.3)
        logged = len(log.read_text().splitlines())
        http_server.start_again()
        restarts.append((time.monotonic(), logged))

    seen, restarter, last = [], None, None
    for x, ids in loader:
        last = time.monotonic()
        for k, wid in enumerate(ids.tolist()):
            np.testing.assert_array_equal(x[k].numpy(), window_of(reference, list(DIMS.values()), wid),
                                          err_msg="window %d" % wid)
            seen.append(wid)
        if restarter is None and len(seen) >= 16:
            restarter = threading.Thread(target=restart)
            restarter.start()
    restarter.join()
    assert restarts, "the server was not restarted"
    assert sorted(seen) == list(range(256))
    # the epoch was still reading when the server came back: it ended later, and the new
    # server answered chunk requests
    restarted_at, logged = restarts[0]
    assert last > restarted_at, "the epoch ended before the restart: the test proves nothing"
    assert len(log.read_text().splitlines()) > logged


def test_server_down_past_the_retry_budget(www, http_server):
    """The server stays down longer than the retry budget: the worker's StoreError reaches the
    loop (as lazycube.StoreError, torch's note naming the worker) with the URL of the chunk."""
    import lazycube.torch as lctorch
    from torch.utils.data import DataLoader

    options = {"storage_options": {"retries": "2", "backoff": "0.02", "max_backoff": "0.05",
                                   "max_concurrency": "1"}}
    data = lctorch.BatchDataset(http_server.url + "/cube.zarr", input_dims=DIMS, batch_size=4,
                                variables=VARS, return_window_ids=True, **options)
    loader = DataLoader(data, batch_size=None, num_workers=2, multiprocessing_context="fork", timeout=60)
    delivered = 0
    try:
        with pytest.raises(lazycube.StoreError) as info:
            for _ in loader:
                delivered += 1
                if delivered == 4:
                    http_server.stop()
                    stopped = time.monotonic()
        assert time.monotonic() - stopped < 10
    finally:
        if http_server.proc.poll() is not None:
            http_server.start_again()
    message = str(info.value)
    assert http_server.url + "/cube.zarr/" in message and "attempt" in message, message
    assert "DataLoader worker process" in message, message
