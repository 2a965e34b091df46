"""lazycube.BatchGenerator (Python) in stacked mode (batch_size=N) and its generic behaviour:
values against xarray's zarr engine window by window, zero-copy numpy(), to_xarray(), targets,
shuffling, sharding, state/restore, indexing rules and errors."""
import pickle
import warnings

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
lazycube = pytest.importorskip("lazycube")
from lazycube.xarray_backend import LazycubeBackendEntrypoint  # noqa: E402

from conftest import redecode_packed  # noqa: E402

ENGINE = LazycubeBackendEntrypoint
INPUT = {"time": 4, "latitude": 16, "longitude": 16}
N_WINDOWS = (96 // 4) * (61 // 16) * (81 // 16)  # 24 * 3 * 5 = 360


@pytest.fixture(scope="module")
def ref(era5):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return redecode_packed(xr.open_dataset(era5, engine="zarr").load(),  # msl: float64
                               xr.open_dataset(era5, engine="zarr", mask_and_scale=False).load())


def window_of(ref, var, dims, window, offset=None):
    sel = {d: slice(s + (offset or {}).get(d, 0), s + (offset or {}).get(d, 0) + c)
           for d, (s, c) in zip(dims, window)}
    return ref[var].isel(sel)


def test_stacked_values_match_xarray(era5, ref):
    gen = lazycube.BatchGenerator(era5, INPUT, batch_size=8, variables=["t2m", "u10", "msl"])
    assert gen.mode == "stacked"
    assert gen.total_windows == N_WINDOWS
    assert len(gen) == N_WINDOWS // 8
    for i in (0, 17, len(gen) - 1):
        b = gen[i]
        x = b.numpy()
        assert isinstance(x, np.ndarray)
        assert x.shape == (8, 3, 4, 16, 16)
        # msl's float64 scale/offset decode it to float64; stacked batches default to float32
        assert x.dtype == np.float32
        assert list(b.channels) == ["t2m", "u10", "msl"]
        assert list(b.arrays[0].dims) == ["sample", "channel", "time", "latitude", "longitude"]
        for k, window in enumerate(b.windows):
            for c, var in enumerate(b.channels):
                want = window_of(ref, var, b.window_dims, window).transpose("time", "latitude",
                                                                             "longitude")
                np.testing.assert_allclose(x[k, c], want.values.astype(x.dtype), rtol=1e-6)


def test_numpy_is_zero_copy_and_to_xarray_shares_it(era5, ref):
    gen = lazycube.BatchGenerator(era5, INPUT, batch_size=4, variables=["t2m", "v10"])
    b = gen[3]
    x1, x2 = b.numpy(), b.numpy()
    assert np.shares_memory(x1, x2)
    assert np.shares_memory(x1, np.asarray(b.arrays[0]))
    xb = b.to_xarray()
    assert isinstance(xb, xr.Dataset)
    assert xb["x"].dims == ("sample", "channel", "time", "latitude", "longitude")
    assert np.shares_memory(xb["x"].values, x1)
    assert list(xb["channel"].values) == ["t2m", "v10"]
    np.testing.assert_array_equal(xb["window_id"].values, np.asarray(b.window_ids))
    for k, window in enumerate(b.windows):
        for dim in ("time", "latitude", "longitude"):
            labels = window_of(ref, "t2m", b.window_dims, window)[dim].values
            np.testing.assert_array_equal(xb["window_%s" % dim].values[k], labels)
    assert xb["window_time"].dtype.kind == "M"
    np.testing.assert_array_equal(xb["latitude_start"].values,
                                  [w[list(b.window_dims).index("latitude")][0] for w in b.windows])


def test_target_offset_pairs_x_and_y(era5, ref):
    gen = lazycube.BatchGenerator(era5, INPUT, batch_size=5, variables=["t2m", "u10"],
                                  target={"variables": ["t2m"], "offset": {"time": 1}})
    b = gen[2]
    x, y = b.numpy()
    assert x.shape == (5, 2, 4, 16, 16) and y.shape == (5, 1, 4, 16, 16)
    assert list(b.target_channels) == ["t2m"]
    for k, window in enumerate(b.windows):
        want = window_of(ref, "t2m", b.window_dims, window, offset={"time": 1})
        np.testing.assert_allclose(y[k, 0], want.transpose("time", "latitude", "longitude").values)
        np.testing.assert_allclose(x[k, 0], window_of(ref, "t2m", b.window_dims, window).values)
    xb = b.to_xarray()
    assert "y" in xb and "x" in xb
    assert list(xb["target_channel"].values) == ["t2m"]
    assert np.shares_memory(xb["y"].values, y)


def test_core_next_arrays_yields_the_batches_of_next_without_copying(era5):
    """next_arrays(): the data of next() as (x, y) NumPy views, None at the end of the epoch."""
    kwargs = dict(batch_size=7, drop_last=False, shuffle=True, seed=3, variables=["t2m", "u10"],
                  target={"variables": ["msl"], "offset": {"time": 1}})
    want = [b.numpy() for b in lazycube.BatchGenerator(era5, INPUT, **kwargs)]
    core = lazycube.BatchGenerator(era5, INPUT, **kwargs).core
    core.set_epoch(0)
    got = []
    while (arrays := core.next_arrays()) is not None:
        got.append(arrays)
    assert core.next_arrays() is None  # the end stays the end
    assert len(got) == len(want) == -(-core.shard_windows // 7)
    for (x, y), (wx, wy) in zip(got, want):
        np.testing.assert_array_equal(x, wx)
        np.testing.assert_array_equal(y, wy)
        assert x.flags.writeable and x.flags.c_contiguous and y.flags.c_contiguous
    assert got[-1][0].shape[0] == core.shard_windows % 7
    # The arrays are the batch buffer itself and keep it alive on their own.
    x = got[0][0]
    del got
    np.testing.assert_array_equal(x, want[0][0])
    # Without a target y is None; xbatcher mode (no batch_size) has no stacked arrays.
    plain = lazycube.BatchGenerator(era5, INPUT, batch_size=4, variables=["v10"]).core
    plain.set_epoch(0)
    x, y = plain.next_arrays()
    assert y is None and x.shape == (4, 1, 4, 16, 16)
    xb = lazycube.BatchGenerator(era5, INPUT).core
    with pytest.raises(ValueError, match="next_arrays"):
        xb.next_arrays()


def test_drop_last_and_short_last_batch(era5):
    kept = lazycube.BatchGenerator(era5, INPUT, batch_size=7, drop_last=False)
    dropped = lazycube.BatchGenerator(era5, INPUT, batch_size=7)  # drop_last=True by default
    assert len(dropped) == N_WINDOWS // 7
    assert len(kept) == -(-N_WINDOWS // 7)
    assert kept[-1].numpy().shape[0] == N_WINDOWS % 7
    assert sum(b.numpy().shape[0] for b in kept) == N_WINDOWS


def _order(gen):
    return [wid for b in gen for wid in b.window_ids]


def test_iteration_covers_every_window_once_and_replays(era5):
    gen = lazycube.BatchGenerator(era5, INPUT, batch_size=12, prefetch=3)
    first = _order(gen)
    assert sorted(first) == list(range(N_WINDOWS))
    assert first == list(range(N_WINDOWS))  # no shuffle: grid order
    assert _order(gen) == first  # a finished epoch is replayed by a new iteration


def test_shuffle_reproducible(era5):
    a = _order(lazycube.BatchGenerator(era5, INPUT, batch_size=10, shuffle=True, seed=5))
    b = _order(lazycube.BatchGenerator(era5, INPUT, batch_size=10, shuffle="random", seed=5))
    c = _order(lazycube.BatchGenerator(era5, INPUT, batch_size=10, shuffle=True, seed=6))
    assert a == b
    assert a != c
    assert sorted(a) == sorted(c) == list(range(N_WINDOWS))
    gen = lazycube.BatchGenerator(era5, INPUT, batch_size=10, shuffle=True, seed=5)
    gen.set_epoch(1)
    assert gen.epoch == 1
    e1 = _order(gen)
    assert e1 != a and sorted(e1) == sorted(a)
    # gen[i] follows the current epoch's order.
    assert list(gen[0].window_ids) == e1[:10]
    chunked = _order(lazycube.BatchGenerator(era5, INPUT, batch_size=10, shuffle="chunk", seed=5))
    assert sorted(chunked) == list(range(N_WINDOWS))
    with pytest.raises(ValueError):
        lazycube.BatchGenerator(era5, INPUT, batch_size=10, shuffle="sometimes")


def test_sharding_over_ranks_and_workers(era5):
    seen = []
    for rank in range(2):
        for worker in range(2):
            gen = lazycube.BatchGenerator(era5, INPUT, batch_size=9, shuffle=True, seed=1,
                                          rank=rank, world_size=2, worker=worker, num_workers=2,
                                          drop_last=False)
            assert gen.shard_windows == N_WINDOWS // 4
            seen += _order(gen)
    assert sorted(seen) == list(range(N_WINDOWS))


def test_state_restore_resumes_exactly(era5):
    kwargs = dict(batch_size=16, shuffle=True, seed=11)
    full = _order(lazycube.BatchGenerator(era5, INPUT, **kwargs))
    gen = lazycube.BatchGenerator(era5, INPUT, **kwargs)
    it = iter(gen)
    head = [w for _ in range(5) for w in next(it).window_ids]
    state = gen.state()
    assert state["position"] == 5 * 16
    fresh = lazycube.BatchGenerator(era5, INPUT, **kwargs)
    fresh.restore(state)
    rest = _order(fresh)
    assert head + rest == full
    other = lazycube.BatchGenerator(era5, INPUT, batch_size=8)
    with pytest.raises(ValueError):
        other.restore(state)


def test_pickle_generator_built_from_url(era5):
    gen = lazycube.BatchGenerator(era5, INPUT, batch_size=6, shuffle=True, seed=2)
    it = iter(gen)
    next(it)
    clone = pickle.loads(pickle.dumps(gen))
    assert clone.state() == gen.state()
    assert list(next(iter(clone)).window_ids) == list(next(it).window_ids)


def test_pickle_generator_built_from_selected_dataset(era5):
    """A lazycube Dataset narrowed with isel/sel reopens with the same selection elsewhere."""
    ds = lazycube.open_dataset(era5).isel(time=slice(2, 60)).sel(latitude=slice(60, 45))
    gen = lazycube.BatchGenerator(ds, INPUT, batch_size=6, shuffle=True, seed=2, variables=["t2m"])
    it = iter(gen)
    first = next(it)
    clone = pickle.loads(pickle.dumps(gen))
    assert clone.state() == gen.state() and clone.total_windows == gen.total_windows
    a, b = next(it), next(iter(clone))
    assert list(a.window_ids) == list(b.window_ids)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert first.epoch == 0
    # a bare core dataset has no source: refused with a TypeError that says why
    with pytest.raises(TypeError, match="_core"):
        pickle.dumps(lazycube.BatchGenerator(lazycube.open_dataset(era5)._core, INPUT, batch_size=6))


def test_getitem_rules(era5):
    gen = lazycube.BatchGenerator(era5, INPUT, batch_size=50)
    n = len(gen)
    assert list(gen[-1].window_ids) == list(gen[n - 1].window_ids)
    assert list(gen[-n].window_ids) == list(gen[0].window_ids)
    assert list(gen[np.int64(2)].window_ids) == list(gen[2].window_ids)
    for bad in (n, -n - 1, 10 ** 9):
        with pytest.raises(IndexError, match="^list index out of range$"):
            gen[bad]
    for key in ([0, 1], slice(0, 2), "0", 1.0):
        with pytest.raises(NotImplementedError):
            gen[key]


def test_xbatcher_mode_numpy_dict(era5, ref):
    gen = lazycube.BatchGenerator(era5, {"latitude": 30, "longitude": 40})
    assert gen.mode == "xbatcher" and gen.batch_size is None
    assert len(gen) == 2 * 2
    b = gen.batch(3)  # the fast Batch, asked for explicitly
    arrays = b.numpy()
    assert set(arrays) == {"t2m", "u10", "v10", "msl"}
    want = ref.isel(latitude=slice(30, 60), longitude=slice(40, 80))
    for name, arr in arrays.items():
        assert arr.shape == (96, 30, 40)
        np.testing.assert_array_equal(arr, want[name].values)
        assert np.shares_memory(arr, b.numpy()[name])
    xr.testing.assert_identical(gen[3], b.to_xarray())  # gen[i]: xbatcher's xr.Dataset


def test_variables_keep_subset_in_xbatcher_mode(era5, ref):
    gen = lazycube.BatchGenerator(era5, {"time": 48}, variables=["msl"])
    out = gen[1]
    assert list(out.data_vars) == ["msl"]
    xr.testing.assert_identical(out, ref[["msl"]].isel(time=slice(48, 96))
                                .stack(sample=["latitude", "longitude"]).transpose("sample", "time"))


def test_filter_and_dtype(era5):
    gen = lazycube.BatchGenerator(era5, INPUT, batch_size=10, dtype="float64",
                                  filter={"variable": "t2m", "max_nan_fraction": 0.5})
    b = next(iter(gen))
    assert b.numpy().dtype == np.float64
    with pytest.raises(ValueError):
        lazycube.BatchGenerator(era5, INPUT, batch_size=10, filter={"var": "t2m"})


def test_xarray_input_and_accessor_stacked(era5):
    ds = xr.open_dataset(era5, engine=ENGINE)
    a = ds.lazycube.batches(INPUT, batch_size=8, variables=["t2m"])
    b = lazycube.BatchGenerator(era5, INPUT, batch_size=8, variables=["t2m"])
    np.testing.assert_array_equal(a[5].numpy(), b[5].numpy())
    # An xarray Dataset narrowed to two variables stacks those two.
    two = lazycube.BatchGenerator(ds[["u10", "v10"]], INPUT, batch_size=4)
    assert list(two[0].channels) == ["u10", "v10"]


def test_errors_map_to_python_exceptions(era5, tmp_path):
    with pytest.raises(FileNotFoundError):
        lazycube.BatchGenerator(str(tmp_path / "nope.zarr"), INPUT, batch_size=4)
    with pytest.raises(KeyError):  # unknown variable: NotFoundError
        lazycube.BatchGenerator(era5, INPUT, batch_size=4, variables=["nope"])
    with pytest.raises(KeyError):  # unknown dim (xbatcher mode): SelectionError
        lazycube.BatchGenerator(era5, {"level": 2})
    with pytest.raises(ValueError, match="level"):  # stacked mode: no variable has the dim
        lazycube.BatchGenerator(era5, {"level": 2}, batch_size=4)
    with pytest.raises(ValueError) as err:  # window longer than the dim: UsageError
        lazycube.BatchGenerator(era5, {"latitude": 100}, batch_size=4)
    assert isinstance(err.value, lazycube.UsageError)
    assert "latitude" in str(err.value)
    with pytest.raises(ValueError):
        lazycube.BatchGenerator(era5, INPUT, batch_size=0)
    with pytest.raises(TypeError):
        lazycube.BatchGenerator(era5, INPUT, batch_size=4, not_an_option=1)
    with pytest.raises(TypeError):
        lazycube.BatchGenerator(12, INPUT)


def test_warnings_surface_as_user_warning(era5):
    with pytest.warns(UserWarning):
        gen = lazycube.BatchGenerator(era5, {"time": 24}, batch_dims={"time": 48})
    assert gen.warnings
