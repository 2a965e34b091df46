"""Elastic resume of lazycube.torch.BatchDataset: state_dict() at any batch, load_state_dict()
in a job of another worker count, batch size or world size continues the same epoch, and across
the runs every window of the epoch is delivered exactly once (the windows are read back by id
and checked against the xarray read of the store). The 2 -> 3 rank case runs under torchrun
(gloo, spawned workers)."""

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import import_lazycube, torchrun

torch = pytest.importorskip("torch")
xr = pytest.importorskip("xarray")
lazycube = import_lazycube()
import lazycube.torch as lctorch  # noqa: E402
from lazycube.torch_loader import received_per_worker  # noqa: E402

HERE = Path(__file__).resolve().parent
DIMS = {"time": 4, "latitude": 20, "longitude": 20}
GRID = (24, 3, 4)  # windows of the (96, 61, 81) sample
WINDOWS = 288


@pytest.fixture(scope="module")
def url(sample_dir):
    return str(sample_dir / "era5_sample_v2.zarr")


@pytest.fixture(scope="module")
def t2m(url):
    with xr.open_dataset(url, engine="zarr") as ds:
        return ds["t2m"].transpose("time", "latitude", "longitude").values.astype("float32")


def _dataset(url, **kw):
    args = dict(input_dims=DIMS, batch_size=5, variables=["t2m"], shuffle="chunk", seed=4,
                return_window_ids=True)
    args.update(kw)
    return lctorch.BatchDataset(url, **args)


def _check(batch, t2m):
    x, ids = batch
    for k, wid in enumerate(ids.tolist()):
        t, rest = divmod(wid, GRID[1] * GRID[2])
        i, j = divmod(rest, GRID[2])
        np.testing.assert_array_equal(x[k, 0].numpy(), t2m[4 * t:4 * t + 4, 20 * i:20 * i + 20, 20 * j:20 * j + 20])
    return ids.tolist()


def test_round_robin_of_the_dataloader():
    assert received_per_worker(0, [3, 3]) == [0, 0]
    assert received_per_worker(5, [3, 3]) == [3, 2]
    assert received_per_worker(5, [1, 4, 2]) == [1, 2, 2]  # a worker that ran out is passed over
    assert received_per_worker(99, [1, 4, 2]) == [1, 4, 2]


@pytest.mark.parametrize("first_workers, then_workers, then_batch", [(2, 3, 5), (0, 2, 7), (3, 0, 4)])
def test_resume_with_another_worker_count_and_batch_size(url, t2m, first_workers, then_workers, then_batch):
    ds = _dataset(url)
    ds.set_epoch(2)
    first = []
    for k, batch in enumerate(ds.loader(num_workers=first_workers)):
        first += _check(batch, t2m)
        if k == 6:
            break
    state = json.loads(json.dumps(ds.state_dict()))
    assert state["epoch"] == 2 and state["windows"] == WINDOWS
    assert sum(b - a for a, b in state["remaining"]) == WINDOWS - len(first)

    again = _dataset(url, batch_size=then_batch)
    again.load_state_dict(state)
    assert again.epoch == 2
    second = []
    for k, batch in enumerate(again.loader(num_workers=then_workers)):
        second += _check(batch, t2m)
        if k == 4:
            break
    # interrupted again: the second state continues from what is left of the first
    state2 = again.state_dict()
    third = _dataset(url)
    third.load_state_dict(state2)
    rest = [w for batch in third.loader(num_workers=2) for w in _check(batch, t2m)]
    assert sorted(first + second + rest) == list(range(WINDOWS))
    third.set_epoch(3)  # the next epoch is whole again
    assert sorted(w for batch in third for w in batch[1].tolist()) == list(range(WINDOWS))


def test_state_of_a_finished_or_untouched_epoch(url):
    ds = _dataset(url)
    assert ds.state_dict()["remaining"] == [[0, WINDOWS]]
    n = sum(1 for _ in ds)
    assert n == len(ds)
    assert ds.state_dict()["remaining"] == []
    again = _dataset(url)
    again.load_state_dict(ds.state_dict())
    assert len(again) == 0 and list(again) == []


