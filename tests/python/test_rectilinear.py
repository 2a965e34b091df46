"""Rectilinear chunk grids (issue 34): a store xarray writes with regular chunks, converted by
lazycube.convert / `lazycube convert --chunks time=[...]` into Zarr v3 with the zarr-extensions
`rectilinear` grid (plain and with rectilinear shards), read back through lazycube.open_dataset,
xarray's engine (values, encoding, dask chunks on the real boundaries), the chunk shuffle (one
chunk's windows together, on the real boundaries) and the torch dataset, value for value against
the source as xarray's zarr engine reads it."""
import json
import os

import numpy as np
import pytest
import xarray as xr

from conftest import CliError, import_lazycube, run_cli

lazycube = import_lazycube()

EDGES = [24, 24, 48, 12, 12]  # along time (120 steps)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("rect") / "src.zarr"
    rng = np.random.default_rng(34)
    shape = (120, 10, 12)
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), rng.standard_normal(shape).astype("float32")),
         "sp": (("time", "lat", "lon"), rng.integers(0, 1000, shape).astype("int32"))},
        coords={"time": np.arange(120, dtype="int64"), "lat": np.arange(10.0), "lon": np.arange(12.0)})
    ds.to_zarr(path, encoding={v: {"chunks": (24, 10, 12)} for v in ("t2m", "sp")}, consolidated=True)
    return str(path)


@pytest.fixture(scope="module")
def rect(source, tmp_path_factory):
    dst = str(tmp_path_factory.mktemp("rect") / "rect.zarr")
    lazycube.convert(source, dst, chunks={"time": EDGES}, variables=["t2m", "sp"])
    return dst


def _grid(store, name):
    with open(os.path.join(store, name, "zarr.json")) as f:
        return json.load(f)["chunk_grid"]


def _expect_same_values(store, source):
    expected = xr.open_dataset(source, engine="zarr")
    got = xr.open_dataset(store, engine="lazycube")
    for name in ("t2m", "sp"):
        assert got[name].dtype == expected[name].dtype
        np.testing.assert_array_equal(got[name].values, expected[name].values)
        np.testing.assert_array_equal(np.asarray(lazycube.open_dataset(store)[name].read()), expected[name].values)
        # Strided and reversed selections cross the irregular boundaries.
        np.testing.assert_array_equal(got[name].isel(time=slice(None, None, -7)).values,
                                      expected[name].isel(time=slice(None, None, -7)).values)


def test_convert_writes_the_registrys_grid_and_reads_back(rect, source):
    grid = _grid(rect, "t2m")
    assert grid == {"name": "rectilinear",
                    "configuration": {"kind": "inline", "chunk_shapes": [[[24, 2], 48, [12, 2]], 10, 12]}}
    _expect_same_values(rect, source)
    # The last chunk is stored at its own length: 12 steps, not padded to 48.
    ds = xr.open_dataset(rect, engine="lazycube")
    assert ds["t2m"].encoding["chunks"] == (tuple(EDGES), 10, 12)
    assert ds["t2m"].encoding["preferred_chunks"] == {"time": tuple(EDGES), "lat": 10, "lon": 12}
    dask = pytest.importorskip("dask")  # noqa: F841
    chunked = xr.open_dataset(rect, engine="lazycube", chunks={})
    assert chunked["t2m"].chunks[0] == tuple(EDGES)
    np.testing.assert_array_equal(chunked["t2m"].values, ds["t2m"].values)


