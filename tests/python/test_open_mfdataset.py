"""Several stores as one dataset: lazycube.open_mfdataset and lazycube.merge.

One dataset is split in three along time (10/10/10 steps, written with time chunks of 4, so
chunk boundaries do not fall on the file boundaries) and read back as one. The references are
the unsplit dataset and xarray's own ``xr.open_mfdataset(paths, combine="nested",
concat_dim="time")``; xbatcher is not installed, so the reference windows are cut with xarray
(``RefBatcher`` of test_xbatcher_compat.py, the same re-derivation of xbatcher 0.4.0).
"""
import json
import os
import pickle
import sys
import warnings

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")
lazycube = pytest.importorskip("lazycube")
from conftest import REPO, run_cli  # noqa: E402
from lazycube.xarray_backend import LazycubeBackendEntrypoint  # noqa: E402
from test_xbatcher_compat import RefBatcher  # noqa: E402

sys.path.insert(0, str(REPO / "tests" / "servers"))
import moto_server  # noqa: E402

ENGINE = LazycubeBackendEntrypoint

BOUNDS = [(0, 10), (10, 20), (20, 30)]


def _whole():
    rng = np.random.default_rng(4)
    time = np.datetime64("2021-01-01T00") + np.arange(30) * np.timedelta64(6, "h")
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), (rng.random((30, 6, 8)) * 40 + 250).astype("float32"),
                 {"units": "K", "long_name": "2 metre temperature"}),
         "sp": (("time", "lat", "lon"), rng.random((30, 6, 8)) * 1000 + 99000, {"units": "Pa"})},
        coords={"time": time, "lat": ("lat", np.linspace(60, 50, 6), {"units": "degrees_north"}),
                "lon": ("lon", np.arange(8) * 1.5, {"units": "degrees_east"})},
        attrs={"title": "split sample"})
    ds.t2m.values[3, 2, 2] = np.nan
    return ds


# sp is packed to int16 (scale/offset): each part decodes with the same plan
ENCODING = {"sp": {"dtype": "int16", "scale_factor": 0.1, "add_offset": 99500.0, "_FillValue": -32767}}


def _to_zarr(ds, path, encoding=ENCODING):
    enc = {k: dict(v, chunks=(4,) + ds[k].shape[1:]) for k, v in encoding.items()}
    if "t2m" in ds:
        enc["t2m"] = {"chunks": (4, 6, 8)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, mode="w", encoding=enc)
    return str(path)


@pytest.fixture(scope="module")
def whole():
    return _whole()


@pytest.fixture(scope="module")
def yearly(tmp_path_factory, whole):
    root = tmp_path_factory.mktemp("mfds")
    return [_to_zarr(whole.isel(time=slice(a, b)), root / ("part%d.zarr" % i))
            for i, (a, b) in enumerate(BOUNDS)]


