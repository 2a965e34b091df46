"""Pickling what lazycube opens (issue 31): xarray Datasets opened with engine="lazycube" and
lazycube's own Dataset/Variable travel by their source description (URL, storage options, open
arguments, selection) and reopen on the other side -- never a C++ object -- so they go to Dask
distributed workers and multiprocessing like xarray's own zarr engine."""
import pickle
import warnings

import numpy as np
import pytest

from conftest import import_lazycube

lazycube = import_lazycube()
xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")

from lazycube import xarray_backend  # noqa: E402
from lazycube.xarray_backend import LazycubeBackendArray, to_xarray  # noqa: E402


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A Zarr v2 store written by xarray's to_zarr: float32 with NaNs and a _FillValue, int16
    without one, a bool (xarray's int8 + dtype="bool"), CF times, 2-D coordinates."""
    rng = np.random.default_rng(31)
    nt, ny, nx = 12, 6, 5
    t2m = rng.normal(280.0, 5.0, (nt, ny, nx)).astype("float32")
    t2m[0, 0, 0] = np.nan
    t2m[5, 2, 3] = np.nan
    ds = xr.Dataset(
        {
            "t2m": (("time", "lat", "lon"), t2m, {"units": "K", "long_name": "2 m temperature"}),
            "count": (("time", "lat", "lon"), rng.integers(-100, 100, (nt, ny, nx)).astype("int16")),
            "land": (("lat", "lon"), rng.random((ny, nx)) > 0.5),
        },
        coords={
            "time": np.datetime64("2020-01-01T00") + np.arange(nt) * np.timedelta64(6, "h"),
            "lat": np.linspace(50.0, 45.0, ny),
            "lon": np.linspace(0.0, 4.0, nx),
        },
        attrs={"title": "pickling fixture"},
    )
    path = tmp_path_factory.mktemp("pickle") / "cube.zarr"
    ds.to_zarr(path, encoding={"t2m": {"chunks": (4, 3, 5)}, "count": {"chunks": (4, 6, 5)}})
    return str(path)


def _zarr_engine(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_dataset(path, engine="zarr", **kwargs)


def _roundtrip(obj):
    return pickle.loads(pickle.dumps(obj))


def _backend_of(da):
    """The LazycubeBackendArray under xarray's lazy wrappers of `da`, or None (values loaded)."""
    found = xarray_backend._backend_of(da.variable._data)
    return None if found is None else found[0]


# ---- pickle.dumps / pickle.loads ------------------------------------------------------------

def test_engine_dataset_pickles_identical(store):
    ds = xr.open_dataset(store, engine="lazycube")
    back = _roundtrip(ds)
    # Still lazy on the other side: a LazycubeBackendArray over the same source, nothing read.
    for name in ds.data_vars:
        backend = _backend_of(back[name])
        assert isinstance(backend, LazycubeBackendArray), name
        assert backend.source == ds[name].encoding["lazycube_source"]
        assert backend.reads == 0
    xr.testing.assert_identical(back, ds)
    xr.testing.assert_identical(back, _zarr_engine(store))
    # A dataset whose values were loaded pickles them.
    xr.testing.assert_identical(_roundtrip(ds.load()), back)


def test_engine_selection_pickles(store):
    ds = xr.open_dataset(store, engine="lazycube")
    want = _zarr_engine(store)
    picks = [
        lambda d: d.isel(time=slice(2, 9, 3), lon=slice(1, None)),
        lambda d: d.isel(time=4, lat=[0, 2, 5]),
        lambda d: d.sel(lat=slice(49.0, 46.0), time="2020-01-02")[["t2m"]],
        lambda d: d["t2m"].isel(lon=-1),
    ]
    for pick in picks:
        selected = pick(ds)
        back = _roundtrip(selected)
        xr.testing.assert_identical(back, selected)
        xr.testing.assert_identical(back.load(), pick(want).load())


def test_engine_dataset_pickles_with_dask_chunks(store):
    ds = xr.open_dataset(store, engine="lazycube", chunks={"time": 4})
    back = _roundtrip(ds)
    assert back["t2m"].chunks == ds["t2m"].chunks
    xr.testing.assert_identical(back.compute(), _zarr_engine(store))


def test_engine_undecoded_pickles(store):
    ds = xr.open_dataset(store, engine="lazycube", decode_cf=False)
    back = _roundtrip(ds)
    xr.testing.assert_identical(back, ds)
    xr.testing.assert_identical(back.load(), ds.load())
    assert back["count"].dtype == np.int16 and back["land"].dtype == np.int8


def test_unpickling_opens_each_source_once_per_process(store):
    ds = xr.open_dataset(store, engine="lazycube")
    payload = pickle.dumps(ds)
    before = len(xarray_backend._REOPENED)
    one, two = pickle.loads(payload), pickle.loads(payload)
    cores = {id(_backend_of(v).dataset) for d in (one, two) for v in d.data_vars.values()}
    assert len(cores) == 1  # every variable of both copies reads one reopened _core.Dataset
    assert len(xarray_backend._REOPENED) <= before + 1


def test_native_dataset_and_variable_pickle(store):
    native = lazycube.open_dataset(store)
    back = _roundtrip(native)
    assert isinstance(back, lazycube.Dataset)
    assert back.source == native.source
    xr.testing.assert_identical(back.to_xarray(), native.to_xarray())
    xr.testing.assert_identical(back.to_xarray().load(), _zarr_engine(store))

    narrowed = native.isel(time=slice(3, 10)).sel(lat=slice(49.0, 46.0))
    back = _roundtrip(narrowed)
    xr.testing.assert_identical(back.to_xarray(), narrowed.to_xarray())
    assert dict(back.sizes) == dict(narrowed.sizes)

    var = native["t2m"].isel(time=slice(1, 5), lon=2)
    var_back = _roundtrip(var)
    assert isinstance(var_back, lazycube.Variable)
    assert var_back.dims == var.dims and var_back.shape == var.shape
    np.testing.assert_array_equal(var_back.values, var.values)
    np.testing.assert_array_equal(var_back.values,
                                  _zarr_engine(store)["t2m"].isel(time=slice(1, 5), lon=2).values)


def test_native_to_xarray_pickles(store):
    xds = lazycube.open_dataset(store).isel(lat=slice(1, 4)).to_xarray()
    back = _roundtrip(xds)
    xr.testing.assert_identical(back, xds)
    xr.testing.assert_identical(back.load(), _zarr_engine(store).isel(lat=slice(1, 4)).load())


def test_backend_array_without_source_is_a_clear_type_error(store):
    # Built around a bare _core.Dataset: its origin is unknown, nothing can reopen it.
    xds = to_xarray(lazycube.open_dataset(store)._core)
    with pytest.raises(TypeError, match=r"cannot pickle the lazycube backend array of variable "
                                        r"'\w+'.*unknown origin.*engine='lazycube'"):
        pickle.dumps(xds)
    with pytest.raises(TypeError, match="unknown origin"):
        pickle.dumps(lazycube.Dataset(lazycube.open_dataset(store)._core))


# ---- Dask distributed: worker processes reopen the source ---------------------------------

@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                           host="127.0.0.1", dashboard_address=None,
                                           silence_logs=50)
    try:
        with distributed.Client(cluster) as c:
            yield c
    finally:
        cluster.close()


def test_reduction_on_dask_distributed_workers(store, client):
    chunks = {"time": 4}
    got = xr.open_dataset(store, engine="lazycube", chunks=chunks)
    want = _zarr_engine(store, chunks=chunks)
    assert got["t2m"].chunks == want["t2m"].chunks

    reductions = [
        lambda d: d["t2m"].mean("time"),
        lambda d: d["t2m"].sum(),
        lambda d: d["count"].sum(["lat", "lon"]),
        lambda d: d.isel(time=slice(1, 11)).mean("lon"),
    ]
    for reduce in reductions:
        futures = client.compute([reduce(got), reduce(want)])
        mine, theirs = client.gather(futures)
        xr.testing.assert_identical(mine, theirs)

    # The work ran in the worker processes, which reopened the store from its source.
    opened = client.run(lambda: [s.url for s, _ in
                                 __import__("lazycube.xarray_backend").xarray_backend._REOPENED])
    assert any(store in urls for urls in opened.values()), opened
