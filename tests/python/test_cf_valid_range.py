"""Opt-in CF valid_range / valid_min / valid_max masking (``mask_valid_range=True``), checked
against netCDF4-python's own auto-masked read of a NetCDF-4 file it wrote: through
lazycube.open_dataset (GDAL engine), kerchunk references to that file (`lazycube refs`), xarray's
engine="lazycube", a pickled dataset (its Source keeps the option) and `lazycube read
--mask-valid-range`. Without the option nothing is masked and the attributes stay visible.

netCDF4-python also derives a valid bound from a _FillValue when a bound is missing; lazycube
only uses explicit attributes, so every variable here either has no _FillValue or both bounds."""

import json
import pickle
import subprocess

import numpy as np
import pytest

from conftest import import_lazycube, run_cli

lazycube = import_lazycube()
netCDF4 = pytest.importorskip("netCDF4", reason="netCDF4-python (python3-netcdf4) is needed")

SHAPE = (4, 10)
FILL = np.int16(-32000)


def stored(k):
    return ((np.arange(np.prod(SHAPE)) * (7 + k)) % 301 - 150).astype("i2").reshape(SHAPE)


@pytest.fixture(scope="module")
def nc(tmp_path_factory):
    path = tmp_path_factory.mktemp("vr") / "valid_range.nc"
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("time", SHAPE[0])
        ds.createDimension("x", SHAPE[1])
        # packed, both bounds and a _FillValue
        pk = ds.createVariable("pk", "i2", ("time", "x"), chunksizes=(2, 5), fill_value=FILL)
        pk.scale_factor = np.float64(0.5)
        pk.add_offset = np.float64(10.0)
        pk.valid_min = np.int16(-100)
        pk.valid_max = np.int16(100)
        # valid_range, unscaled
        vr = ds.createVariable("vr", "i2", ("time", "x"), chunksizes=(2, 5))
        vr.valid_range = np.array([0, 50], "i2")
        # float32 with valid_max only
        f = ds.createVariable("f", "f4", ("time", "x"))
        f.valid_max = np.float32(1.5)
        f.units = "m"
        for v in (pk, vr, f):
            v.set_auto_maskandscale(False)
        packed = stored(0)
        packed[1, 3] = FILL
        pk[:] = packed
        vr[:] = stored(1)
        f[:] = (stored(2) / 50.0).astype("f4")
    return path


def netcdf4_masked(path, name):
    """netCDF4-python's auto mask-and-scale read, masked elements as NaN (float64)."""
    with netCDF4.Dataset(path) as ds:
        v = ds[name][:]
        return np.ma.filled(v.astype("f8"), np.nan)


@pytest.fixture(scope="module")
def refs(nc, lazycube_cli):
    out = nc.with_suffix(".json")  # next to its target (the allowed prefix of a reference set)
    subprocess.run([str(lazycube_cli), "refs", str(nc), "-o", str(out)], check=True, capture_output=True)
    return out


@pytest.mark.parametrize("name", ["pk", "vr", "f"])
def test_masked_read_equals_netcdf4_python(nc, refs, name):
    want = netcdf4_masked(nc, name)
    assert np.isnan(want).any() and not np.isnan(want).all()  # the file exercises the rule
    for url in (nc, refs):
        ds = lazycube.open_dataset(str(url), mask_valid_range=True)
        got = ds[name].read()
        np.testing.assert_array_equal(got.astype("f8"), want, err_msg=str(url))
        part = ds[name].isel(x=slice(9, None, -2)).read()
        np.testing.assert_array_equal(part.astype("f8"), want[:, ::-2], err_msg=str(url))
        for key in ("valid_range", "valid_min", "valid_max"):
            assert key not in ds[name].attrs
        assert {"valid_range", "valid_min", "valid_max"} & set(ds[name].encoding)