def _xr_mf(paths, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_mfdataset(paths, combine="nested", concat_dim="time", **kw).load()


def _xr_mf_native_rule(paths):
    """xr.open_mfdataset through lazycube's engine with packed variables decoded by lazycube's
    own rule (xarray >= 2024.02's, which lazycube.open_dataset follows): the engine follows the
    running xarray's rule (xarray_backend._scale_dtype_rule), 2023.01's here."""
    from lazycube import xarray_backend

    rule = xarray_backend._scale_dtype_rule
    xarray_backend._scale_dtype_rule = lambda: "attributes"
    try:
        return _xr_mf(paths, engine=ENGINE)
    finally:
        xarray_backend._scale_dtype_rule = rule


def _assert_same(ds, ref):
    """lazycube.Dataset `ds` holds the values, coordinates and attributes of xarray's `ref`
    (packed values to float32 rounding: xarray's zarr engine decodes int16 * float64 scale to
    float32, lazycube to float64 -- its CF dtype rule, the same for one store)."""
    assert ds.sizes == dict(ref.sizes)
    assert set(ds.data_vars) == set(ref.data_vars)
    assert set(ds.coords) == set(ref.coords)
    for name in list(ref.data_vars) + list(ref.coords):
        if "scale_factor" not in ref[name].encoding:
            assert ds[name].dtype == ref[name].dtype, name
        if ref[name].dtype.kind == "f":
            np.testing.assert_allclose(ds[name].values, ref[name].values, rtol=1e-7, err_msg=name)
        else:
            np.testing.assert_array_equal(ds[name].values, ref[name].values, err_msg=name)
        assert ds[name].dims == ref[name].dims
        assert ds[name].attrs == ref[name].attrs, name
    assert ds.attrs == ref.attrs


def test_open_mfdataset_equals_xarray_and_the_unsplit_dataset(yearly, whole):
    ds = lazycube.open_mfdataset(yearly, concat_dim="time")
    assert isinstance(ds, lazycube.Dataset)
    _assert_same(ds, _xr_mf(yearly, engine="zarr"))
    for name in ("t2m", "time", "lat", "lon"):
        np.testing.assert_array_equal(ds[name].values, whole[name].values, err_msg=name)
    # exactly what lazycube reads from each file
    np.testing.assert_array_equal(
        ds["sp"].values, np.concatenate([lazycube.open_dataset(p)["sp"].values for p in yearly]))
    # the xarray view of it, and a glob of the same files
    # lazycube's xarray view equals xarray's open_mfdataset through lazycube's engine file by file
    xr.testing.assert_identical(ds.to_xarray().load(), _xr_mf_native_rule(yearly))
    # the engine itself, under the running xarray's rule, is xarray's zarr engine
    xr.testing.assert_identical(_xr_mf(yearly, engine=ENGINE), _xr_mf(yearly, engine="zarr"))
    glob = lazycube.open_mfdataset(os.path.join(os.path.dirname(yearly[0]), "part*.zarr"))
    np.testing.assert_array_equal(glob["sp"].values, ds["sp"].values)


def test_isel_and_sel_across_boundaries(yearly, whole):
    ds = lazycube.open_mfdataset(yearly, concat_dim="time")
    for sel in (slice(7, 23), slice(2, 29, 3), slice(25, 4, -2), 19):
        for name in ("t2m", "time"):
            np.testing.assert_array_equal(ds.isel(time=sel, lat=slice(1, 5))[name].values,
                                          whole.isel(time=sel, lat=slice(1, 5))[name].values)
    labels = slice("2021-01-03T06:00", "2021-01-06T00:00")
    got = ds.sel(time=labels)
    assert got.sizes["time"] == whole.sel(time=labels).sizes["time"] == 12
    np.testing.assert_array_equal(got["t2m"].values, whole.sel(time=labels)["t2m"].values)


def test_mixed_formats_netcdf_and_zarr(tmp_path, yearly, whole):
    pytest.importorskip("netCDF4")
    nc = str(tmp_path / "part1.nc")
    part = whole.isel(time=slice(10, 20))
    part.to_netcdf(nc, engine="netcdf4", encoding=dict(ENCODING, t2m={"chunksizes": (4, 6, 8)}))
    paths = [yearly[0], nc, yearly[2]]
    ds = lazycube.open_mfdataset(paths, concat_dim="time")
    for name in ("t2m", "time", "lat"):
        np.testing.assert_array_equal(ds[name].values, whole[name].values, err_msg=name)
    np.testing.assert_array_equal(ds["sp"].values,
                                  lazycube.open_mfdataset(yearly, concat_dim="time")["sp"].values)


def test_icechunk_part_next_to_a_zarr_store(shared_data, lazycube_cli, tmp_path):
    """An Icechunk snapshot (opened with its own snapshot/group) concatenated with a Zarr copy."""
    repo = shared_data / "icechunk-fixtures" / "test-repo-v2"
    if not repo.exists():
        pytest.skip("no Icechunk fixture at %s" % repo)
    log = json.loads(run_cli(lazycube_cli, "log", str(repo), "--json").stdout)
    snapshot = next(e["id"] for e in log if e["message"] == "fill data")
    ice = lazycube.open_dataset(str(repo), snapshot=snapshot, group="group1/big_chunks")
    copy = str(tmp_path / "copy.zarr")
    lazycube.convert(str(repo), copy, snapshot=snapshot, group="group1/big_chunks")
    dim = ice["big_chunks"].dims[0]
    both = lazycube.open_mfdataset([ice, copy], concat_dim=dim)
    want = ice["big_chunks"].values
    np.testing.assert_array_equal(both["big_chunks"].values, np.concatenate([want, want], axis=0))
    again = pickle.loads(pickle.dumps(both))  # the snapshot travels with its part
    np.testing.assert_array_equal(again["big_chunks"].values, both["big_chunks"].values)


def test_mismatched_coordinates_name_the_coordinate_and_the_file(tmp_path, yearly, whole):
    shifted = whole.isel(time=slice(10, 20)).assign_coords(lat=whole.lat.values + 0.25)
    bad = _to_zarr(shifted, tmp_path / "shifted.zarr")
    with pytest.raises(lazycube.MetadataError, match=r"'lat'.*shifted\.zarr"):
        lazycube.open_mfdataset([yearly[0], bad, yearly[2]], concat_dim="time")
    with pytest.raises(lazycube.MetadataError, match=r"'level'.*part0\.zarr"):
        lazycube.open_mfdataset(yearly, concat_dim="level")


def test_differing_encoding_names_the_variable_and_the_key(tmp_path, yearly, whole):
    enc = {"sp": dict(ENCODING["sp"], scale_factor=0.2)}
    bad = _to_zarr(whole.isel(time=slice(10, 20)), tmp_path / "rescaled.zarr", enc)
    for decode_cf in (True, False):
        with pytest.raises(lazycube.MetadataError, match=r"'sp'.*rescaled\.zarr.*scale_factor"):
            lazycube.open_mfdataset([yearly[0], bad], concat_dim="time", decode_cf=decode_cf)


def test_time_units_per_file_decode_and_raw_reads_refuse_them(yearly, whole):
    # xarray wrote each part's time as "hours since <its first time>"
    units = [lazycube.open_dataset(p, decode_cf=False)["time"].attrs["units"] for p in yearly]
    assert len(set(units)) == 3
    np.testing.assert_array_equal(lazycube.open_mfdataset(yearly)["time"].values, whole.time.values)
    with pytest.raises(lazycube.MetadataError, match=r"'time'.*units"):
        lazycube.open_mfdataset(yearly, decode_cf=False)


def test_merge_single_level_and_static_fields(tmp_path, yearly, whole):
    static = xr.Dataset({"lsm": (("lat", "lon"), (np.arange(48).reshape(6, 8) % 3 == 0).astype("float32"))},
                        coords={"lat": whole.lat, "lon": whole.lon})
    static_path = _to_zarr(static, tmp_path / "static.zarr", {})
    merged = lazycube.merge([lazycube.open_mfdataset(yearly, concat_dim="time"),
                             lazycube.open_dataset(static_path)])
    _assert_same(merged, xr.merge([_xr_mf(yearly, engine="zarr"), static]))
    # it reopens itself from its parts
    again = pickle.loads(pickle.dumps(merged))
    np.testing.assert_array_equal(again.isel(time=slice(8, 12))["lsm"].values, static.lsm.values)
    np.testing.assert_array_equal(again.isel(time=slice(8, 12))["t2m"].values, whole.t2m.values[8:12])
    # a conflicting variable: another grid under the same name
    other = _to_zarr(static.assign(lsm=static.lsm + 1), tmp_path / "other_static.zarr", {})
    with pytest.raises(lazycube.MetadataError, match=r"'lsm'.*other_static\.zarr"):
        lazycube.merge([lazycube.open_dataset(static_path), lazycube.open_dataset(other)])


def test_xbatcher_mode_windows_equal_the_xarray_reference(yearly):
    ref_ds = _xr_mf_native_rule(yearly)  # xr.open_mfdataset + xbatcher's windows
    mf = lazycube.open_mfdataset(yearly, concat_dim="time")
    configs = [dict(input_dims={"time": 4, "lat": 3}, input_overlap={"time": 1}),
               dict(input_dims={"time": 4, "lon": 4}, batch_dims={"time": 8}, concat_input_dims=True)]
    for kw, ds in [(kw, ds) for kw in configs for ds in (mf.to_xarray(), mf)]:
        ref = RefBatcher(ref_ds, **kw)  # (ds: the xarray view, and the lazycube.Dataset itself)
        gen = lazycube.BatchGenerator(ds, **kw)
        assert gen.reader == "lazycube"
        assert len(gen) == len(ref)
        spanning = 0
        for i in range(len(ref)):
            want = ref[i]
            t = np.ravel(want["time"].values)
            spanning += any(t[0] < ref_ds.time.values[b] <= t[-1] for b in (10, 20))
            xr.testing.assert_identical(gen[i], want)
        assert spanning > 0


def test_xr_open_mfdataset_with_the_lazycube_engine_reads_through_the_core(yearly):
    """xr.open_mfdataset(paths, engine="lazycube") given to BatchGenerator / torch datasets is
    read by lazycube's core as one multi-store dataset (stacked batches need it)."""
    ref = _xr_mf(yearly, engine=ENGINE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xds = xr.open_mfdataset(yearly, engine=ENGINE, combine="nested", concat_dim="time")
    gen = lazycube.BatchGenerator(xds, {"time": 5, "lat": 6, "lon": 8}, batch_size=2,
                                  variables=["t2m"])
    assert gen.reader == "lazycube"
    assert isinstance(gen.pipeline.source, lazycube.pipeline.MultiSource)
    again = pickle.loads(pickle.dumps(gen))  # as into a spawned worker: the parts reopen
    for batch in list(gen.batches()) + list(again.batches()):
        for k, w in enumerate(batch.windows):
            t0 = int(w[0][0] if isinstance(w[0], tuple) else w[0].start)
            np.testing.assert_array_equal(batch.x[k, 0], ref.t2m.values[t0:t0 + 5])


def test_stacked_windows_and_chunk_shuffle_read_each_chunk_once(yearly, whole):
    ds = lazycube.open_mfdataset(yearly, concat_dim="time")
    gen = lazycube.BatchGenerator(ds, {"time": 3, "lat": 6, "lon": 8}, {"time": 2}, batch_size=4,
                                  variables=["t2m", "sp"], shuffle="chunk", seed=2,
                                  cache_bytes=64 << 20)
    seen, spanning = [], 0
    for batch in gen.batches():
        x = batch.x
        for k, w in enumerate(batch.windows):
            t0 = int(w[0][0] if isinstance(w[0], tuple) else w[0].start)
            seen.append(t0)
            spanning += t0 < 10 < t0 + 3 or t0 < 20 < t0 + 3
            want = np.stack([ds[v].isel(time=slice(t0, t0 + 3)).values for v in ("t2m", "sp")])
            np.testing.assert_array_equal(x[k], want.astype(x.dtype))
            if k == 0 and t0 == 8:  # a window over the first boundary, against the files
                np.testing.assert_array_equal(want[0], whole.t2m.values[8:11])
    assert sorted(seen) == list(range(28))
    assert spanning == 4
    stats = gen.cache_stats()
    assert stats["misses"] > 0
    assert stats["read_amplification"] == 1.0


def test_torch_batch_dataset_in_spawned_workers(yearly):
    """The torch BatchDataset over a multi-store dataset pickles into spawned DataLoader
    workers, which reopen the parts: every window once, values as read in this process."""
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader
    lctorch = pytest.importorskip("lazycube.torch")
    ds = lazycube.open_mfdataset(yearly, concat_dim="time")
    dims = {"time": 4, "lat": 6, "lon": 8}
    data = lctorch.BatchDataset(ds, input_dims=dims, input_overlap={"time": 3}, batch_size=5,
                                variables=["t2m"], shuffle="chunk", seed=7,
                                return_window_ids=True, num_workers=2)
    loader = DataLoader(data, batch_size=None, num_workers=2, multiprocessing_context="spawn")
    t2m = ds["t2m"].values
    seen = []
    for x, ids in loader:
        assert x.dtype == torch.float32
        for k, wid in enumerate(ids.tolist()):
            np.testing.assert_array_equal(x[k, 0].numpy(), t2m[wid:wid + 4])
            seen.append(wid)
    assert sorted(seen) == list(range(27))


def test_torch_packed_channels_over_stores_with_per_file_time_units(yearly):
    """sp is packed: BatchDataset would send it undecoded, but these stores only combine decoded
    (per-file time units), so packed=None falls back to decoded batches and packed=True says why."""
    pytest.importorskip("torch")
    lctorch = pytest.importorskip("lazycube.torch")
    ds = lazycube.open_mfdataset(yearly, concat_dim="time")
    dims = {"time": 4, "lat": 6, "lon": 8}
    data = lctorch.BatchDataset(ds, input_dims=dims, batch_size=3, variables=["sp"],
                                return_window_ids=True)
    assert data.packed_dtype is None
    sp = ds["sp"].values
    for x, ids in data:
        for k, wid in enumerate(ids.tolist()):
            # (decoded straight to float32 in the batch: float32 rounding of the float64 values)
            np.testing.assert_allclose(x[k, 0].numpy(), sp[wid * 4:wid * 4 + 4], rtol=1e-7)
    with pytest.raises(ValueError, match=r"packed=True: .*'time'.*units"):
        lctorch.BatchDataset(ds, input_dims=dims, batch_size=3, variables=["sp"], packed=True)


def test_parts_on_s3_with_credentials(yearly, no_aws_environment):
    """The parts on S3 (moto, SigV4 checked): storage options reach every part, in this process
    and in a pickled copy (a worker), and never show in repr."""
    reason = moto_server.unavailable_reason()
    if reason:
        pytest.skip(reason)
    root = os.path.dirname(yearly[0])
    with moto_server.MotoServer("mfds", {root: "years"}) as s3:
        s3.set_auth(True)
        options = {"endpoint_url": s3.endpoint, "key": s3.key_id, "secret": s3.secret,
                   "region_name": "us-east-1"}
        urls = ["s3://mfds/years/" + os.path.basename(p) for p in yearly]
        ds = lazycube.open_mfdataset(urls, concat_dim="time", storage_options=options)
        local = lazycube.open_mfdataset(yearly, concat_dim="time")
        np.testing.assert_array_equal(ds["t2m"].values, local["t2m"].values)
        assert s3.secret not in repr(ds.source)
        again = pickle.loads(pickle.dumps(ds))
        np.testing.assert_array_equal(again.isel(time=slice(8, 22))["sp"].values,
                                      local.isel(time=slice(8, 22))["sp"].values)
