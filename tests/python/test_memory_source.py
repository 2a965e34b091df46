"""In-memory xarray data through lazycube's window engine (pipeline.MemorySource): stacked
batches (batch_size=N), every shuffle, DataArrays, strided NumPy views, pickling, and the torch
datasets in-process and in forked and spawned DataLoader workers -- each window equal to the
NumPy slice of the original, read in place (no whole-array copy)."""
import pickle

import numpy as np
import pytest

lazycube = pytest.importorskip("lazycube")
xr = pytest.importorskip("xarray")

DIMS = {"y": 4, "x": 5}


def make(transposed=False):
    rng = np.random.default_rng(11)
    a = rng.random((3, 12, 10)).astype("f4")
    b = rng.random((10, 12, 3))
    if transposed:  # a strided view (not C-contiguous), as after .transpose()
        b_dims, b = ("x", "y", "t"), b
    else:
        b_dims, b = ("t", "y", "x"), np.ascontiguousarray(b.transpose(2, 1, 0))
    ds = xr.Dataset({"a": (("t", "y", "x"), a[:, ::-1, :]),  # negative strides
                     "b": (b_dims, b)},
                    coords={"t": np.array(["2020-01-01", "2020-01-02", "2020-01-03"], dtype="M8[ns]"),
                            "y": np.linspace(50, 61, 12), "x": np.arange(10) * 0.5,
                            "label": ("x", list("abcdefghij"))})
    ds["a"].attrs["units"] = "K"
    return ds


def window(ds, name, b, k):
    """Window k of stacked batch b of variable `name`, cut with xarray (dims t, y, x)."""
    ys, xs = b.windows[k][0][0], b.windows[k][1][0]
    return ds[name].isel(y=slice(ys, ys + DIMS["y"]), x=slice(xs, xs + DIMS["x"])).transpose("y", "x", "t").values


@pytest.mark.parametrize("shuffle", ["none", "random", "chunk"])
@pytest.mark.parametrize("transposed", [False, True])
def test_stacked_batches_are_the_windows_of_the_data(shuffle, transposed):
    ds = make(transposed)
    gen = lazycube.BatchGenerator(ds, DIMS, batch_size=3, shuffle=shuffle, seed=4, drop_last=False,
                                  dtype="float64")
    assert gen.reader == "lazycube" and gen.mode == "stacked"
    seen = []
    for b in gen.batches():
        x = np.asarray(b.x)
        assert list(b.channels) == ["a", "b"]
        for k, wid in enumerate(b.window_ids):
            np.testing.assert_array_equal(x[k, 0], window(ds, "a", b, k))
            np.testing.assert_array_equal(x[k, 1], window(ds, "b", b, k))
            seen.append(int(wid))
    assert sorted(seen) == list(range(len(seen))) and len(seen) == 3 * 2  # (12/4) x (10/5)
    labels = gen.batch(0).to_xarray()["window_y"].values
    assert labels.shape == (3, DIMS["y"])


def test_dataarray_and_pickled_generator():
    ds = make()
    da = ds["a"]
    gen = lazycube.BatchGenerator(da, DIMS, batch_size=2, shuffle="random", seed=1)
    assert gen.reader == "lazycube"
    first = [np.asarray(b.x).copy() for b in gen.batches()]
    again = pickle.loads(pickle.dumps(gen))
    assert isinstance(again.ds, xr.Dataset)
    np.testing.assert_array_equal(np.asarray(again.batch(0).x), first[0])
    b = gen.batch(1)
    np.testing.assert_array_equal(np.asarray(b.x)[0, 0], window(ds, "a", b, 0))


def test_data_the_core_cannot_read_in_place_is_named():
    ds = make()
    ds["name"] = (("y", "x"), np.full((12, 10), "s", dtype=object))
    with pytest.raises(NotImplementedError, match="'name'"):
        lazycube.BatchGenerator(ds, DIMS, batch_size=2)
    # the variables the core reads still go through it
    gen = lazycube.BatchGenerator(ds[["a"]], DIMS, batch_size=2)
    assert gen.reader == "lazycube"
    swapped = make()
    swapped["a"] = swapped["a"].astype(">f4")
    with pytest.raises(NotImplementedError, match="byte order"):
        lazycube.BatchGenerator(swapped, DIMS, batch_size=2)


def test_xbatcher_mode_keeps_the_numpy_views():
    gen = lazycube.BatchGenerator(make(), DIMS)
    assert gen.reader == "xarray"
    xr.testing.assert_identical(gen[0], make().isel(y=slice(0, 4), x=slice(0, 5)))


@pytest.mark.parametrize("workers", [0, "fork", "spawn"])
def test_torch_batch_dataset_over_memory(workers):
    torch = pytest.importorskip("torch")
    import lazycube.torch as lctorch
    ds = make()
    data = lctorch.BatchDataset(ds, input_dims=DIMS, batch_size=2, variables=["a"], shuffle="random",
                                drop_last=False, return_window_ids=True, num_workers=1 if workers == 0 else 2)
    kw = dict(batch_size=None, num_workers=0)
    if workers:
        kw.update(num_workers=2, multiprocessing_context=workers)
    grid = {}
    ref = lazycube.BatchGenerator(ds, DIMS, batch_size=1, variables=["a"])
    for b in ref.batches():
        grid[int(b.window_ids[0])] = np.asarray(b.x)[0]
    seen = []
    for x, ids in torch.utils.data.DataLoader(data, **kw):
        for k, wid in enumerate(ids.tolist()):
            np.testing.assert_array_equal(x[k].numpy(), grid[wid])
            seen.append(wid)
    assert sorted(seen) == sorted(grid)