@pytest.mark.parametrize("name", ["pk", "vr", "f"])
def test_without_the_option_nothing_is_masked(nc, name):
    ds = lazycube.open_dataset(str(nc))
    got = ds[name].read().astype("f8")
    with netCDF4.Dataset(nc) as ref:
        v = ref[name]
        v.set_auto_mask(False)
        want = np.asarray(v[:], dtype="f8")
    if name == "pk":
        want[1, 3] = np.nan  # _FillValue still masks
    np.testing.assert_array_equal(got, want)
    assert {"valid_range", "valid_min", "valid_max"} & set(ds[name].attrs)


def test_xarray_engine(nc):
    xr = pytest.importorskip("xarray")
    got = xr.open_dataset(str(nc), engine="lazycube", mask_valid_range=True)
    for name in ("pk", "vr", "f"):
        np.testing.assert_array_equal(got[name].values.astype("f8"), netcdf4_masked(nc, name), err_msg=name)
    assert got["vr"].encoding["valid_range"] == [0, 50]
    assert "valid_range" not in got["vr"].attrs
    plain = xr.open_dataset(str(nc), engine="lazycube")
    assert list(plain["vr"].attrs["valid_range"]) == [0, 50]
    assert not np.isnan(plain["f"].values).any()


def test_pickled_dataset_keeps_the_option(nc):
    ds = lazycube.open_dataset(str(nc), mask_valid_range=True)
    again = pickle.loads(pickle.dumps(ds))
    np.testing.assert_array_equal(again["vr"].read().astype("f8"), netcdf4_masked(nc, "vr"))
    source = pickle.loads(pickle.dumps(ds.source))
    assert source.mask_valid_range is True
    assert "mask_valid_range=True" in repr(source)
    from lazycube.pipeline import OPEN_ARGS, resolve_source
    assert "mask_valid_range" in OPEN_ARGS
    src, _core_ds, _xds = resolve_source(str(nc), mask_valid_range=True)
    assert src.mask_valid_range is True


def test_cli_read_and_info(nc, lazycube_cli, tmp_path):
    out = tmp_path / "pk.npy"
    run_cli(lazycube_cli, "read", nc, "pk", "--mask-valid-range", "-o", out)
    np.testing.assert_array_equal(np.load(out).astype("f8"), netcdf4_masked(nc, "pk"))
    run_cli(lazycube_cli, "read", nc, "pk", "-o", out)
    assert np.isnan(np.load(out)).sum() == 1  # the _FillValue only
    info = json.loads(run_cli(lazycube_cli, "info", nc, "--json", "--mask-valid-range").stdout)
    plain = json.loads(run_cli(lazycube_cli, "info", nc, "--json").stdout)
    assert "valid_range" in json.dumps(plain) and "valid_range" not in json.dumps(info)


def test_cli_bench_opens_with_the_option(nc, lazycube_cli):
    def x_dtype(*flags):
        out = run_cli(lazycube_cli, "bench", nc, "--variables", "vr", "--input-dims", "x=5", "--batch-size", "2",
                      "--max-batches", "1", "--json", "--no-progress", *flags).stdout
        return json.loads(out)["x_dtype"]
    # vr (int16, valid_range, nothing else): promoted to float32 only when it may be masked.
    assert x_dtype() == "<i2"
    assert x_dtype("--mask-valid-range") == "<f4"


def test_batch_generator_from_a_url_masks_and_pickles_the_option(nc):
    gen = lazycube.BatchGenerator(str(nc), {"x": 5}, batch_size=2, variables=["vr"], mask_valid_range=True)
    clone = pickle.loads(pickle.dumps(gen))  # before iterating: pickling keeps the position
    want = netcdf4_masked(nc, "vr")  # (time, x): windows along x, time taken whole
    x = next(iter(gen)).numpy()
    assert x.shape == (2, 1, 5, 4)  # (sample, channel, x, time)
    np.testing.assert_array_equal(x[0, 0].astype("f8"), want[:, 0:5].T)
    np.testing.assert_array_equal(x[1, 0].astype("f8"), want[:, 5:10].T)
    assert clone.pipeline.source.mask_valid_range is True
    np.testing.assert_array_equal(next(iter(clone)).numpy(), x)
    plain = next(iter(lazycube.BatchGenerator(str(nc), {"x": 5}, batch_size=2, variables=["vr"]))).numpy()
    assert plain.dtype == np.int16