def test_state_of_another_dataset_is_refused(url):
    state = _dataset(url).state_dict()
    for other, field in ((_dataset(url, seed=5), "seed"), (_dataset(url, shuffle="random"), "shuffle"),
                         (_dataset(url, input_dims=dict(DIMS, time=8)), "input_dims")):
        with pytest.raises(ValueError, match=field):
            other.load_state_dict(state)
    with pytest.raises(ValueError, match="not a BatchDataset state"):
        _dataset(url).load_state_dict({"format": "lazycube-forecast-state"})
    bad = dict(state, remaining=[[10, 5]])
    with pytest.raises(lazycube.UsageError, match="resume"):
        _dataset(url).load_state_dict(bad)
    with pytest.raises(ValueError, match="filter"):
        _dataset(url, filter={"variable": "t2m", "max_nan_fraction": 0.5}).state_dict()


def test_elastic_resume_two_ranks_then_three(url, t2m, tmp_path):
    if not torch.distributed.is_available():
        pytest.skip("torch.distributed is not available in this torch build")
    worker = HERE / "resume_distributed_worker.py"
    torchrun(worker, 2, "--dataset", "batch", "--url", url, "--out", tmp_path, "--mode", "first", "--stop-after", 3)
    first = [json.loads((tmp_path / ("first-rank%d.json" % r)).read_text()) for r in range(2)]
    assert first[0]["state"] == first[1]["state"]  # rank 0's state describes the job
    (tmp_path / "state.json").write_text(json.dumps(first[0]["state"]))
    torchrun(worker, 3, "--dataset", "batch", "--url", url, "--out", tmp_path, "--mode", "resume",
             "--state", tmp_path / "state.json", "--workers", 1)
    resumed = [json.loads((tmp_path / ("resume-rank%d.json" % r)).read_text()) for r in range(3)]
    delivered = [w for r in first for w in r["items"]] + [w for r in resumed for w in r["items"]]
    assert sorted(delivered) == list(range(WINDOWS))
    assert all(r["epoch"] == 1 for r in resumed)


def test_elastic_resume_of_planned_windows_two_ranks_then_three(url, tmp_path):
    """Sliding windows planned in blocks (docs/batching.md "The epoch planner"): the order
    depends on the shards it was planned for, so the state carries them and the 3-rank job plans
    the epoch as the 2-rank job (2 workers each) did: every window once."""
    if not torch.distributed.is_available():
        pytest.skip("torch.distributed is not available in this torch build")
    worker = HERE / "resume_distributed_worker.py"
    torchrun(worker, 2, "--dataset", "batch", "--sliding", "--url", url, "--out", tmp_path, "--mode", "first",
             "--stop-after", 5)
    first = [json.loads((tmp_path / ("first-rank%d.json" % r)).read_text()) for r in range(2)]
    state = first[0]["state"]
    assert state == first[1]["state"]
    assert state["planned_for"] == [2, 2] and state["blocks"] is not None
    (tmp_path / "state.json").write_text(json.dumps(state))
    torchrun(worker, 3, "--dataset", "batch", "--sliding", "--url", url, "--out", tmp_path, "--mode", "resume",
             "--state", tmp_path / "state.json", "--workers", 1)
    resumed = [json.loads((tmp_path / ("resume-rank%d.json" % r)).read_text()) for r in range(3)]
    delivered = [w for r in first for w in r["items"]] + [w for r in resumed for w in r["items"]]
    assert sorted(delivered) == list(range(first[0]["total"]))


def test_workers_fork_after_garbage_with_running_threads(url, t2m):
    """Unreachable lazycube objects (a generator in a reference cycle, its producer thread
    running) are collected in the parent before a fork, not in the forked worker, where their
    C++ destructors would stop threads the worker does not have (SIGSEGV before this)."""
    for _ in range(3):
        gen = lazycube.BatchGenerator(lazycube.open_dataset(url), DIMS, batch_size=5, variables=["t2m"])
        it = iter(gen)
        next(it)  # the producer thread is running
        cycle = [gen, it]
        cycle.append(cycle)
        del gen, it, cycle
        ids = [w for batch in _dataset(url).loader(num_workers=2) for w in _check(batch, t2m)]
        assert sorted(ids) == list(range(WINDOWS))
