"""lazycube.torch: BatchDataset and WindowDataset against xarray, with real torch DataLoaders
(in-process, forked and spawned workers, persistent workers, pin_memory).

Needs the built package (build/python, found by conftest); skips visibly when it is not built.
"""

import gc
import itertools

import numpy as np
import pytest

from conftest import import_lazycube

torch = pytest.importorskip("torch")  # before lazycube: torch must be loaded first
xr = pytest.importorskip("xarray")
lazycube = import_lazycube()  # skips when not built; fails under ctest (LAZYCUBE_PYTHON_PACKAGE)
import lazycube.torch as lctorch  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

VARS = ["t2m", "u10", "v10"]
DIMS = {"time": 4, "latitude": 16, "longitude": 16}
EXTENTS = {"time": 96, "latitude": 61, "longitude": 81}


@pytest.fixture(scope="module", params=["v2", "v3"])
def url(request, sample_dir):
    return str(sample_dir / ("era5_sample_%s.zarr" % request.param))


@pytest.fixture(scope="module")
def v2url(sample_dir):
    return str(sample_dir / "era5_sample_v2.zarr")


@pytest.fixture(scope="module")
def xds(sample_dir):
    return xr.open_zarr(str(sample_dir / "era5_sample_v2.zarr")).load()


def grid_shape(input_dims, extents=EXTENTS, shrink=None, overlap=None):
    """Windows along each input dim (row-major, last fastest), as the WindowGrid numbers them."""
    shape = []
    for d, n in input_dims.items():
        ext = extents[d] - abs((shrink or {}).get(d, 0))
        stride = n - (overlap or {}).get(d, 0)
        shape.append((ext - n) // stride + 1)
    return shape


def window_isel(wid, input_dims, shape, start_shift=None, overlap=None):
    """The isel dict of window `wid` (shifted by `start_shift` elements, for a target)."""
    sel = {}
    for (d, n), k in zip(reversed(list(input_dims.items())), reversed(shape)):
        wid, i = divmod(wid, k)
        stride = n - (overlap or {}).get(d, 0)
        start = i * stride + (start_shift or {}).get(d, 0)
        sel[d] = slice(start, start + n)
    return sel


def expected_window(xds, variables, wid, input_dims=DIMS, shape=None, shift=None, overlap=None):
    shape = shape or grid_shape(input_dims, overlap=overlap)
    sel = window_isel(wid, input_dims, shape, shift, overlap)
    return np.stack([xds[v].isel(sel).transpose(*input_dims).values for v in variables])


def ids_of(loader):
    out = []
    for item in loader:
        out.extend(int(i) for i in item[-1])
    return out


# ------------------------------------------------------------------------------------------
# BatchDataset


def test_batch_shapes_dtypes_and_len(url):
    ds = lctorch.BatchDataset(url, input_dims=DIMS, batch_size=16, variables=VARS)
    total = int(np.prod(grid_shape(DIMS)))
    assert total == 24 * 3 * 5
    assert ds.generator.total_windows == total
    assert len(ds) == -(-total // 16)
    batches = list(ds)
    assert len(batches) == len(ds)
    for b in batches[:-1]:
        assert isinstance(b, torch.Tensor)
        assert b.dtype == torch.float32
        assert tuple(b.shape) == (16, 3, 4, 16, 16)
    assert tuple(batches[-1].shape) == (total - 16 * (len(ds) - 1), 3, 4, 16, 16)
    # drop_last drops the short batch
    ds2 = lctorch.BatchDataset(url, input_dims=DIMS, batch_size=16, variables=VARS, drop_last=True)
    assert len(ds2) == total // 16 == len(list(ds2))


def test_batch_values_match_xarray(v2url, xds):
    ds = lctorch.BatchDataset(v2url, input_dims=DIMS, batch_size=32, variables=VARS,
                              shuffle="random", seed=3, return_window_ids=True)
    seen = []
    for x, ids in ds:
        assert ids.dtype == torch.int64 and len(ids) == x.shape[0]
        for k, wid in enumerate(ids.tolist()):
            np.testing.assert_array_equal(x[k].numpy(), expected_window(xds, VARS, wid))
        seen.extend(ids.tolist())
    assert sorted(seen) == list(range(360))
    assert seen != list(range(360))  # shuffled


def test_packed_int16_channel_and_dtype(v2url, xds):
    """msl is int16 packed with scale/offset: decoded like xarray, cast to the requested dtype."""
    ds = lctorch.BatchDataset(v2url, input_dims=DIMS, batch_size=8, variables=["t2m", "msl"],
                              dtype=torch.float64, return_window_ids=True)
    x, ids = next(iter(ds))
    assert x.dtype == torch.float64 and x.shape[1] == 2
    for k, wid in enumerate(ids.tolist()):
        np.testing.assert_allclose(x[k].numpy(), expected_window(xds, ["t2m", "msl"], wid), rtol=1e-6)


def test_batch_zero_copy(v2url):
    ds = lctorch.BatchDataset(v2url, input_dims=DIMS, batch_size=8, variables=VARS,
                              target={"offset": {"time": 1}})
    batch = ds.generator.batch(2)
    x, y = ds.tensors(batch)
    xa, ya = batch.arrays[0].numpy(), batch.target.numpy()
    assert x.data_ptr() == xa.__array_interface__["data"][0]
    assert y.data_ptr() == ya.__array_interface__["data"][0]
    expected = xa.copy()
    del batch, xa, ya
    gc.collect()
    np.testing.assert_array_equal(x.numpy(), expected)  # the tensor keeps the C++ buffer alive
    # and what iteration yields is such a view too: same values as batch(i), a new buffer
    it = iter(ds)
    for i, (xi, yi) in enumerate(itertools.islice(it, 3)):
        want = ds.generator.batch(i)
        np.testing.assert_array_equal(xi.numpy(), want.arrays[0].numpy())
        np.testing.assert_array_equal(yi.numpy(), want.target.numpy())
        assert xi.numpy().flags.writeable and xi.data_ptr() != want.arrays[0].numpy().ctypes.data


def test_target_offset_time_plus_one(v2url, xds):
    ds = lctorch.BatchDataset(v2url, input_dims=DIMS, batch_size=16, variables=VARS,
                              target={"offset": {"time": 1}}, shuffle="random", seed=1,
                              return_window_ids=True)
    shape = grid_shape(DIMS, shrink={"time": 1})
    assert ds.generator.total_windows == int(np.prod(shape))
    n = 0
    for x, y, ids in ds:
        assert x.shape == y.shape
        for k, wid in enumerate(ids.tolist()):
            np.testing.assert_array_equal(x[k].numpy(), expected_window(xds, VARS, wid, shape=shape))
            np.testing.assert_array_equal(y[k].numpy(),
                                          expected_window(xds, VARS, wid, shape=shape, shift={"time": 1}))
        n += len(ids)
    assert n == int(np.prod(shape))


LOADERS = [
    pytest.param(0, None, id="workers0"),
    pytest.param(2, "fork", id="fork2"),
    pytest.param(2, "spawn", id="spawn2"),
    pytest.param(2, "forkserver", id="forkserver2"),
]


@pytest.mark.parametrize("num_workers,context", LOADERS)
def test_dataloader_each_window_once_per_epoch(v2url, num_workers, context):
    ds = lctorch.BatchDataset(v2url, input_dims=DIMS, batch_size=16, variables=VARS,
                              shuffle="random", seed=11, return_window_ids=True,
                              num_workers=max(num_workers, 1))
    kw = dict(batch_size=None, num_workers=num_workers, pin_memory=True)
    if num_workers:
        kw.update(multiprocessing_context=context, persistent_workers=True)
    loader = DataLoader(ds, **kw)
    orders = []
    for epoch in (0, 1, 0):
        ds.set_epoch(epoch)
        batches = list(loader)
        ids = [int(i) for _x, b in batches for i in b]
        assert sorted(ids) == list(range(360)), "epoch %d: not every window exactly once" % epoch
        assert len(batches) == len(ds) == len(loader)
        for x, b in batches:
            assert x.dtype == torch.float32 and tuple(x.shape[1:]) == (3, 4, 16, 16)
            assert x.shape[0] == len(b)
        orders.append(ids)
    assert orders[0] != orders[1], "set_epoch(1) did not reshuffle"
    assert orders[0] == orders[2], "set_epoch(0) again did not reproduce epoch 0"
    if num_workers:
        # the persistent workers are still the same: their generators were reused
        assert loader._iterator is not None and loader._iterator._persistent_workers


def test_dataloader_values_in_workers(v2url, xds):
    ds = lctorch.BatchDataset(v2url, input_dims=DIMS, batch_size=32, variables=VARS,
                              target={"offset": {"time": 1}}, shuffle="chunk", seed=5,
                              return_window_ids=True)
    shape = grid_shape(DIMS, shrink={"time": 1})
    loader = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork")
    seen = []
    for x, y, ids in loader:
        for k in (0, len(ids) - 1):
            wid = int(ids[k])
            np.testing.assert_array_equal(x[k].numpy(), expected_window(xds, VARS, wid, shape=shape))
            np.testing.assert_array_equal(y[k].numpy(),
                                          expected_window(xds, VARS, wid, shape=shape, shift={"time": 1}))
        seen.extend(ids.tolist())
    assert sorted(seen) == list(range(int(np.prod(shape))))


def test_state_restore_resumes_exactly(v2url):
    kw = dict(input_dims=DIMS, batch_size=16, variables=VARS, shuffle="random", seed=9,
              return_window_ids=True)
    ref = lctorch.BatchDataset(v2url, **kw)
    ref.set_epoch(2)
    full = ids_of(DataLoader(ref, batch_size=None))

    ds = lctorch.BatchDataset(v2url, **kw)
    ds.set_epoch(2)
    first = []
    for _x, ids in ds:
        first.extend(ids.tolist())
        if len(first) >= 5 * 16:
            break
    state = ds.state()
    assert state["epoch"] == 2 and state["position"] == 5 * 16

    resumed = lctorch.BatchDataset(v2url, **kw)
    resumed.restore(state)
    assert resumed.epoch == 2
    rest = ids_of(DataLoader(resumed, batch_size=None))
    assert first + rest == full
    # a later iteration without restore runs the whole epoch again
    assert ids_of(resumed) == full
    # a state from another configuration is refused, naming what differs
    other = lctorch.BatchDataset(v2url, **dict(kw, seed=10))
    with pytest.raises(ValueError, match="seed"):
        other.restore(state)


def test_wraps_existing_generator(v2url):
    core_ds = lazycube._core.open(v2url)
    gen = lazycube._core.BatchGenerator(core_ds, DIMS, batch_size=16, variables=VARS,
                                        shuffle="random", seed=4)
    ds = lctorch.BatchDataset(gen, return_window_ids=True)
    assert len(ds) == len(gen)
    ids = ids_of(ds)
    assert sorted(ids) == list(range(360))
    expect = [w for i in range(len(gen)) for w in gen.batch(i).window_ids]
    assert ids == expect


def test_len_hint_matches_worker_split(v2url):
    # 360 windows in 3 workers of batch 25: 120 windows each, 5 batches each
    ds = lctorch.BatchDataset(v2url, input_dims=DIMS, batch_size=25, variables=VARS, num_workers=3,
                              return_window_ids=True)
    loader = DataLoader(ds, batch_size=None, num_workers=3, multiprocessing_context="fork")
    batches = list(loader)
    assert len(ds) == len(batches) == 15
    assert sorted(int(i) for _x, b in batches for i in b) == list(range(360))


def test_pickle_roundtrip_rebuilds_from_recipe(v2url):
    import pickle

    ds = lctorch.BatchDataset(v2url, input_dims=DIMS, batch_size=16, variables=VARS, shuffle="random",
                              seed=2, return_window_ids=True)
    ds.set_epoch(3)
    before = ids_of(ds)
    clone = pickle.loads(pickle.dumps(ds))
    assert clone.epoch == 3
    assert ids_of(clone) == before


# ------------------------------------------------------------------------------------------
# WindowDataset


def test_window_dataset_items(url, xds):
    wds = lctorch.WindowDataset(url, input_dims=DIMS, variables=VARS)
    assert len(wds) == 360
    for i in (0, 1, 17, 359, -1):
        item = wds[i]
        assert item.dtype == torch.float32 and tuple(item.shape) == (3, 4, 16, 16)
        np.testing.assert_array_equal(item.numpy(), expected_window(xds, VARS, i % 360))
    with pytest.raises(IndexError):
        wds[360]


def test_window_dataset_zero_copy(v2url):
    wds = lctorch.WindowDataset(v2url, input_dims=DIMS, variables=VARS, target=VARS)
    batch = wds.generator.batch(7)
    x, y = wds.tensors(batch)
    assert x.data_ptr() == batch.arrays[0].numpy().__array_interface__["data"][0]
    assert y.data_ptr() == batch.target.numpy().__array_interface__["data"][0]
    np.testing.assert_array_equal(x.numpy(), wds[7][0].numpy())


def test_window_dataset_target(v2url, xds):
    wds = lctorch.WindowDataset(v2url, input_dims=DIMS, variables=VARS,
                                target={"variables": ["t2m"], "offset": {"time": 1}})
    shape = grid_shape(DIMS, shrink={"time": 1})
    assert len(wds) == int(np.prod(shape))
    for i in (0, 5, len(wds) - 1):
        x, y = wds[i]
        np.testing.assert_array_equal(x.numpy(), expected_window(xds, VARS, i, shape=shape))
        np.testing.assert_array_equal(y.numpy(),
                                      expected_window(xds, ["t2m"], i, shape=shape, shift={"time": 1}))


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_window_dataset_shuffled_loader_covers_all(v2url, xds, context):
    wds = lctorch.WindowDataset(v2url, input_dims=DIMS, variables=VARS, return_window_ids=True)
    loader = DataLoader(wds, batch_size=8, shuffle=True, num_workers=2, multiprocessing_context=context,
                        pin_memory=True, persistent_workers=True)
    seen = []
    for epoch in range(2):
        ids_epoch = []
        for x, ids in loader:
            assert x.dtype == torch.float32 and tuple(x.shape[1:]) == (3, 4, 16, 16)
            k = len(ids) - 1
            np.testing.assert_array_equal(x[k].numpy(), expected_window(xds, VARS, int(ids[k])))
            ids_epoch.extend(ids.tolist())
        assert sorted(ids_epoch) == list(range(360))
        seen.append(ids_epoch)
    assert seen[0] != seen[1] and seen[0] != list(range(360))


# ------------------------------------------------------------------------------------------
# device="cuda"


def test_cuda_device_without_cuda_is_a_clear_error(v2url):
    if torch.cuda.is_available():
        pytest.skip("CUDA is available: the error path does not apply")
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        lctorch.BatchDataset(v2url, input_dims=DIMS, batch_size=8, device="cuda")


def test_cuda_device_batches(v2url):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    ds = lctorch.BatchDataset(v2url, input_dims=DIMS, batch_size=16, variables=VARS,
                              target={"offset": {"time": 1}}, device="cuda", return_window_ids=True)
    cpu = lctorch.BatchDataset(v2url, input_dims=DIMS, batch_size=16, variables=VARS,
                               target={"offset": {"time": 1}}, return_window_ids=True)
    for (x, y, ids), (xc, yc, idc) in zip(ds, cpu):
        assert x.device.type == "cuda" and y.device.type == "cuda"
        assert torch.equal(x.cpu(), xc) and torch.equal(y.cpu(), yc) and torch.equal(ids.cpu(), idc)


def test_from_dataset_object_in_process_and_forked_workers(v2url):
    """Built from an opened lazycube Dataset (wrapper or _core) instead of a URL."""
    by_url = lctorch.WindowDataset(v2url, input_dims=DIMS, variables=VARS)
    for source in (lazycube.open_dataset(v2url), lazycube._core.open(v2url)):
        ds = lctorch.BatchDataset(source, input_dims=DIMS, batch_size=16, variables=VARS,
                                  shuffle="random", seed=6, return_window_ids=True)
        in_process = ids_of(ds)
        assert sorted(in_process) == list(range(360))
        loader = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork")
        assert sorted(ids_of(loader)) == list(range(360))
        wds = lctorch.WindowDataset(source, input_dims=DIMS, variables=VARS)
        np.testing.assert_array_equal(wds[3].numpy(), by_url[3].numpy())


def test_argument_errors_at_construction(v2url):
    with pytest.raises(ValueError, match="batch_size"):
        lctorch.BatchDataset(v2url, input_dims=DIMS)
    with pytest.raises(KeyError, match="nope"):  # lazycube.NotFoundError
        lctorch.BatchDataset(v2url, input_dims=DIMS, batch_size=4, variables=["nope"])
    with pytest.raises(ValueError, match="offset"):
        lctorch.WindowDataset(v2url, input_dims=DIMS, target={"shift": {"time": 1}})


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_wraps_python_batch_generator_in_workers(v2url, context):
    """BatchDataset(lazycube.BatchGenerator(...)): workers rebuild it from its arguments."""
    if lazycube.BatchGenerator is lazycube._core.BatchGenerator:
        pytest.skip("lazycube.batch (the Python BatchGenerator) is not in this build")
    gen = lazycube.BatchGenerator(v2url, DIMS, batch_size=16, variables=VARS, shuffle=True, seed=8,
                                  drop_last=False, target={"offset": {"time": 1}})
    ds = lctorch.BatchDataset(gen, return_window_ids=True, num_workers=2)
    assert len(lctorch.BatchDataset(gen)) == len(gen)
    expect = sorted(w for i in range(len(gen)) for w in gen.core.batch(i).window_ids)
    loader = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context=context)
    items = list(loader)
    assert all(len(item) == 3 for item in items)  # x, y, ids
    assert sorted(int(i) for item in items for i in item[-1]) == expect == list(range(345))


def _lazycube_xarray(url):
    from lazycube.xarray_backend import LazycubeBackendEntrypoint

    return xr.open_dataset(url, engine=LazycubeBackendEntrypoint)


def test_from_xarray_dataset_whole_and_narrowed(v2url, xds):
    """An xarray Dataset opened with engine="lazycube": whole and narrowed with isel / to some
    variables; workers (spawned or forked) reopen its source with the selection."""
    try:
        whole = _lazycube_xarray(v2url)
    except ImportError as exc:
        pytest.skip("lazycube.xarray_backend is not in this build (%s)" % exc)
    ds = lctorch.BatchDataset(whole[VARS], input_dims=DIMS, batch_size=16, return_window_ids=True,
                              shuffle="random", seed=1)
    assert ds._pipeline.source.url == v2url and ds._pipeline.source.variables == tuple(VARS)
    # (spawned workers of a whole xarray Dataset: test_torch_process_matrix.py)
    loader = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork")
    got = {}
    for x, ids in loader:
        assert x.shape[1] == 3
        for k, wid in enumerate(ids.tolist()):
            got[wid] = x[k]
    assert sorted(got) == list(range(360))
    np.testing.assert_array_equal(got[77].numpy(), expected_window(xds, VARS, 77))

    narrowed = whole[["u10"]].isel(time=slice(8, 40))
    ds = lctorch.BatchDataset(narrowed, input_dims=DIMS, batch_size=16, return_window_ids=True)
    source = ds._pipeline.source  # the selection travels with the URL
    assert source.selection == ({"time": slice(8, 40, 1)},) and source.variables == ("u10",)
    loader = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="spawn")
    sub = xds[["u10"]].isel(time=slice(8, 40))
    shape = grid_shape(DIMS, extents=dict(EXTENTS, time=32))
    seen = []
    for x, ids in loader:
        assert x.shape[1] == 1
        for k, wid in enumerate(ids.tolist()):
            np.testing.assert_array_equal(x[k].numpy(), expected_window(sub, ["u10"], wid, shape=shape))
        seen.extend(ids.tolist())
    assert sorted(seen) == list(range(int(np.prod(shape))))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_fetch_counters_add_up_the_rank_processes(v2url, num_workers):
    ds = lctorch.BatchDataset(v2url, input_dims=DIMS, batch_size=16, variables=VARS, shuffle="chunk", seed=2,
                              cache_bytes=64 << 20)  # a cache of its own: nothing read before
    n = sum(1 for _ in ds.loader(num_workers=num_workers))
    assert n > 0
    got = ds.fetch_stats()
    assert got["requests"] > 0 and got["bytes"] >= got["bytes_needed"] > 0
    assert got["egress_ratio"] == pytest.approx(got["bytes"] / got["bytes_needed"])


def test_state_dict_after_a_plain_dataloader_warns(v2url):
    ds = lctorch.BatchDataset(v2url, input_dims=DIMS, batch_size=16, variables=VARS, shuffle="random", seed=2)
    for k, _ in enumerate(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)):
        if k == 1:
            break
    with pytest.warns(UserWarning, match=r"ds\.loader\(num_workers=\.\.\.\).*received="):
        ds.state_dict()
