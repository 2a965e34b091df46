"""Windows on the epoch planner (docs/batching.md "The epoch planner"): BatchDataset /
BatchGenerator with shuffle="chunk" over sliding windows that read several one-step chunks (the
issue's case: 6-step windows, overlap 5) plan blocks over the windows' footprint. On a Zarr store
this test writes with xarray: the egress the dataset's own counters report (fetch_stats) with a
cache far smaller than the data, shuffle quality (Spearman of position and window time, median
batch span, two seeds), batches equal to xarray's windows, every window once across a resume
with other worker counts, batch size and cache, and the errors naming sizes."""

import json

import numpy as np
import pytest

from conftest import import_lazycube

torch = pytest.importorskip("torch")
xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")
lazycube = import_lazycube()
import lazycube.torch as lctorch  # noqa: E402

T, NY, NX = 1200, 32, 64
VARS = ["t2m", "u10", "sst"]
UNIT = len(VARS) * NY * NX * 4        # one step of every variable, decoded
FOOTPRINT = 6 * UNIT                  # a window reads six steps
WINDOWS = T - 5


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("planner") / "era5_like.zarr"
    rng = np.random.default_rng(46)
    ds = xr.Dataset({v: (("time", "lat", "lon"), rng.standard_normal((T, NY, NX)).astype("float32")) for v in VARS},
                    coords={"time": np.datetime64("2000-01-01") + np.arange(T) * np.timedelta64(6, "h")})
    comp = numcodecs.Blosc("zstd", 3, numcodecs.Blosc.SHUFFLE)
    ds.to_zarr(str(path), mode="w", encoding={v: {"chunks": (1, NY, NX), "compressor": comp} for v in VARS})
    return str(path), ds


def _dataset(url, **kw):
    args = dict(input_dims={"time": 6, "lat": NY, "lon": NX}, input_overlap={"time": 5}, batch_size=8,
                variables=VARS, shuffle="chunk", seed=1, cache_bytes=64 * FOOTPRINT, return_window_ids=True)
    args.update(kw)
    return lctorch.BatchDataset(url, **args)


def _spearman(order):
    ranks = np.argsort(np.argsort(np.asarray(order)))
    return float(np.corrcoef(np.arange(len(order)), ranks)[0, 1])


def _median_span(batches):
    spans = sorted((max(b) - min(b)) / (WINDOWS - 1) for b in batches if len(b) > 1)
    return spans[len(spans) // 2]


@pytest.mark.parametrize("footprints, most", [(64, 1.10), (57, 1.05)])
def test_sliding_windows_fetch_each_chunk_about_once_and_shuffle(store, footprints, most):
    # 57 footprints: the BatchDataset case (an 8 MiB cache on its 32 x 64 store of three
    # variables); today's chunk groups read that epoch at 1.063 with batches spanning 2 % of it.
    url, _ = store
    ds = _dataset(url, cache_bytes=footprints * FOOTPRINT)
    assert ds.generator.block_plan(1, 1) is not None  # planned in blocks
    batches = [b[-1].tolist() for b in ds]
    order = [w for b in batches for w in b]
    assert sorted(order) == list(range(WINDOWS))
    stats = ds.fetch_stats()
    print("%d footprints: egress %.3f, spearman %+.3f, median batch span %.2f" % (
        footprints, stats["egress_ratio"], _spearman(order), _median_span(batches)))
    assert stats["egress_ratio"] <= most, stats
    assert abs(_spearman(order)) <= 0.1
    assert _median_span(batches) >= 0.5
    # random shuffle with the same cache, for contrast
    rnd = _dataset(url, cache_bytes=footprints * FOOTPRINT, shuffle="random")
    for _ in rnd:
        pass
    assert rnd.fetch_stats()["egress_ratio"] > 2.5 * stats["egress_ratio"]


def test_batches_are_the_windows_xarray_reads_and_seeds_differ(store):
    url, ref = store
    ds = _dataset(url)
    first = []
    for k, (x, ids) in enumerate(ds):
        for j, w in enumerate(ids.tolist()):
            want = np.stack([ref[v].values[w:w + 6] for v in VARS])
            np.testing.assert_array_equal(x[j].numpy(), want)
        first += ids.tolist()
        if k == 3:
            break
    again = [w for k, (_, ids) in zip(range(4), _dataset(url)) for w in ids.tolist()]
    other = [w for k, (_, ids) in zip(range(4), _dataset(url, seed=2)) for w in ids.tolist()]
    assert again == first and other != first


def test_resume_with_other_workers_batch_size_and_cache(store):
    url, _ = store
    ds = _dataset(url)
    ds.set_epoch(2)
    first = []
    for k, (_, ids) in enumerate(ds.loader(num_workers=2)):
        first += ids.tolist()
        if k == 20:
            break
    state = json.loads(json.dumps(ds.state_dict()))
    assert state["planned_for"] == [1, 2]
    assert state["blocks"] == list(ds.generator.block_plan(1, 2))
    # another worker count, batch size and cache: the order is still the one the state planned
    again = _dataset(url, batch_size=5, cache_bytes=200 * FOOTPRINT)
    again.load_state_dict(state)
    second = []
    for k, (_, ids) in enumerate(again.loader(num_workers=3)):
        second += ids.tolist()
        if k == 30:
            break
    state2 = again.state_dict()
    assert state2["planned_for"] == [1, 2] and state2["blocks"] == state["blocks"]
    third = _dataset(url)
    third.load_state_dict(state2)
    rest = [w for _, ids in third.loader(num_workers=0) for w in ids.tolist()]
    assert sorted(first + second + rest) == list(range(WINDOWS))


def test_block_options_and_errors_name_the_sizes(store):
    url, _ = store
    gen = lazycube.BatchGenerator(url, {"time": 6, "lat": NY, "lon": NX}, {"time": 5}, batch_size=8, variables=VARS,
                                  shuffle="chunk", cache_bytes=64 * FOOTPRINT, block_samples=60, active_blocks=3,
                                  drop_last=False)
    assert gen._core.block_plan(1, 1) == (60, 3)
    assert sorted(w for b in gen for w in b.window_ids) == list(range(WINDOWS))
    with pytest.raises(lazycube.UsageError, match="smaller than one batch's footprint.*at least"):
        _dataset(url, cache_bytes=4 * FOOTPRINT)
    with pytest.raises(lazycube.UsageError, match="active_blocks 8"):
        _dataset(url, block_samples=200, active_blocks=8)
    # windows inside one chunk keep the chunk groups
    inside = _dataset(url, input_dims={"time": 1, "lat": NY, "lon": NX}, input_overlap=None)
    assert inside.generator.block_plan(1, 1) is None
