"""lazycube.torch.ForecastDataset: batches as tensors equal to ForecastSamples' (and so to the
xarray references of test_forecast.py), every sample once per epoch across DataLoader workers
(forked and spawned), rollout schedules, normalisation from `lazycube stats` against NumPy, and
an elastic resume: a 2-rank torchrun job (gloo, spawned workers) interrupted and finished by a
3-rank job, every sample of the epoch delivered exactly once."""

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import import_lazycube, torchrun

torch = pytest.importorskip("torch")
lazycube = import_lazycube()
import lazycube.torch as lctorch  # noqa: E402

HERE = Path(__file__).resolve().parent
SPEC = dict(inputs=["t2m", "u10"], targets=["t2m"], forcings=["year_progress_sin"],
            input_offsets=["-1h", "0h"], target_offsets=["1h", "2h", "3h"])


@pytest.fixture(scope="module")
def url(sample_dir):
    return str(sample_dir / "era5_sample_v2.zarr")


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("validity"))


@pytest.fixture(scope="module")
def samples(url, index_dir):
    return lazycube.ForecastSamples(url, index_dir=index_dir, **SPEC)


def test_batches_equal_the_samples(samples):
    ds = lctorch.ForecastDataset(samples, batch_size=5, shuffle="chunk", seed=2)
    seen = []
    for batch in ds:
        assert batch["inputs"].dtype == torch.float32
        for j, s in enumerate(batch["samples"].tolist()):
            item = samples[s]
            np.testing.assert_array_equal(batch["inputs"][j].numpy(), item["inputs"])
            np.testing.assert_array_equal(batch["targets"][j].numpy(), item["targets"])
            np.testing.assert_array_equal(batch["forcings"][j].numpy(), item["forcings"])
        seen.extend(batch["samples"].tolist())
    assert sorted(seen) == list(range(len(samples)))
    assert len(ds) == -(-len(samples) // 5)


@pytest.mark.parametrize("context", ["fork", "spawn", "forkserver"])
def test_workers_cover_the_epoch_once(url, index_dir, context):
    ds = lctorch.ForecastDataset(url, batch_size=4, shuffle="random", seed=5, index_dir=index_dir, **SPEC)
    ds.set_epoch(3)
    loader = ds.loader(num_workers=2, multiprocessing_context=context)
    seen = [s for batch in loader for s in batch["samples"].tolist()]
    assert sorted(seen) == list(range(len(ds.samples)))
    # the DataLoader hands the workers' batches out in the rank's order: batch k from worker k % 2
    scheds = [ds.samples.schedule(4, "random", 5, 3, worker=w, num_workers=2) for w in range(2)]
    order = [s for k in range(scheds[0].rank_batches) for s in scheds[k % 2].batch(k // 2)]
    assert seen == order


def test_rollout_schedule_grows_with_the_epoch(samples):
    ds = lctorch.ForecastDataset(samples, batch_size=8, rollout={"start": 1, "every_epochs": 2, "max": 3})
    leads = {}
    for epoch in (0, 1, 2, 5):
        ds.set_epoch(epoch)
        leads[epoch] = next(iter(ds))["targets"].shape[1]
    assert leads == {0: 1, 1: 1, 2: 2, 5: 3}
    with pytest.raises(ValueError, match="rollout"):
        lctorch.ForecastDataset(samples, batch_size=8, rollout=4)


def test_fetch_ahead_bytes_reaches_the_epoch(samples):
    # the batches are the same with fetch-ahead off, on by default, or bounded by hand
    epochs = []
    for fetch_ahead in (0, None, 1 << 20):
        ds = lctorch.ForecastDataset(samples, batch_size=8, shuffle="chunk", seed=2, fetch_ahead_bytes=fetch_ahead)
        epochs.append([b["samples"].tolist() for b in ds])
    assert epochs[0] == epochs[1] == epochs[2]
    with pytest.raises(ValueError, match="fetch_ahead_bytes"):
        lctorch.ForecastDataset(samples, batch_size=8, fetch_ahead_bytes=-1)


def test_normalize_with_level_statistics(tmp_path, index_dir):
    xr = pytest.importorskip("xarray")
    rng = np.random.default_rng(0)
    times = np.datetime64("2000-01-01", "ns") + np.arange(12) * np.timedelta64(6, "h")
    z = rng.normal(5e4, 1e3, (12, 3, 4, 5)).astype("float32") * np.array([1, 2, 3], "float32")[None, :, None, None]
    t2m = rng.normal(280, 10, (12, 4, 5)).astype("float32")
    xr.Dataset({"z": (("time", "level", "lat", "lon"), z), "t2m": (("time", "lat", "lon"), t2m)},
               coords={"time": times, "level": [1000, 850, 500], "lat": np.arange(4.0), "lon": np.arange(5.0)}
               ).to_zarr(str(tmp_path / "z.zarr"))
    stats_path = str(tmp_path / "stats.json")
    lazycube.stats(str(tmp_path / "z.zarr"), dims=["time", "lat", "lon"]).to_json(stats_path)
    ds = lctorch.ForecastDataset(str(tmp_path / "z.zarr"), batch_size=2, normalize=stats_path, inputs=["t2m", "z"],
                                 targets=["z"], input_offsets=["0h"], target_offsets=["6h"], index_dir=index_dir)
    batch = next(iter(ds))
    level_mean = z.astype("float64").mean(axis=(0, 2, 3))
    level_std = z.astype("float64").std(axis=(0, 2, 3))
    raw = ds.samples.batch(batch["samples"].tolist())
    want_x = np.concatenate([(raw["inputs"][:, :, :1] - t2m.astype("float64").mean()) / t2m.astype("float64").std(),
                             (raw["inputs"][:, :, 1:] - level_mean[None, None, :, None, None])
                             / level_std[None, None, :, None, None]], axis=2)
    np.testing.assert_allclose(batch["inputs"].numpy(), want_x, rtol=1e-5, atol=1e-5)
    want_y = (raw["targets"] - level_mean[None, None, :, None, None]) / level_std[None, None, :, None, None]
    np.testing.assert_allclose(batch["targets"].numpy(), want_y, rtol=1e-5, atol=1e-5)


def test_state_resumes_with_another_worker_count(url, index_dir):
    ds = lctorch.ForecastDataset(url, batch_size=4, shuffle="random", seed=9, index_dir=index_dir, **SPEC)
    ds.set_epoch(2)
    first = []
    for k, batch in enumerate(ds.loader(num_workers=2)):
        first.extend(batch["samples"].tolist())
        if k == 4:
            break
    state = ds.state_dict()
    assert state["epoch"] == 2 and state["planned_for"] == [1, 2]
    assert sum(b - a for a, b in state["remaining"]) == len(ds.samples) - 20
    again = lctorch.ForecastDataset(url, batch_size=4, shuffle="random", seed=9, index_dir=index_dir, **SPEC)
    again.load_state_dict(json.loads(json.dumps(state)))
    rest = [s for batch in again.loader(num_workers=3) for s in batch["samples"].tolist()]
    assert sorted(first + rest) == list(range(len(ds.samples)))
    other = lctorch.ForecastDataset(url, batch_size=4, shuffle="random", seed=10, index_dir=index_dir, **SPEC)
    with pytest.raises(ValueError, match="seed"):
        other.load_state_dict(state)


def _torchrun(nproc, *args):
    torchrun(HERE / "resume_distributed_worker.py", nproc, *args)


def test_elastic_resume_two_ranks_then_three(url, index_dir, tmp_path):
    if not torch.distributed.is_available():
        pytest.skip("torch.distributed is not available in this torch build")
    _torchrun(2, "--url", url, "--out", tmp_path, "--mode", "first", "--stop-after", 3, "--index-dir", index_dir)
    first = [json.loads((tmp_path / ("first-rank%d.json" % r)).read_text()) for r in range(2)]
    assert first[0]["state"] == first[1]["state"]
    total = first[0]["total"]
    assert sum(b - a for a, b in first[0]["state"]["remaining"]) == total - 3 * 2 * 4
    (tmp_path / "state.json").write_text(json.dumps(first[0]["state"]))
    _torchrun(3, "--url", url, "--out", tmp_path, "--mode", "resume", "--state", tmp_path / "state.json",
              "--workers", 1, "--index-dir", index_dir)
    resumed = [json.loads((tmp_path / ("resume-rank%d.json" % r)).read_text()) for r in range(3)]
    assert len(set(resumed[0]["all_batches"])) == 1  # every rank stepped as often
    delivered = [s for r in first for s in r["items"]] + [s for r in resumed for s in r["items"]]
    assert sorted(delivered) == list(range(first[0]["total"]))
    assert all(r["epoch"] == 1 for r in resumed)


def test_state_dict_after_a_plain_dataloader_warns(url, index_dir):
    import warnings
    ds = lctorch.ForecastDataset(url, batch_size=4, shuffle="random", seed=9, index_dir=index_dir, **SPEC)
    for k, _ in enumerate(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)):
        if k == 2:
            break
    with pytest.warns(UserWarning, match=r"ds\.loader\(num_workers=\.\.\.\).*received="):
        state = ds.state_dict()
    assert sum(b - a for a, b in state["remaining"]) == len(ds.samples)  # what the warning is about
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        counted = ds.state_dict(received=3, num_workers=2)
    assert sum(b - a for a, b in counted["remaining"]) == len(ds.samples) - 12
    with warnings.catch_warnings():  # a counting loader: no warning
        warnings.simplefilter("error")
        again = lctorch.ForecastDataset(url, batch_size=4, shuffle="random", seed=9, index_dir=index_dir, **SPEC)
        for k, _ in enumerate(again.loader(num_workers=2)):
            if k == 2:
                break
        assert sum(b - a for a, b in again.state_dict()["remaining"]) == len(again.samples) - 12


@pytest.mark.parametrize("workers", [0, 2])
def test_fetch_counters_add_up_the_rank_processes(url, index_dir, workers):
    ds = lctorch.ForecastDataset(url, batch_size=4, shuffle="chunk", seed=1, index_dir=index_dir,
                                 cache_bytes=8 << 20, **SPEC)
    n = sum(len(b["samples"]) for b in ds.loader(num_workers=workers))
    assert n == len(ds.samples)
    got = ds.fetch_stats()
    assert got["requests"] > 0 and got["bytes"] >= got["bytes_needed"] > 0
    assert got["egress_ratio"] == pytest.approx(got["bytes"] / got["bytes_needed"])
    assert 1.0 <= got["egress_ratio"] <= 1.5