def test_converting_a_rectilinear_store_keeps_its_boundaries(rect, source, tmp_path):
    again = str(tmp_path / "again.zarr")
    lazycube.convert(rect, again)
    assert _grid(again, "sp") == _grid(rect, "sp")
    _expect_same_values(again, source)
    # Zarr v2 has no rectilinear grid: the regular chunk is the largest, and the values the same.
    v2 = str(tmp_path / "v2.zarr")
    lazycube.convert(rect, v2, format=2)
    np.testing.assert_array_equal(xr.open_dataset(v2, engine="zarr")["t2m"].values,
                                  xr.open_dataset(source, engine="zarr")["t2m"].values)
    with pytest.raises(lazycube.UsageError, match="Zarr v3"):
        lazycube.convert(source, str(tmp_path / "bad.zarr"), chunks={"time": EDGES}, format=2)
    with pytest.raises(lazycube.UsageError, match="sum to 100, less than its 120"):
        lazycube.convert(source, str(tmp_path / "short.zarr"), chunks={"time": [50, 50]})
    with pytest.raises(TypeError, match="list of ints"):
        lazycube.convert(source, str(tmp_path / "bad2.zarr"), chunks={"time": [24, "x"]})


def test_cli_convert_chunks_and_rectilinear_shards(lazycube_cli, source, tmp_path):
    plain = tmp_path / "cli.zarr"
    run_cli(lazycube_cli, "convert", source, plain, "--chunks", "time=[24,24,48,12,12],lat=5")
    assert _grid(str(plain), "t2m")["configuration"]["chunk_shapes"] == [[[24, 2], 48, [12, 2]], 5, 12]
    _expect_same_values(str(plain), source)
    info = json.loads(run_cli(lazycube_cli, "info", plain, "--json").stdout)
    assert info["variables"]["t2m"]["chunks"] == [EDGES, 5, 12]
    sharded = tmp_path / "sharded.zarr"
    run_cli(lazycube_cli, "convert", source, sharded, "--chunks", "time=12", "--shards", "time=[24,48,36,12]")
    doc = json.load(open(sharded / "t2m" / "zarr.json"))
    assert doc["chunk_grid"]["configuration"]["chunk_shapes"] == [[24, 48, 36, 12], 10, 12]
    assert doc["codecs"][0]["name"] == "sharding_indexed"
    assert doc["codecs"][0]["configuration"]["chunk_shape"] == [12, 10, 12]
    _expect_same_values(str(sharded), source)
    with pytest.raises(CliError, match="not a whole multiple"):
        run_cli(lazycube_cli, "convert", source, tmp_path / "odd.zarr", "--chunks", "time=12",
                "--shards", "time=[20,100]")
    with pytest.raises(CliError, match=r"DIM=\[N,N"):
        run_cli(lazycube_cli, "convert", source, tmp_path / "bad.zarr", "--chunks", "time=[24,24")


def test_chunk_shuffle_keeps_each_real_chunk_together(rect):
    gen = lazycube.BatchGenerator(lazycube.open_dataset(rect), {"time": 1, "lat": 10, "lon": 12}, batch_size=5,
                                  shuffle="chunk", seed=3, variables=["t2m"])
    order = [int(w) for b in gen for w in b.window_ids]
    assert sorted(order) == list(range(120))
    bounds = np.cumsum([0] + EDGES)
    chunk_of = [int(np.searchsorted(bounds, t, side="right") - 1) for t in order]
    runs = [chunk_of[0]]
    for c in chunk_of[1:]:
        if c != runs[-1]:
            runs.append(c)
    assert sorted(runs) == list(range(len(EDGES)))  # each chunk's windows in one run
    assert runs != list(range(len(EDGES)))  # and the chunks shuffled (seed 3)


def test_torch_dataset_reads_the_rectilinear_store(rect, source):
    pytest.importorskip("torch")
    import lazycube.torch as lctorch

    dims = {"time": 6, "lat": 10, "lon": 12}
    data = lctorch.BatchDataset(rect, input_dims=dims, batch_size=4, variables=["t2m"], shuffle="chunk")
    expected = xr.open_dataset(source, engine="zarr")["t2m"].values
    want = sorted(expected[t:t + 6].tobytes() for t in range(0, 120, 6))
    got = []
    for x in data:  # (sample, channel, time, lat, lon)
        arr = x.numpy()
        got.extend(arr[i].reshape(6, 10, 12).tobytes() for i in range(arr.shape[0]))
    assert sorted(got) == want
