"""`lazycube read` / `lazycube info --json` against xarray.open_zarr on stores written by
xarray + zarr-python 2.13 (Debian's /usr/bin/python3)."""
import json
import os
import subprocess
import warnings

import numpy as np
import pandas as pd
import pytest

from conftest import redecode_packed

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")

CLI = os.environ.get("LAZYCUBE_CLI")
pytestmark = pytest.mark.skipif(
    not CLI or not os.path.exists(CLI),
    reason="LAZYCUBE_CLI is not set to the built lazycube executable")


def run(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    warnings.simplefilter("ignore")
    path = tmp_path_factory.mktemp("cli") / "cube.zarr"
    rng = np.random.default_rng(42)
    t = (rng.standard_normal((4, 5, 3)) * 10 + 280).astype("f4")
    t[0, 0, 0] = np.nan
    t[2, 3, 1] = np.nan
    ds = xr.Dataset(
        {
            "t2m": (("time", "lat", "lon"), t, {"units": "K", "long_name": "2 m temperature"}),
            "sp": (("time", "lat", "lon"), t * 300, {"units": "Pa"}),
            "small": (("lat",), np.array([0.5, 1.0, np.nan, 2.0, 2.5]), {"note": "scaled"}),
            "count": (("lat",), np.array([1, 2, -1, 4, 5], dtype="i4")),
            "station": (("lon",), np.array(["alpha", "b", "été"], dtype=object)),
        },
        coords={
            "lat": np.array([90.0, 60.0, 30.0, 0.0, -30.0]),
            "lon": np.array([0.0, 10.0, 20.0], dtype="f4"),
            "time": pd.date_range("2019-03-01", periods=4, freq="6H"),
        },
        attrs={"title": "cli test cube", "version": 2},
    )
    encoding = {
        "sp": {"dtype": "int16", "scale_factor": 1.0, "add_offset": 84000.0, "_FillValue": -32767},
        "small": {"dtype": "int16", "scale_factor": 0.5, "_FillValue": -1},
        "count": {"_FillValue": -1},
        "time": {"units": "hours since 1900-01-01", "dtype": "int64"},
        "t2m": {"chunks": (2, 5, 3)},
    }
    ds.to_zarr(path, mode="w", consolidated=True, encoding=encoding)
    return path


def expected(store):
    """xarray's zarr engine, packed variables in the dtype of their attributes (lazycube's policy,
    xarray >= 2024.02; conftest.redecode_packed)."""
    warnings.simplefilter("ignore")
    return redecode_packed(xr.open_zarr(store), xr.open_zarr(store, mask_and_scale=False))


def read_npy(tmp_path, *args):
    out = tmp_path / "out.npy"
    proc = run("read", *args, "-o", out)
    assert proc.returncode == 0, proc.stderr
    return np.load(out, allow_pickle=False)


@pytest.mark.parametrize("name", ["t2m", "sp", "small", "count", "lat", "lon", "time"])
def test_read_matches_open_zarr(store, tmp_path, name):
    want = expected(store)[name].values
    got = read_npy(tmp_path, store, name)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    if want.dtype.kind == "f":
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(got, want)  # NaNs compare equal here
    else:
        np.testing.assert_array_equal(got, want)


def test_strings_become_fixed_width_unicode(store, tmp_path):
    got = read_npy(tmp_path, store, "station")
    assert got.dtype == np.dtype("<U5")
    assert list(got) == ["alpha", "b", "été"]


@pytest.mark.parametrize("isel,xsel", [
    (["time=1"], {"time": 1}),
    (["lat=::-2"], {"lat": slice(None, None, -2)}),
    (["lat=1:4", "lon=-1"], {"lat": slice(1, 4), "lon": -1}),
    (["time=:2", "lat=3:"], {"time": slice(None, 2), "lat": slice(3, None)}),
    (["time=-1", "lat=-1:0:-1"], {"time": -1, "lat": slice(-1, 0, -1)}),
])
def test_isel_matches_xarray(store, tmp_path, isel, xsel):
    want = expected(store)["sp"].isel(xsel).values
    args = [store, "sp"]
    for item in isel:
        args += ["--isel", item]
    got = read_npy(tmp_path, *args)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_raw_keeps_stored_values(store, tmp_path):
    raw = zarr.open_group(str(store), mode="r")["sp"][:]
    got = read_npy(tmp_path, store, "sp", "--raw")
    assert got.dtype == np.dtype("<i2")
    np.testing.assert_array_equal(got, raw)
    t = read_npy(tmp_path, store, "time", "--raw")
    assert t.dtype == np.dtype("<i8")


def test_single_array_url(store, tmp_path):
    got = read_npy(tmp_path, store / "t2m", "--isel", "time=0")
    want = expected(store)["t2m"].isel(time=0).values
    np.testing.assert_array_equal(got, want)


def test_info_json_agrees_with_open_zarr(store):
    proc = run("info", store, "--json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    ds = expected(store)
    assert info["dims"] == dict(ds.dims)
    assert info["attrs"] == ds.attrs
    assert set(info["variables"]) == set(ds.variables)
    for name, var in ds.variables.items():
        got = info["variables"][name]
        assert got["dims"] == list(var.dims), name
        assert got["shape"] == list(var.shape), name
        if var.dtype.kind != "O":
            assert got["dtype"] == var.dtype.str, name
        assert got["attrs"] == json.loads(json.dumps(dict(var.attrs))), name
        assert got["chunks"] == list(var.encoding["chunks"]), name
        assert isinstance(got["codecs"], list)


def test_info_text_lists_sections(store):
    proc = run("info", store)
    assert proc.returncode == 0, proc.stderr
    for word in ["Dimensions:", "Coordinates:", "Data variables:", "Attributes:", "t2m", "title"]:
        assert word in proc.stdout


def test_unknown_variable_lists_available(store, tmp_path):
    proc = run("read", store, "nope", "-o", tmp_path / "x.npy")
    assert proc.returncode != 0
    assert proc.stderr.startswith("lazycube: ")
    assert "nope" in proc.stderr and "t2m" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_variable_for_group_is_usage_error(store, tmp_path):
    proc = run("read", store, "-o", tmp_path / "x.npy")
    assert proc.returncode == 2
    assert "t2m" in proc.stderr and proc.stderr.startswith("lazycube: ")


@pytest.mark.parametrize("isel,code,needle", [
    ("time=9", 1, "time"),
    ("depth=0", 1, "depth"),
    ("time=a:b", 2, "time=a:b"),
    ("time", 2, "time"),
    ("time=::0", 2, "zero"),
])
def test_bad_isel_errors(store, tmp_path, isel, code, needle):
    proc = run("read", store, "t2m", "--isel", isel, "-o", tmp_path / "x.npy")
    assert proc.returncode == code, proc.stderr
    assert proc.stderr.startswith("lazycube: ") and needle in proc.stderr


def test_missing_store_is_data_error(tmp_path):
    proc = run("info", tmp_path / "does-not-exist.zarr")
    assert proc.returncode == 1
    assert proc.stderr.startswith("lazycube: ")
