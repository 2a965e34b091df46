"""lazycube.BatchGenerator as a drop-in for xbatcher.BatchGenerator (issue 23).

What xbatcher 0.4.0's own test suite pins down (test_generators.py, test_accessors.py,
test_torch_loaders.py), checked here on every kind of xarray object a user has in hand: NumPy in
memory, dask-chunked, a DataArray, data opened by xarray's zarr / netcdf4 engines (reopened by
lazycube), and engine="lazycube". The expected batches come from `RefBatcher`
(test_xbatcher_compat.py), which re-derives xbatcher's batches with plain xarray operations on
the very object passed in; `gen[i]` must be of the same type and `identical`.
"""
import pickle
import warnings

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")
lazycube = pytest.importorskip("lazycube")
from test_xbatcher_compat import RefBatcher  # noqa: E402


# ---- xbatcher's fixtures, and the forms a user hands them in ---------------------------------

def _sample_1d(rng):
    return xr.Dataset({"foo": (["x"], rng.random(100)), "bar": (["x"], rng.integers(0, 10, 100))},
                      {"x": (["x"], np.arange(100))})


def _sample_3d(rng):
    shape = (10, 50, 100)
    # a time coordinate too (xbatcher's fixture has none), so that selections on time can be
    # found again when another engine's dataset is reopened; "3d_notime" is xbatcher's own
    return xr.Dataset({"foo": (["time", "y", "x"], rng.random(shape)),
                       "bar": (["time", "y", "x"], rng.integers(0, 10, shape))},
                      {"x": (["x"], np.arange(100)), "y": (["y"], np.arange(50)),
                       "time": (["time"], np.arange(10) * 6.0)})


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(23)
    root = tmp_path_factory.mktemp("dropin")
    out = {"1d": _sample_1d(rng), "3d": _sample_3d(rng)}
    out["1d_nocoord"] = out["1d"].drop_vars("x")
    out["3d_notime"] = out["3d"].drop_vars("time")
    paths = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, ds in list(out.items()):
            paths[name, "zarr"] = str(root / ("%s.zarr" % name))
            ds.to_zarr(paths[name, "zarr"], mode="w", encoding={
                v: {"chunks": tuple(max(1, n // 3) for n in ds[v].shape)} for v in ds.data_vars})
            paths[name, "nc"] = str(root / ("%s.nc" % name))
            ds.to_netcdf(paths[name, "nc"])
    return out, paths


FORMS = ["memory", "dask", "zarr", "zarr_dask", "netcdf4", "h5netcdf", "lazycube"]
EXPECTED_READER = {"memory": "xarray", "dask": "xarray", "zarr": "lazycube",
                   "zarr_dask": "lazycube", "netcdf4": "lazycube", "h5netcdf": "lazycube",
                   "lazycube": "lazycube"}


def _form(data, name, form):
    mem, paths = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if form == "memory":
            return mem[name]
        if form == "dask":
            return mem[name].chunk({"x": 30})
        if form == "zarr":
            return xr.open_dataset(paths[name, "zarr"], engine="zarr")
        if form == "zarr_dask":
            return xr.open_dataset(paths[name, "zarr"], engine="zarr", chunks={})
        if form == "netcdf4":
            return xr.open_dataset(paths[name, "nc"], engine="netcdf4")
        if form == "h5netcdf":
            pytest.importorskip("h5netcdf", reason="h5netcdf is not installed (python3-h5netcdf)")
            return xr.open_dataset(paths[name, "nc"], engine="h5netcdf")
        return xr.open_dataset(paths[name, "zarr"], engine="lazycube")


def _all_indices(n, limit=8):
    return list(range(n)) if n <= limit else sorted({0, 1, n // 2, n - 2, n - 1})


def check(obj, *args, expected_len=None, expected_dims=None, reader=None, **kwargs):
    """gen[i] and iteration are xbatcher's batches: same type, identical, same dims."""
    gen = lazycube.BatchGenerator(obj, *args, **kwargs)
    ref = RefBatcher(obj, *args, **{k: v for k, v in kwargs.items()
                                    if k not in ("cache", "storage_options")})
    assert gen.ds is obj
    assert len(gen) == len(ref)
    if expected_len is not None:
        assert len(gen) == expected_len
    if reader is not None:
        assert gen.reader == reader
    for i in _all_indices(len(gen)):
        got, want = gen[i], ref[i]
        assert type(got) is type(want)
        xr.testing.assert_identical(got, want)
        if expected_dims is not None:  # xbatcher.testing.validate_batch_dimensions
            assert dict(got.sizes) == expected_dims
            variables = got.data_vars.values() if isinstance(got, xr.Dataset) else [got]
            for var in variables:
                assert var.shape == tuple(expected_dims[d] for d in var.dims)
    return gen, ref


# ---- test_generators.py, on every form ---------------------------------------------------------

@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("size,n", [(5, 20), (6, 16)])
def test_length_and_1d_batches(data, form, size, n):
    obj = _form(data, "1d", form)
    gen, _ = check(obj, {"x": size}, expected_len=n, expected_dims={"x": size},
                   reader=EXPECTED_READER[form])
    for k, batch in enumerate(gen):  # iteration == indexing, xbatcher's idioms work
        assert isinstance(batch, xr.Dataset)
        assert batch.dims["x"] == size and batch.sizes["x"] == size
        assert batch["foo"].shape == (size,)
        xr.testing.assert_identical(batch, obj.isel(x=slice(k * size, (k + 1) * size)).load())
    assert k == n - 1


@pytest.mark.parametrize("form", FORMS)
def test_getitem_errors(data, form):
    gen = lazycube.BatchGenerator(_form(data, "1d", form), input_dims={"x": 10})
    assert len(gen) == 10 and dict(gen[0].sizes) == dict(gen[-1].sizes) == {"x": 10}
    xr.testing.assert_identical(gen[-1], gen[9])
    with pytest.raises(NotImplementedError):
        gen[1:3]
    with pytest.raises(IndexError, match="list index out of range"):
        gen[9999999]
    with pytest.raises(IndexError, match="list index out of range"):
        gen[-11]
    with pytest.raises(NotImplementedError):
        gen[[1, 2, 3]]


@pytest.mark.parametrize("form", FORMS)
def test_argument_errors(data, form):
    obj = _form(data, "1d", form)
    with pytest.raises(ValueError):
        lazycube.BatchGenerator(obj, input_dims={"x": 110})
    with pytest.raises(ValueError):
        lazycube.BatchGenerator(obj, input_dims={"x": 10}, input_overlap={"x": 20})
    with pytest.raises(ValueError):
        lazycube.BatchGenerator(obj, input_dims={"x": 10}, input_overlap={"x": 10})
    with pytest.raises(KeyError):
        lazycube.BatchGenerator(obj, input_dims={"z": 10})


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", ["1d", "1d_nocoord"])
@pytest.mark.parametrize("size", [5, 10])
def test_1d_concat(data, form, name, size):
    gen, _ = check(_form(data, name, form), {"x": size}, concat_input_dims=True, expected_len=1,
                   expected_dims={"input_batch": 100 // size, "x_input": size})
    assert ("x" in gen[0].coords) == (name == "1d")


@pytest.mark.parametrize("form", FORMS)
def test_1d_concat_duplicate_dim_and_overlap(data, form):
    obj = _form(data, "1d", form)
    check(obj, {"x": 5}, batch_dims={"x": 10}, concat_input_dims=True, expected_len=10,
          expected_dims={"input_batch": 2, "x_input": 5})
    for overlap, n in ((1, 11), (4, 16)):
        gen, _ = check(obj, {"x": 10}, input_overlap={"x": overlap}, expected_len=n,
                       expected_dims={"x": 10})
        stride = 10 - overlap
        xr.testing.assert_identical(gen[n - 1], obj.isel(x=slice((n - 1) * stride,
                                                                 (n - 1) * stride + 10)).load())
    assert gen.input_overlap == {"x": 4}


@pytest.mark.parametrize("name,form", [("3d", f) for f in FORMS] +
                         [("3d_notime", "memory"), ("3d_notime", "lazycube")])
def test_3d_regimes(data, form, name):
    obj = _form(data, name, form)
    # one input dim: the other two stacked into `sample`
    gen, _ = check(obj, {"x": 5}, expected_len=20, expected_dims={"sample": 500, "x": 5})
    want = obj.isel(x=slice(95, 100)).stack(sample=["time", "y"]).transpose("sample", "x")
    xr.testing.assert_identical(gen[19], want.load())
    # two input dims, row-major order, no stacking
    gen, _ = check(obj, {"y": 10, "x": 20}, expected_len=25,
                   expected_dims={"time": 10, "y": 10, "x": 20})
    iy, ix = np.unravel_index(7, (5, 5))
    xr.testing.assert_identical(gen[7], obj.isel(y=slice(iy * 10, iy * 10 + 10),
                                                 x=slice(ix * 20, ix * 20 + 20)).load())
    # the four concat regimes (on dask, the reference's graphs of hundreds of patches take
    # seconds each: one regime there)
    dask = form in ("dask", "zarr_dask")
    if not dask:
        check(obj, {"y": 10, "x": 20}, concat_input_dims=True, expected_len=1,
              expected_dims={"sample": 250, "y_input": 10, "x_input": 20})
        check(obj, {"x": 5, "y": 10}, batch_dims={"time": 2}, concat_input_dims=True,
              expected_len=5, expected_dims={"sample": 200, "x_input": 5, "y_input": 10})
    check(obj, {"x": 5, "y": 10}, batch_dims={"x": 10, "y": 20}, concat_input_dims=True,
          expected_len=20, expected_dims={"sample": 40, "x_input": 5, "y_input": 10})
    # batch_dims without concat (xbatcher's xfail #126: what xbatcher returns is reproduced)
    gen, _ = check(obj, {"x": 5, "y": 10}, batch_dims={"time": 2}, expected_len=500)
    assert gen[0]["foo"].dims == ("time", "y", "x")
    with pytest.warns(UserWarning):
        lazycube.BatchGenerator(obj, {"x": 10}, batch_dims={"x": 20})


@pytest.mark.parametrize("form", ["memory", "dask", "lazycube"])
def test_dataarray_in_dataarray_out(data, form):
    da = _form(data, "3d", form)["foo"]
    gen, _ = check(da, {"x": 5}, expected_dims={"sample": 500, "x": 5})
    assert isinstance(gen[0], xr.DataArray) and gen[0].name == "foo"
    check(da, {"y": 10, "x": 20})
    check(da, {"x": 5, "y": 10}, batch_dims={"time": 2})
    if form != "dask":  # xbatcher itself fails there (`in` on a dask array)
        # xbatcher keeps a DataArray's <dim>_input index, so xr.concat aligns the patches
        check(da, {"x": 25}, concat_input_dims=True)
    anonymous = da.rename(None)
    gen, _ = check(anonymous, {"x": 50})
    assert gen[0].name is None


def test_constructor_keeps_the_object(data):
    da = xr.DataArray(np.random.default_rng(1).random(10), dims="x", name="foo")
    gen = lazycube.BatchGenerator(da, input_dims={"x": 2})
    assert gen.ds is da
    xr.testing.assert_identical(gen.ds, da)
    assert (gen.input_dims, gen.input_overlap, gen.batch_dims) == ({"x": 2}, {}, {})
    assert gen.concat_input_dims is False and gen.preload_batch is True
    assert gen.cache is None and gen.cache_preprocess is None


@pytest.mark.parametrize("preload", [True, False])
def test_preload_batch_on_dask(data, preload):
    obj = data[0]["1d"].chunk({"x": 2})
    gen = lazycube.BatchGenerator(obj, input_dims={"x": 2}, preload_batch=preload)
    assert gen.preload_batch is preload
    for batch in gen:
        assert isinstance(batch, xr.Dataset)
        assert bool(batch.chunks) is (not preload)
    xr.testing.assert_identical(gen[3].load(), obj.isel(x=slice(6, 8)).load())


def test_file_backed_dask_reopened_when_preloading(data):
    obj = _form(data, "3d", "zarr_dask").isel(time=slice(2, 8), y=slice(10, 40))[["foo"]]
    assert lazycube.BatchGenerator(obj, {"x": 25}).reader == "lazycube"
    lazy = lazycube.BatchGenerator(obj, {"x": 25}, preload_batch=False)
    assert lazy.reader == "xarray" and lazy[0].chunks


# ---- which reader: reopened only when the values are the file's -----------------------------

@pytest.mark.parametrize("form", ["zarr", "zarr_dask", "netcdf4", "h5netcdf"])
def test_other_engines_reopened_with_selection(data, form):
    obj = _form(data, "3d", form)
    for sub in (obj.isel(time=slice(2, 8), y=slice(10, 40))[["foo"]],
                obj.isel(time=3), obj.sel(x=slice(10, 69)), obj.isel(y=slice(0, 50, 2))):
        gen, _ = check(sub, {"x": 10, "y": 5}, reader="lazycube")
        assert gen.pipeline.source.url.endswith(("3d.zarr", "3d.nc"))
        if form != "zarr_dask":  # (the reference is slow on dask graphs of many patches)
            check(sub, {"x": 10, "y": 5}, batch_dims={"x": 20}, concat_input_dims=True,
                  reader="lazycube")


def test_changed_or_unrecoverable_data_read_through_xarray(data):
    obj = _form(data, "3d", "zarr")
    doubled = obj * 2  # values computed in memory: never reread from the file
    doubled.encoding = obj.encoding
    check(doubled, {"x": 20}, reader="xarray")
    check(obj.load(), {"x": 20}, reader="xarray")
    lazy = _form(data, "3d", "zarr_dask")
    check(lazy + 1, {"x": 20}, reader="xarray")
    # time has no labels in xbatcher's fixture: a slice of it cannot be located in the file
    notime = _form(data, "3d_notime", "zarr").isel(time=slice(1, 4))
    check(notime, {"x": 20}, reader="xarray")
    check(obj.transpose("x", "y", "time"), {"x": 20}, reader="xarray")


# ---- the fast Batch, explicitly ---------------------------------------------------------------

def test_fast_batch_is_explicit(data):
    obj = _form(data, "3d", "lazycube")
    gen = lazycube.BatchGenerator(obj, {"y": 10, "x": 20})
    b = gen.batch(3)
    assert isinstance(b, lazycube.batch.Batch)
    xr.testing.assert_identical(b.to_xarray(), gen[3])
    np.testing.assert_array_equal(b.numpy()["foo"], gen[3]["foo"].values)
    assert [x.index for x in gen.batches()] == list(range(len(gen)))
    stacked = lazycube.BatchGenerator(obj, {"y": 10, "x": 20}, batch_size=4)
    assert isinstance(stacked[0], lazycube.batch.Batch)
    assert isinstance(next(iter(stacked)), lazycube.batch.Batch)
    memory = lazycube.BatchGenerator(data[0]["3d"], {"y": 10, "x": 20})
    with pytest.raises(TypeError, match="in memory or dask-backed"):
        memory.batch(0)
    # stacked batches of in-memory data: read in place by the core (test_memory_source.py);
    # dask-backed data without a source lazycube reads cannot be
    assert lazycube.BatchGenerator(data[0]["3d"], {"y": 10, "x": 20}, batch_size=4).reader == "lazycube"
    with pytest.raises(NotImplementedError, match="batch_size=None"):
        lazycube.BatchGenerator(data[0]["3d"].chunk({"x": 30}), {"y": 10, "x": 20}, batch_size=4)
    with pytest.raises(ValueError, match="shuffle"):
        lazycube.BatchGenerator(data[0]["3d"], {"y": 10, "x": 20}, shuffle=True)


def test_stacked_mode_takes_other_engines(data):
    obj = _form(data, "3d", "zarr")[["foo"]]
    gen = lazycube.BatchGenerator(obj, {"y": 10, "x": 20}, batch_size=5)
    batch = gen[0]
    x, dims = batch.numpy(), list(batch.arrays[0].dims)
    assert x.shape[0] == 5 and list(batch.channels) == ["foo"]
    window = obj["foo"].isel(y=slice(0, 10), x=slice(0, 20))
    # Stacked batches are float32 unless dtype= says otherwise (batch.py, issue 31).
    assert x.dtype == np.float32
    np.testing.assert_array_equal(x[0, 0], window.transpose(*dims[2:]).values.astype(np.float32))


@pytest.mark.parametrize("form", ["memory", "zarr"])
def test_pickled_generator_gives_the_same_batches(data, form):
    gen = lazycube.BatchGenerator(_form(data, "3d", form), {"y": 10, "x": 20})
    again = pickle.loads(pickle.dumps(gen))
    assert len(again) == len(gen)
    xr.testing.assert_identical(again[7], gen[7])


# ---- cache -------------------------------------------------------------------------------------

@pytest.mark.parametrize("form", ["memory", "lazycube"])
@pytest.mark.parametrize("preload", [True, False])
def test_cache_layout_and_preprocess(data, form, preload):
    obj = _form(data, "1d", form)
    cache = {}

    def preprocess(batch):
        out = batch.load().chunk(-1)
        out.attrs["foo"] = "bar"
        return out

    gen = lazycube.BatchGenerator(obj, input_dims={"x": 10}, cache=cache,
                                  cache_preprocess=preprocess, preload_batch=preload)
    assert gen.cache is cache and gen.cache_preprocess is preprocess
    first = gen[1]
    assert first.attrs["foo"] == "bar"  # the preprocessed batch is also what a miss returns
    assert "1/.zgroup" in cache and "0/.zgroup" not in cache
    assert gen[-1].sizes["x"] == 10 and "9/.zgroup" in cache
    hit = gen[1]
    assert hit.attrs["foo"] == "bar"
    assert bool(hit.chunks) is (not preload)  # xbatcher: open_zarr, loaded when preloading
    xr.testing.assert_identical(hit, first)
    plain = obj.isel(x=slice(10, 20)).load()
    plain.attrs = dict(plain.attrs, foo="bar")
    xr.testing.assert_identical(hit.load(), plain)
    # an existing cache mapping keeps serving: a new generator reads batch 1 from it
    other = lazycube.BatchGenerator(obj.isel(x=slice(50, 100)), input_dims={"x": 10},
                                    cache=cache, preload_batch=preload)
    xr.testing.assert_identical(other[1], hit)
    assert [b.attrs.get("foo") for b in other] == [None, "bar", None, None, None]
    assert "4/.zgroup" in cache


def test_cache_in_a_zarr_store(data, tmp_path):
    import zarr
    store = zarr.DirectoryStore(str(tmp_path / "cache.zarr"))
    gen = lazycube.BatchGenerator(data[0]["3d"], {"y": 10, "x": 25}, cache=store)
    first = gen[2]
    assert "2/.zgroup" in store
    xr.testing.assert_identical(xr.open_zarr(store, group="2").load(), first)
    again = lazycube.BatchGenerator(data[0]["3d"], {"y": 10, "x": 25}, cache=store)[2]
    xr.testing.assert_identical(again, first)


# ---- accessor ----------------------------------------------------------------------------------

@pytest.mark.parametrize("form", ["memory", "dask", "zarr", "lazycube"])
def test_accessor_matches_generator(data, form):
    obj = _form(data, "3d", form)
    for target in (obj, obj["foo"]):
        direct = lazycube.BatchGenerator(target, input_dims={"x": 5})
        via = target.lazycube.batches(input_dims={"x": 5})
        assert isinstance(via, lazycube.BatchGenerator)
        assert via.reader == direct.reader
        for a, b in zip(direct, target.lazycube.generator(input_dims={"x": 5})):
            assert type(a) is type(b)
            assert a.equals(b)


# ---- xbatcher's torch loaders --------------------------------------------------------------------

def _xbatcher_torch():
    torch = pytest.importorskip("torch")
    try:
        from xbatcher.loaders import torch as loaders
    except ImportError as exc:
        pytest.skip("xbatcher is not installed (%s): its torch loaders cannot be tried" % exc)
    return torch, loaders


@pytest.fixture(params=["memory", "dask"])
def ds_xy(request):
    rng = np.random.default_rng(5)
    ds = xr.Dataset({"x": (["sample", "feature"], rng.random((100, 5))),
                     "y": (["sample"], rng.random(100))})
    return ds.chunk({"sample": 10}) if request.param == "dask" else ds


def test_xbatcher_map_and_iterable_datasets(ds_xy):
    torch, loaders = _xbatcher_torch()
    x_gen = lazycube.BatchGenerator(ds_xy["x"], {"sample": 10})
    y_gen = lazycube.BatchGenerator(ds_xy["y"], {"sample": 10})
    dataset = loaders.MapDataset(x_gen, y_gen)
    assert len(dataset) == 10
    x, y = dataset[torch.tensor([0])]
    assert x.shape == (10, 5) and y.shape == (10,)
    with pytest.raises(NotImplementedError):
        dataset[torch.tensor([0, 1])]
    loader = torch.utils.data.DataLoader(dataset, batch_size=None)
    for x, y in loader:
        assert x.shape == (10, 5)
    np.testing.assert_array_equal(x.numpy(), x_gen[-1].values)
    ones = loaders.MapDataset(x_gen, y_gen, transform=lambda b: torch.tensor((b * 0 + 1).values))
    assert (ones[0][0] == 1).all()
    for x, y in loaders.IterableDataset(x_gen, y_gen):
        assert x.shape == (10, 5) and y.shape == (10,)


def test_tensor_conversion_as_xbatcher_loaders_do(ds_xy):
    # what xbatcher's to_tensor does with each item, without xbatcher: the batches are xarray
    torch = pytest.importorskip("torch")
    x_gen = lazycube.BatchGenerator(ds_xy[["x"]], {"sample": 10})
    assert len(x_gen) == 10
    for i, batch in enumerate(x_gen):
        t = torch.tensor(batch.to_array().squeeze(dim="variable").data)
        assert t.shape == (10, 5)
        np.testing.assert_array_equal(t.numpy(), ds_xy["x"].values[i * 10:(i + 1) * 10])


def test_in_memory_batches_are_views_of_the_data(data):
    # in-memory data is served without copying: a batch's values are a window of the arrays
    obj = data[0]["3d"]
    for target in (obj, obj["foo"]):
        gen = lazycube.BatchGenerator(target, {"y": 10, "x": 20})
        assert gen.reader == "xarray"
        batch = gen[7]
        values = batch["foo"].values if isinstance(batch, xr.Dataset) else batch.values
        assert np.shares_memory(values, obj["foo"].values)


def test_in_memory_object_changed_after_construction(data):
    # xbatcher reads the object at each batch: variables replaced later are what it batches
    obj = data[0]["1d"].copy()
    gen = lazycube.BatchGenerator(obj, {"x": 10})
    first = gen[2]
    obj["foo"] = obj["foo"] * 2
    obj["baz"] = obj["bar"] + 1
    again = gen[2]
    xr.testing.assert_identical(again, obj.isel(x=slice(20, 30)))
    np.testing.assert_array_equal(again["foo"].values, 2 * first["foo"].values)
    da = data[0]["1d"]["foo"].copy()
    gen = lazycube.BatchGenerator(da, {"x": 10})
    gen[0]
    da.coords["x"] = da["x"] * 10
    xr.testing.assert_identical(gen[3], da.isel(x=slice(30, 40)))


def test_storage_options_reach_the_reopen(data):
    # xarray does not keep the storage options a dataset was opened with: given to the
    # generator, they are used to reopen it (and a failure to reopen is reported, not hidden)
    obj = _form(data, "3d", "zarr").isel(time=slice(2, 6))
    gen, _ = check(obj, {"x": 20}, storage_options={"anon": "true"}, reader="lazycube")
    assert dict(gen.pipeline.source.storage_options) == {"anon": "true"}
    assert pickle.loads(pickle.dumps(gen)).pipeline.source == gen.pipeline.source
    with pytest.raises(ValueError, match="cannot be reopened"):
        lazycube.BatchGenerator(data[0]["3d"], {"x": 20}, storage_options={"anon": "true"})
    with pytest.raises(ValueError, match="storage_options"):  # lazycube-opened: nothing to reopen
        lazycube.BatchGenerator(_form(data, "3d", "lazycube"), {"x": 20},
                                storage_options={"anon": "true"})


# ---- a data dim called `sample` (xbatcher's torch-loader tests: a samples x features table) ----

@pytest.mark.parametrize("engine", ["lazycube", "zarr"])
def test_data_dim_named_sample_is_a_plain_dim(tmp_path, engine):
    rng = np.random.default_rng(3)
    table = xr.Dataset({"x": (("sample", "feature"), rng.random((100, 5)).astype("f4")),
                        "y": (("sample",), rng.random(100).astype("f4"))})
    table.to_zarr(tmp_path / "t.zarr")
    opened = xr.open_dataset(tmp_path / "t.zarr", engine=engine)
    for obj in (opened[["x"]], opened, opened["x"]):
        # xarray's zarr engine leaves the source out of a DataArray's encoding: read as it is
        reader = "xarray" if engine == "zarr" and isinstance(obj, xr.DataArray) else "lazycube"
        gen, _ = check(obj, {"sample": 10}, expected_len=10, reader=reader)
        for k in (0, 9):
            got = gen[k]
            want = table if isinstance(obj, xr.Dataset) else table["x"]
            want = want[list(obj.data_vars)] if isinstance(obj, xr.Dataset) else want
            xr.testing.assert_identical(got, want.isel(sample=slice(10 * k, 10 * k + 10)))
        assert gen[0]["x"].shape == (10, 5) if isinstance(obj, xr.Dataset) else gen[0].shape == (10, 5)
    # stacked sample dims still stack: three non-input dims
    cube = xr.Dataset({"v": (("a", "b", "c"), rng.random((4, 3, 6)).astype("f4"))})
    cube.to_zarr(tmp_path / "c.zarr")
    check(xr.open_dataset(tmp_path / "c.zarr", engine=engine), {"c": 3}, reader="lazycube")
