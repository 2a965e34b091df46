"""Label selection (`Dataset.sel`) on coordinates of every numeric width gives what xarray's
`sel` gives on the same store (issue 33: float16 labels read as 0.0, so a float16 coordinate
selected nothing or the wrong positions)."""

import numpy as np
import pytest

from conftest import import_lazycube

xr = pytest.importorskip("xarray")
lazycube = import_lazycube()

DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@pytest.fixture(params=DTYPES)
def store(request, tmp_path):
    dtype = np.dtype(request.param)
    x = np.array([1, 3, 5, 7, 9, 11], dtype=dtype)
    if dtype.kind == "f":
        x = x + dtype.type(0.5)
    ds = xr.Dataset({"v": (("x",), np.arange(6, dtype="float32") * 10)}, coords={"x": x})
    path = str(tmp_path / ("%s.zarr" % request.param))
    ds.to_zarr(path)
    return path, x


def test_sel_point_slice_and_nearest_match_xarray(store):
    path, x = store
    ours, theirs = lazycube.open_dataset(path), xr.open_zarr(path)
    assert ours["x"].values.dtype == theirs["x"].values.dtype
    point = x[2].item()
    np.testing.assert_array_equal(ours.sel(x=point)["v"].values, theirs.sel(x=point)["v"].values)
    lo, hi = x[1].item(), x[4].item()
    np.testing.assert_array_equal(ours.sel(x=slice(lo, hi))["v"].values, theirs.sel(x=slice(lo, hi))["v"].values)
    near = float(x[3]) + 0.7
    np.testing.assert_array_equal(ours.sel(x=near, method="nearest")["v"].values,
                                  theirs.sel(x=near, method="nearest")["v"].values)
