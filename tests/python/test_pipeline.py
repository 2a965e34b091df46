"""lazycube.pipeline: the Source a Dataset/Variable remembers (selections recorded by position,
replayed exactly in another process, decoded or not), secrets masked in repr, the rank/world
default, and pickling of lazycube Datasets and Variables. In-process only (the process models
are test_torch_process_matrix.py and test_torch_distributed.py)."""

import pickle

import numpy as np
import pytest

from conftest import DATA, import_lazycube

lazycube = import_lazycube()
from lazycube import pipeline  # noqa: E402

xr = pytest.importorskip("xarray")

V2 = str(DATA / "era5_sample_v2.zarr")


def test_selection_recorded_by_position_and_replayed():
    ds = lazycube.open_dataset(V2)
    narrowed = ds.isel(time=slice(2, 60)).sel(time=slice("2019-03-01T12:00", "2019-03-02T06:00"),
                                              latitude=slice(59, 50)).isel(longitude=7)
    source = narrowed.source
    assert source.url == V2 and len(source.selection) == 3
    assert all(isinstance(v, (int, slice)) for step in source.selection for v in step.values())
    again = pickle.loads(pickle.dumps(narrowed))
    assert again.sizes == narrowed.sizes == {"time": 19, "latitude": 37}
    np.testing.assert_array_equal(again["t2m"].values, narrowed["t2m"].values)
    with xr.open_zarr(V2) as ref:
        want = ref["t2m"].isel(time=slice(2, 60)).sel(
            time=slice("2019-03-01T12:00", "2019-03-02T06:00"), latitude=slice(59, 50)).isel(longitude=7)
        np.testing.assert_array_equal(again["t2m"].values, want.values)


def test_undecoded_reopen_keeps_a_label_selection():
    """sel by dates is replayed by position, so the raw (decode_cf=False) reopen of the same
    source -- what BatchDataset's packed mode does -- selects the same elements."""
    ds = lazycube.open_dataset(V2).sel(time=slice("2019-03-02", "2019-03-02T05:00"))
    raw = lazycube.Dataset(ds.source.replace(decode_cf=False).open())
    assert raw["msl"].dtype == np.int16 and raw.sizes == ds.sizes
    np.testing.assert_array_equal(raw["msl"].values, ds["msl"].read_raw())


def test_variable_remembers_its_source():
    var = lazycube.open_dataset(V2)["u10"].sel(time="2019-03-03T04:00").isel(latitude=slice(5, 9))
    assert var.source is not None
    again = pickle.loads(pickle.dumps(var))
    assert again.dims == var.dims == ("latitude", "longitude")
    np.testing.assert_array_equal(again.values, var.values)


def test_xarray_selection_becomes_the_source():
    from lazycube.xarray_backend import LazycubeBackendEntrypoint, source_of

    xds = xr.open_dataset(V2, engine=LazycubeBackendEntrypoint)
    _core, source = source_of(xds[["t2m", "v10"]].isel(time=slice(10, 20), longitude=slice(0, 30)))
    assert source.selection == ({"time": slice(10, 20, 1), "longitude": slice(0, 30, 1)},)
    assert source.variables == ("t2m", "v10")
    assert dict(source.open().dims) == {"time": 10, "latitude": 61, "longitude": 30}


def test_storage_options_mask_secrets():
    so = pipeline.StorageOptions({"key": "AKIAXXXX", "secret": "s3cr3t", "token": "T0KEN-VALUE",
                                  "sas_token": "sv=1", "endpoint_url": "http://127.0.0.1:1",
                                  "anon": False, "retries": 3})
    text = repr(pipeline.Source("s3://b/x.zarr", so)) + str(so)
    for secret in ("AKIAXXXX", "s3cr3t", "T0KEN-VALUE", "sv=1"):
        assert secret not in text
    assert "http://127.0.0.1:1" in text and "'anon': 'false'" in text and "'retries': '3'" in text
    assert pickle.loads(pickle.dumps(so))["secret"] == "s3cr3t"  # they travel
    assert so.core()["anon"] == "false"  # normalised once (_options.normalize_storage_options)
    signed = pipeline.Source("https://host/x.zarr?sv=2024&sig=abc%2Fdef")
    assert "sig=" not in repr(signed) and repr(signed).startswith("lazycube.pipeline.Source('https://host/x.zarr?***'")


def test_rank_world_default():
    # no process group here: explicit values win, else 0/1, else what the pickling process had
    assert pipeline.resolve_shard() == (0, 1)
    assert pipeline.resolve_shard(inherited=(1, 2)) == (1, 2)
    assert pipeline.resolve_shard(rank=1, world_size=3, inherited=(0, 2)) == (1, 3)
    assert pipeline.resolve_shard(world_size=2) == (0, 2)


def test_core_objects_without_origin_say_so():
    core = lazycube.open_dataset(V2)._core
    with pytest.raises(TypeError, match="unknown origin"):
        pickle.dumps(lazycube.Dataset(core))
    gen = lazycube.BatchGenerator(core, {"time": 4, "latitude": 16, "longitude": 16}, batch_size=4)
    with pytest.raises(TypeError, match="_core"):
        pickle.dumps(gen)


def test_open_errors_hide_a_signed_url_query(tmp_path):
    with pytest.raises(lazycube.Error) as info:
        lazycube.open_dataset(str(tmp_path / "missing.zarr") + "?sig=SIGNATURE-VALUE")
    assert "missing.zarr" in str(info.value) and "SIGNATURE-VALUE" not in str(info.value)


def test_open_arguments_with_an_open_dataset_are_refused():
    ds = lazycube.open_dataset(V2)
    with pytest.raises(ValueError, match="storage_options"):
        lazycube.BatchGenerator(ds, {"time": 4}, batch_size=2, storage_options={"anon": True})
